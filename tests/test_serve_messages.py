"""Issue 28 item 5 ("the HTTP API gets the same edit and delete routes, owner-token only"),
SPEC §8.12 and §10: ``PATCH`` and ``DELETE /v1/chats/{chat}/messages/{id}`` on a real uvicorn.
Only the owner's token reaches them; bad input is a 4xx ``{detail, code, request_id}``; an edit
or a delete invalidates the summaries covering the message."""

from __future__ import annotations

import pytest

from core.chat.chats import Chats
from core.chat.summaries import SummaryStore
from core.chat.transcript import Transcript
from tests.chat_kit import tui_message
from tests.serve_kit import running
from tests.test_serve import assert_error, make_services

T0 = 1_780_000_000.0


@pytest.fixture
def chat(tmp_path):
    s = make_services(tmp_path)
    mem = s.memory
    chats, tr = mem.attach(Chats), mem.attach(Transcript)
    c = chats.create("default", "tui", T0, "Trip").id
    ids = [
        tui_message(tr, "turn-1", role, text, chat_id=c, at=T0 + k)
        for k, (role, text) in enumerate(
            [("user", "We fly to Tbilisi on 12 May"), ("assistant", "Noted: Tbilisi, 12 May.")]
        )
    ]
    summary = mem.attach(SummaryStore).add(
        c,
        1,
        True,
        "The owner flies to Tbilisi on 12 May.",
        ["12 May"],
        ids,
        status="ok",
        detail_level="balanced",
        tokens=9,
        now=T0,
    )
    with running(s, tmp_path) as r:
        yield r, c, ids, summary.id, tr
    s.close()


def test_only_the_owner_edits_or_deletes_a_message(chat):
    """SPEC §10: no token or a wrong one is refused with 401 exactly as the other owner-only
    routes are, and nothing changes."""
    server, c, (user, _answer), _sid, tr = chat
    path = f"/v1/chats/{c}/messages/{user}"
    with server.client() as anon:
        assert_error(anon.patch(path, json={"content": "hacked"}), 401, "unauthorized")
        assert_error(anon.delete(path), 401, "unauthorized")
        wrong = {"Authorization": "Bearer " + "x" * 43}
        assert_error(
            anon.patch(path, json={"content": "hacked"}, headers=wrong), 401, "unauthorized"
        )
        assert_error(anon.delete(path, headers=wrong), 401, "unauthorized")
        # a bad id does not tell an anonymous caller anything either
        assert_error(anon.delete(f"/v1/chats/{c}/messages/999"), 401, "unauthorized")
    assert tr.message(user).content == "We fly to Tbilisi on 12 May"


def test_the_owner_edits_a_message_and_its_summaries_are_invalidated(chat):
    """Issue 28 item 5: the owner's edit changes the message, search finds the new words, and
    the summary covering it is no longer used."""
    server, c, (_user, answer), sid, tr = chat
    with server.client(owner=True) as owner:
        r = owner.patch(
            f"/v1/chats/{c}/messages/{answer}", json={"content": "  Noted: Yerevan, 12 May.  "}
        )
        assert r.status_code == 200, r.text
        assert r.json()["message"] == {
            "id": answer,
            "chat": c,
            "role": "assistant",
            "content": "Noted: Yerevan, 12 May.",
            "status": "ok",
            "created_at": T0 + 1,
        }
    assert tr.message(answer).content == "Noted: Yerevan, 12 May."
    store = server.services.memory.attach(SummaryStore)
    assert store.get(sid).status == "invalid"
    assert store.for_prompt(c, sees_private=True) == []
    assert [h.message_id for h in tr.search("yerevan")] == [answer]


def test_the_owner_deletes_a_message_to_the_archive(chat):
    """Issue 28 item 5: a deleted message leaves the chat (archived, as the TUI does), its
    summary is invalidated, and a second delete is a 404."""
    server, c, (user, answer), sid, tr = chat
    with server.client(owner=True) as owner:
        r = owner.delete(f"/v1/chats/{c}/messages/{user}")
        assert r.status_code == 200 and r.json() == {"deleted": user, "chat": c}
        assert_error(owner.delete(f"/v1/chats/{c}/messages/{user}"), 404, "not_found")
        assert_error(
            owner.patch(f"/v1/chats/{c}/messages/{user}", json={"content": "x"}), 404, "not_found"
        )
    assert [m.id for m in tr.chat_history(c)] == [answer]
    assert server.services.memory.attach(SummaryStore).get(sid).status == "invalid"


def test_bad_input_is_a_clear_4xx_and_changes_nothing(chat):
    """SPEC §10: bad ids, another chat's message, an archived chat, a bad body — each a 4xx
    with {detail, code, request_id}; the message is untouched."""
    server, c, (user, _answer), sid, tr = chat
    chats = server.services.memory.attach(Chats)
    other = chats.create("default", "tui", T0).id
    gone = chats.create("default", "tui", T0).id
    chats.archive(gone, T0)
    path = f"/v1/chats/{c}/messages/{user}"
    with server.client(owner=True) as owner:
        assert_error(
            owner.patch(f"/v1/chats/{c}/messages/abc", json={"content": "x"}), 400, "bad_request"
        )
        assert_error(owner.delete(f"/v1/chats/0/messages/{user}"), 400, "bad_request")
        assert_error(owner.delete(f"/v1/chats/{c}/messages/{10**30}"), 400, "bad_request")
        assert_error(owner.delete(f"/v1/chats/999/messages/{user}"), 404, "not_found")
        assert_error(owner.delete(f"/v1/chats/{other}/messages/{user}"), 404, "not_found")
        assert_error(owner.delete(f"/v1/chats/{gone}/messages/{user}"), 409, "conflict")
        assert_error(owner.patch(path, json={"content": "   "}), 400, "bad_request")
        assert_error(owner.patch(path, json={"content": 5}), 400, "bad_request")
        assert_error(owner.patch(path, json={"text": "new"}), 400, "bad_request")
        assert_error(owner.patch(path, json={"content": "x", "role": "user"}), 400, "bad_request")
        assert_error(
            owner.patch(path, content=b"{nope", headers={"content-type": "application/json"}),
            400,
            "bad_json",
        )
        assert_error(
            owner.patch(
                path,
                content=b"content=x",
                headers={"content-type": "application/x-www-form-urlencoded"},
            ),
            415,
            "unsupported_media_type",
        )
        assert_error(owner.patch(path, json={"content": "x" * 70_000}), 413, "too_large")
        assert_error(owner.put(path, json={"content": "x"}), 405, "method_not_allowed")
    assert tr.message(user).content == "We fly to Tbilisi on 12 May"
    assert server.services.memory.attach(SummaryStore).get(sid).status == "ok"


def test_openapi_lists_the_message_routes_as_owner_only(chat):
    server, *_ = chat
    with server.client() as anon:
        paths = anon.get("/openapi.json").json()["paths"]
    ops = paths["/v1/chats/{chat}/messages/{id}"]
    assert set(ops) == {"patch", "delete"}
    assert all(op["security"] == [{"owner": []}] for op in ops.values())
