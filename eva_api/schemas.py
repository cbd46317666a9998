"""Every route and every request body, declared once.

A :class:`Body` checks what a caller sent (``Body.check``: a 400 that names the field, in the
words the API has always used) and says the same in JSON Schema (``Body.schema``); a
:class:`Param` reads a query or path parameter and documents it; :data:`ENDPOINTS` lists each
route with its handler, its parameters and its body. The app serves exactly these routes
(:func:`eva_api.app.build_app`) and ``/openapi.json`` is made from them
(:func:`openapi_document`): the document cannot drift from what is checked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from core import __version__
from eva_api.errors import bad_request
from eva_api.guard import AUDIENCE_ERROR, AUDIENCES

MAX_ID = 2**63 - 1  # SQLite's largest integer
MAX_LIST = 10_000  # memories one list call returns at most
MAX_QUERY = 4000  # characters of ?q= at most
MAX_MESSAGE = 8000  # characters of a chat message at most

_JSON = {str: "string", bool: "boolean", int: "integer"}


# ---------------------------------------------------------------------------------- bodies
@dataclass(frozen=True)
class Field:
    """One member of a JSON body: its check and its JSON Schema are made from this."""

    name: str
    type: type  # str or bool
    wrong: str  # the 400's detail for a value of another type (or blank, or off-pattern)
    required: bool = False
    default: Any = None
    nullable: bool = False  # null is taken for "not given"
    non_blank: bool = False
    max_length: int | None = None
    too_long: str = ""  # the 400's detail for a longer string
    enum: tuple[str, ...] = ()
    not_one_of: str = ""  # the 400's detail for a string not in ``enum``
    pattern: str | None = None  # the whole string must match
    description: str = ""

    def check(self, data: dict[str, Any]) -> Any:
        """The value sent (the default when none was), or a 400 that says what is wrong."""
        value = data.get(self.name)
        if self.name not in data or (value is None and self.nullable):
            if self.required:
                raise bad_request(self.wrong)
            return self.default
        if type(value) is not self.type:  # bool is an int, and 1 is not true here
            raise bad_request(self.wrong)
        if isinstance(value, str):
            if self.non_blank and not value.strip():
                raise bad_request(self.wrong)
            if self.pattern is not None and not re.fullmatch(self.pattern, value):
                raise bad_request(self.wrong)
            if self.max_length is not None and len(value) > self.max_length:
                raise bad_request(self.too_long)
            if self.enum and value not in self.enum:
                raise bad_request(self.not_one_of)
        return value

    def schema(self) -> dict[str, Any]:
        kind = _JSON[self.type]
        out: dict[str, Any] = {"type": [kind, "null"] if self.nullable else kind}
        if self.non_blank:
            out["minLength"] = 1
            out["pattern"] = r"\S"  # not only blanks
        if self.pattern is not None:
            out["pattern"] = f"^(?:{self.pattern})$"
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.enum:
            out["enum"] = list(self.enum)
        if self.default is not None:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class Body:
    """A request body: a JSON object of these fields. ``closed``: any other field is refused
    (``unknown`` says so, with ``{name}``); ``optional``: no body at all is ``{}``."""

    fields: tuple[Field, ...]
    closed: bool = False
    unknown: str = "unknown field {name}"
    optional: bool = False

    def check(self, data: dict[str, Any]) -> dict[str, Any]:
        """The fields' values (defaults filled in), checked in the order declared; the first
        problem is a 400 ``bad_request``."""
        if self.closed:
            extra = sorted(set(data) - {f.name for f in self.fields})
            if extra:
                raise bad_request(self.unknown.format(name=repr(extra[0][:40])))
        return {f.name: f.check(data) for f in self.fields}

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "object",
            "properties": {f.name: f.schema() for f in self.fields},
        }
        required = [f.name for f in self.fields if f.required]
        if required:
            out["required"] = required
        if self.closed:
            out["additionalProperties"] = False
        return out


SLEEP_BODY = Body(
    (
        Field(
            "dry_run",
            bool,
            "dry_run is true or false",
            nullable=True,
            description="plan and journal, apply nothing (default: [sleep] dry_run)",
        ),
    ),
    optional=True,
)

TYPES = "audience is a string and trusted a boolean"
CHAT_BODY = Body(
    (
        Field(
            "message",
            str,
            "give a non-empty 'message'",
            required=True,
            non_blank=True,
            max_length=MAX_MESSAGE,
            too_long=f"the message is longer than {MAX_MESSAGE} characters",
        ),
        Field(
            "audience",
            str,
            TYPES,
            default="owner",
            enum=AUDIENCES,
            not_one_of=AUDIENCE_ERROR,
            description="who will read the answer: private memory only for 'owner' with the "
            "owner's token",
        ),
        Field(
            "trusted",
            bool,
            TYPES,
            default=True,
            description="false: the owner speaks from a surface others may see",
        ),
        Field(
            "channel",
            str,
            "channel is 1-64 letters, digits, '-' or '_'",
            default="api",
            pattern=r"[A-Za-z0-9_-]{1,64}",
            description="the caller's own conversation (windows never mix channels)",
        ),
    )
)

EDIT_BODY = Body(
    (
        Field(
            "content",
            str,
            "give the new text as a non-empty 'content'",
            required=True,
            non_blank=True,
        ),
    ),
    closed=True,
    unknown='unknown field {name} (send {{"content": …}})',
)


# ---------------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class Param:
    """A query or path parameter: read (:meth:`number`, :meth:`flag`) and documented here."""

    name: str
    type: type = str
    where: str = "query"  # or "path"
    required: bool = False
    lo: int | None = None
    hi: int | None = None
    label: str = ""  # how a 400 names it (default: its name)
    enum: tuple[str, ...] = ()
    max_length: int | None = None

    def number(self, value: str) -> int:
        """A whole number within [lo, hi]: anything else is a 400 that says so (never a 500
        from an int too big for SQLite)."""
        return int_param(value, self.label or self.name, self.lo, self.hi)

    def flag(self, value: str) -> bool:
        v = value.strip().lower()
        if v in ("1", "true", "yes"):
            return True
        if v in ("0", "false", "no", ""):
            return False
        raise bad_request(f"{self.label or self.name} is true or false")

    def schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {"type": _JSON[self.type]}
        if self.lo is not None:
            s["minimum"] = self.lo
        if self.hi is not None:
            s["maximum"] = self.hi
        if self.enum:
            s["enum"] = list(self.enum)
        if self.max_length is not None:
            s["maxLength"] = self.max_length
        return {
            "name": self.name,
            "in": self.where,
            "required": self.required or self.where == "path",
            "schema": s,
        }


def int_param(value: str, name: str, lo: int | None = None, hi: int | None = None) -> int:
    v = value.strip()
    if not re.fullmatch(r"-?[0-9]{1,30}", v):
        raise bad_request(f"{name} is a whole number (digits only)")
    n = int(v)
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise bad_request(f"{name} must be between {lo} and {hi}")
    return n


Q = Param("q", required=True, max_length=MAX_QUERY)
PUBLIC = Param("public", bool)
AUDIENCE = Param("audience", enum=AUDIENCES)
KIND, CONTAINS, ORDER = Param("kind"), Param("contains"), Param("order")
LIMIT = Param("limit", int, lo=1, hi=MAX_LIST)
OFFSET = Param("offset", int, lo=0, hi=MAX_ID)
SEARCH_Q = Param("q", required=True)
DAYS = Param("days", int, lo=0, hi=366)
RUNS_LIMIT = Param("limit", int)  # clamped to 1..100
RECORD_ID = Param("id", int, "path", lo=1, hi=MAX_ID)
CHAT_ID = Param("chat", int, "path", lo=1, hi=MAX_ID, label="the chat id")
MESSAGE_ID = Param("id", int, "path", lo=1, hi=MAX_ID, label="the message id")


# ---------------------------------------------------------------------------------- routes
@dataclass(frozen=True)
class Endpoint:
    """One route: what answers it (a method of :class:`eva_api.routes.Api`) and what it takes."""

    method: str
    path: str
    handler: str
    summary: str
    owner: bool = False  # needs the owner's token
    params: tuple[Param, ...] = ()
    body: Body | None = None
    ok: int = 200
    sse: bool = False  # answers with Server-Sent Events


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/v1/health", "health", "Is the server up; is Eva asleep"),
    Endpoint(
        "GET",
        "/v1/memories/prompt",
        "prompt",
        "The memory section a turn would carry (reinforces nothing)",
        params=(Q, PUBLIC, AUDIENCE),
    ),
    Endpoint(
        "GET",
        "/v1/memories/search",
        "search",
        "Search memories (owner; reinforces nothing)",
        owner=True,
        params=(SEARCH_Q,),
    ),
    Endpoint(
        "GET",
        "/v1/memories",
        "memories",
        "List memories (owner)",
        owner=True,
        params=(KIND, CONTAINS, ORDER, LIMIT, OFFSET),
    ),
    Endpoint(
        "POST",
        "/v1/memories/archive/{id}/restore",
        "restore",
        "Restore an archived memory (owner)",
        owner=True,
        params=(RECORD_ID,),
    ),
    Endpoint(
        "GET",
        "/v1/reminders",
        "reminders",
        "What is coming up: promises, dates, birthdays, notable nights (private items "
        "and nights only with the token)",
        params=(DAYS, AUDIENCE),
    ),
    Endpoint(
        "GET",
        "/v1/sleep/runs",
        "runs",
        "The sleep journal (redacted without the token)",
        params=(RUNS_LIMIT,),
    ),
    Endpoint(
        "POST",
        "/v1/sleep",
        "sleep",
        "Sleep now, in the background (owner)",
        owner=True,
        body=SLEEP_BODY,
        ok=202,
    ),
    Endpoint("POST", "/v1/sleep/wake", "wake", "Wake Eva (owner)", owner=True),
    Endpoint(
        "POST",
        "/v1/chat",
        "chat",
        "One chat turn as Server-Sent Events: sleeping, memory, token, remembering, "
        "memory_note, notice, error, done",
        body=CHAT_BODY,
        sse=True,
    ),
    Endpoint(
        "PATCH",
        "/v1/chats/{chat}/messages/{id}",
        "edit_message",
        "Edit a message of a chat (owner); the summaries covering it are invalidated",
        owner=True,
        params=(CHAT_ID, MESSAGE_ID),
        body=EDIT_BODY,
    ),
    Endpoint(
        "DELETE",
        "/v1/chats/{chat}/messages/{id}",
        "delete_message",
        "Delete a message of a chat to the archive (owner); the summaries covering it "
        "are invalidated",
        owner=True,
        params=(CHAT_ID, MESSAGE_ID),
    ),
    Endpoint("GET", "/openapi.json", "openapi", "This document"),
)

_ERROR = {"$ref": "#/components/schemas/Error"}


def _operation(ep: Endpoint) -> dict[str, Any]:
    media = "text/event-stream" if ep.sse else "application/json"
    op: dict[str, Any] = {
        "summary": ep.summary,
        "responses": {
            str(ep.ok): {"description": "OK", "content": {media: {"schema": {}}}},
            "4XX": {"description": "error", "content": {"application/json": {"schema": _ERROR}}},
        },
    }
    if ep.owner:
        op["security"] = [{"owner": []}]
    if ep.params:
        op["parameters"] = [p.schema() for p in ep.params]
    if ep.body is not None:
        op["requestBody"] = {
            "required": not ep.body.optional,
            "content": {"application/json": {"schema": ep.body.schema()}},
        }
    return op


@cache
def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of :data:`ENDPOINTS`."""
    paths: dict[str, dict[str, Any]] = {}
    for ep in ENDPOINTS:
        paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Eva",
            "version": __version__,
            "description": "Eva's memory and chat for other surfaces. Requests are "
            "untrusted unless they carry the owner's token (serve.token "
            "in the data dir) as 'Authorization: Bearer …'.",
        },
        "components": {
            "securitySchemes": {"owner": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["detail", "code", "request_id"],
                    "properties": {
                        "detail": {"type": "string"},
                        "code": {"type": "string"},
                        "request_id": {"type": "string"},
                    },
                }
            },
        },
        "paths": paths,
    }
