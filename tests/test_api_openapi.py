"""Issue 30 item 2 / SPEC §10: the HTTP API is declared once (``eva_api.schemas``). Every route
the app serves is in ``/openapi.json`` with its method, and nothing is documented that is not
served; a request body is checked by the very declaration the document shows, so a body the
schema refuses is a 400 that names the field — and changes nothing in the store."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from starlette.routing import Route

from core.chat.chats import Chats
from core.chat.transcript import Transcript
from core.privacy import OWNER_TRUSTED
from eva_api import schemas
from eva_api.app import build_app
from eva_api.guard import ServeSettings
from tests.chat_kit import tui_message
from tests.serve_kit import running
from tests.test_serve import assert_error, make_services

T0 = 1_780_000_000.0


def served_routes(app) -> set[tuple[str, str]]:
    """(path, method) of every route the Starlette app behind the guard answers (HEAD comes
    with GET and is not an operation of its own)."""
    return {
        (r.path, m.lower())
        for r in app.routes
        if isinstance(r, Route)
        for m in r.methods
        if m != "HEAD"
    }


def test_every_route_served_is_in_the_openapi_document_with_its_method(tmp_path):
    s = make_services(tmp_path)
    guard = build_app(s, ServeSettings(), "t" * 43)
    served = served_routes(guard.app)  # no origins configured: the Starlette app itself
    with running(s, tmp_path) as r, r.client() as c:
        doc = c.get("/openapi.json").json()
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert served == documented
    assert len(served) == len(schemas.ENDPOINTS) == 13
    # each body is documented by the declaration that checks it, owner routes say so
    for ep in schemas.ENDPOINTS:
        op = doc["paths"][ep.path][ep.method.lower()]
        if ep.body is not None:
            assert op["requestBody"]["content"]["application/json"]["schema"] == ep.body.schema()
        else:
            assert "requestBody" not in op
        assert ("security" in op) == ep.owner
    s.close()


def test_the_chat_body_schema_says_what_is_checked():
    """The published schema of POST /v1/chat carries the limits the check applies."""
    body = schemas.CHAT_BODY.schema()
    assert body["required"] == ["message"]
    props = body["properties"]
    assert props["message"]["maxLength"] == schemas.MAX_MESSAGE
    assert props["audience"]["enum"] == ["owner", "group", "public"]
    assert props["trusted"]["type"] == "boolean"
    assert props["channel"]["pattern"] == "^(?:[A-Za-z0-9_-]{1,64})$"
    edit = schemas.EDIT_BODY.schema()
    assert edit["additionalProperties"] is False and edit["required"] == ["content"]


def _fingerprint(db) -> str:
    """Every row of the store, hashed: equal before and after means nothing was written."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


BAD_CHAT = [
    ({}, "message"),
    ({"message": ""}, "message"),
    ({"message": "   "}, "message"),
    ({"message": 5}, "message"),
    ({"message": None}, "message"),
    ({"message": "x" * (schemas.MAX_MESSAGE + 1)}, "message"),
    ({"message": "hi", "audience": "everyone"}, "audience"),
    ({"message": "hi", "audience": 5}, "audience"),
    ({"message": "hi", "trusted": "yes"}, "trusted"),
    ({"message": "hi", "trusted": 1}, "trusted"),
    ({"message": "hi", "channel": "../x"}, "channel"),
    ({"message": "hi", "channel": "x" * 65}, "channel"),
    ({"message": "hi", "channel": None}, "channel"),
]
BAD_SLEEP = [
    ({"dry_run": "yes"}, "dry_run"),
    ({"dry_run": 1}, "dry_run"),
    ({"dry_run": []}, "dry_run"),
]
BAD_EDIT = [
    ({}, "content"),
    ({"content": 5}, "content"),
    ({"content": "  "}, "content"),
    ({"content": None}, "content"),
    ({"text": "new"}, "text"),
    ({"content": "new", "extra": 1}, "extra"),
]


@pytest.fixture
def api(tmp_path):
    s = make_services(tmp_path)
    mem = s.memory
    mem.save("The owner's sister Anna lives in Kazan", OWNER_TRUSTED, private=True)
    chat = mem.attach(Chats).create("default", "tui", T0, "Trip").id
    message = tui_message(
        mem.attach(Transcript), "turn-1", "user", "We fly on 12 May", chat_id=chat, at=T0
    )
    with running(s, tmp_path) as r:
        yield r, f"/v1/chats/{chat}/messages/{message}", tmp_path / "memory.db"
    s.close()


def test_a_body_the_schema_refuses_is_a_400_naming_the_field_and_changes_nothing(api):
    server, message_path, db = api
    llm = server.services.chat_model
    before, calls = _fingerprint(db), len(llm.calls)
    cases = (
        [("POST", "/v1/chat", b, f) for b, f in BAD_CHAT]
        + [("POST", "/v1/sleep", b, f) for b, f in BAD_SLEEP]
        + [("PATCH", message_path, b, f) for b, f in BAD_EDIT]
    )
    with server.client(owner=True) as owner:
        for method, path, body, field in cases:
            detail = assert_error(owner.request(method, path, json=body), 400, "bad_request")[
                "detail"
            ]
            assert field in detail, (path, body, detail)
        assert owner.get("/v1/sleep/runs").json() == {"runs": [], "sleeping": False}
    assert _fingerprint(db) == before  # no message, no memory, no night, no edit
    assert len(llm.calls) == calls  # the model was never asked


def test_the_declarations_accept_what_the_api_always_took():
    """The defaults a body leaves out are filled in from the same declaration."""
    assert schemas.CHAT_BODY.check({"message": "hi"}) == {
        "message": "hi",
        "audience": "owner",
        "trusted": True,
        "channel": "api",
    }
    assert schemas.SLEEP_BODY.check({}) == {"dry_run": None}
    assert schemas.SLEEP_BODY.check({"dry_run": None, "other": 1}) == {"dry_run": None}
    assert schemas.EDIT_BODY.check({"content": " new "}) == {"content": " new "}
