"""The endpoints (SPEC §10). Each is declared in :data:`eva_api.schemas.ENDPOINTS` (its path,
method, parameters and body); here is what it does. Who may do what is decided by
:class:`eva_api.guard.Caller` (the owner's token), what each is shown by :mod:`eva_api.views`."""

from __future__ import annotations

import json
import time
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse

from core import __version__
from core.chat.transcript import Transcript
from core.errors import MemoryOpError, NotFound
from core.memory.facade import Memory
from eva_api import schemas as sc
from eva_api.errors import ApiError, bad_request
from eva_api.events import sse
from eva_api.guard import Caller, ServeSettings
from eva_api.hub import ChatHub
from eva_api.protocol import ApiServices
from eva_api.views import context_json, message_json, public_run_json, record_json, run_json
from eva_runtime.services import SleeperLike


class Api:
    def __init__(self, services: ApiServices, settings: ServeSettings, token: str) -> None:
        self.services = services
        self.settings = settings
        self.caller = Caller(token)
        self.hub = ChatHub(services)

    @property
    def memory(self) -> Memory:
        if self.services.memory is None:
            raise ApiError(503, "the memory is not open yet", "unavailable")
        return self.services.memory

    def _sleeper(self) -> SleeperLike:
        if self.services.sleeper is None:
            raise ApiError(503, "sleep is not available", "unavailable")
        return self.services.sleeper

    def model_loading(self) -> bool:
        """Whether the chat model is on its way (``eva serve`` loads it in the background):
        its component is pending or loading and no model is there yet."""
        s = self.services
        return s.chat_model is None and s.model.state in ("pending", "loading")

    # ------------------------------------------------------------------ body
    async def body(self, request: Request, declared: sc.Body) -> dict[str, Any]:
        """The JSON object sent, however it was sent (with a Content-Length or chunked),
        checked against its declaration (a 400 that names the field); with ``optional`` no
        body at all is ``{}`` (the defaults). Bad JSON — nested past what the parser can
        follow too — is a 400 ``bad_json``, never a crash."""
        raw = await request.body()
        if declared.optional and not raw.strip():
            return declared.check({})
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise ApiError(
                415, "send JSON (Content-Type: application/json)", "unsupported_media_type"
            )
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "the body is not valid JSON", "bad_json") from None
        except RecursionError:
            raise ApiError(
                400, "the body is not valid JSON: nested too deeply", "bad_json"
            ) from None
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object", "bad_json")
        return declared.check(data)

    # ------------------------------------------------------------------ endpoints
    async def health(self, request: Request) -> JSONResponse:
        s = self.services
        sleeper = s.sleeper
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "memory": s.memory is not None,
                "chat": s.chat_model is not None,
                "chat_loading": self.model_loading(),
                "sleeping": bool(sleeper is not None and sleeper.is_sleeping()),
            }
        )

    async def prompt(self, request: Request) -> JSONResponse:
        """Run on the event loop itself: recall takes about a millisecond, less than the hop
        to a worker thread and back (measured by bench.api), and threads would only take turns
        at the GIL anyway."""
        qp = request.query_params
        q = qp.get("q")
        if q is None or not q.strip():
            raise bad_request("give the message as ?q=…")
        if len(q) > sc.MAX_QUERY:
            raise bad_request(f"q is longer than {sc.MAX_QUERY} characters")
        public = sc.PUBLIC.flag(qp.get("public", "false"))
        audience = "public" if public else qp.get("audience", "owner")
        ctx = self.caller.context(request, audience)
        section = self.memory.prompt_section(q, ctx, reinforce=False)
        return JSONResponse(
            {
                "text": section.text,
                "core_ids": list(section.core_ids),
                "recalled_ids": list(section.recalled_ids),
                "withheld_footnote": section.withheld_footnote,
                "context": context_json(ctx),
            }
        )

    def reminders(self, request: Request) -> JSONResponse:
        """SPEC §8.11: what is coming up. With the owner's token (audience "owner", the
        default) private items and notable nights too; without it, or for another audience,
        only what that audience may see, built from an allowlist of fields."""
        from core.chat.upcoming import upcoming

        qp = request.query_params
        days = sc.DAYS.number(qp.get("days", str(self.services.config.reminders.days)))
        ctx = self.caller.context(request, qp.get("audience", "owner"))
        items = upcoming(self.memory, ctx, days=days)
        fields = ("id", "content", "due", "every", "days", "when", "private", "kind")
        return JSONResponse(
            {
                "items": [
                    {k: i.to_json()[k] for k in fields}
                    for i in items
                    if ctx.sees_private or not i.private
                ],
                "days": days,
                "context": context_json(ctx),
            }
        )

    def memories(self, request: Request) -> JSONResponse:
        self.caller.require_owner(request)
        qp = request.query_params
        limit = sc.LIMIT.number(qp.get("limit", "100"))
        offset = sc.OFFSET.number(qp.get("offset", "0"))
        try:
            recs = self.memory.list(
                kind=qp.get("kind"),
                contains=qp.get("contains"),
                order=qp.get("order", "updated"),
                limit=limit,
                offset=offset,
            )
        except MemoryOpError as e:
            raise bad_request(str(e)) from None
        return JSONResponse({"memories": [record_json(r) for r in recs]})

    def search(self, request: Request) -> JSONResponse:
        self.caller.require_owner(request)
        q = request.query_params.get("q", "")
        try:
            hits = self.memory.search(q, reinforce=False)
        except MemoryOpError as e:
            raise bad_request(str(e)) from None
        return JSONResponse(
            {
                "hits": [
                    {"score": h.score, **record_json(h.record)}
                    for h in hits
                    if h.record is not None
                ]
            }
        )

    def restore(self, request: Request) -> JSONResponse:
        self.caller.require_owner(request)
        raw = request.path_params["id"]
        try:
            rid = int(raw)
        except ValueError:
            raise bad_request("the id is an integer") from None
        if not 0 < rid <= sc.MAX_ID:  # no memory has it (SQLite ids are positive 64-bit)
            raise ApiError(404, f"memory #{rid} is not in the archive", "not_found")
        try:
            r = self.memory.restore(rid)
        except NotFound:
            raise ApiError(404, f"memory #{rid} is not in the archive", "not_found") from None
        except MemoryOpError as e:
            raise ApiError(409, str(e), "conflict") from None
        return JSONResponse({"restored": record_json(r)})

    def runs(self, request: Request) -> JSONResponse:
        owner = self.caller.is_owner(request)
        sleeper = self._sleeper()
        limit = max(1, min(100, sc.RUNS_LIMIT.number(request.query_params.get("limit", "30"))))
        runs = sleeper.runs(limit)
        return JSONResponse(
            {
                "runs": [run_json(r) if owner else public_run_json(r) for r in runs],
                "sleeping": sleeper.is_sleeping(),
            }
        )

    async def sleep(self, request: Request) -> JSONResponse:
        self.caller.require_owner(request)
        data = await self.body(request, sc.SLEEP_BODY)  # chunked or not; none: defaults
        sleeper = self._sleeper()
        holder = getattr(sleeper, "sleeping_elsewhere", lambda: None)()
        if sleeper.is_sleeping():
            raise ApiError(
                409,
                "Eva is already asleep" + (f" ({holder.describe(time.time())})" if holder else ""),
                "sleeping",
            )
        self.hub.sleep_in_background(sleeper, data["dry_run"], "api")
        return JSONResponse({"status": "started"}, 202)

    def wake(self, request: Request) -> JSONResponse:
        self.caller.require_owner(request)
        sleeper = self._sleeper()
        holder = getattr(sleeper, "sleeping_elsewhere", lambda: None)()
        asleep = sleeper.is_sleeping()
        sleeper.wake()  # another process is asked to wake at its next heartbeat
        return JSONResponse(
            {"woken": asleep, "elsewhere": holder.describe(time.time()) if holder else None}
        )

    # ------------------------------------------------------------------ messages (§8.12)
    def _chat_message(self, request: Request) -> tuple[Transcript, int, int]:
        """The transcript and the chat and message ids of ``/v1/chats/{chat}/messages/{id}``:
        the message must be a live one of that live chat (404 otherwise, 409 for a chat in
        the archive)."""
        from core.chat.chats import ChatNotFound, Chats

        chat_id = sc.CHAT_ID.number(request.path_params["chat"])
        message_id = sc.MESSAGE_ID.number(request.path_params["id"])
        memory = self.memory
        try:
            chat = memory.attach(Chats).get(chat_id)
        except ChatNotFound:
            raise ApiError(404, f"there is no chat #{chat_id}", "not_found") from None
        if chat.archived:
            raise ApiError(409, f"chat #{chat_id} is in the archive: restore it first", "conflict")
        transcript = memory.attach(Transcript)
        if transcript.message(message_id, chat_id) is None:
            raise ApiError(404, f"chat #{chat_id} has no message #{message_id}", "not_found")
        return transcript, chat_id, message_id

    async def edit_message(self, request: Request) -> JSONResponse:
        """The owner edits a message of a chat, hers or Eva's (issue 28 item 5); the summaries
        covering it are invalidated (:meth:`core.chat.transcript.Transcript.edit`)."""
        self.caller.require_owner(request)
        transcript, chat_id, message_id = self._chat_message(request)
        data = await self.body(request, sc.EDIT_BODY)
        try:
            transcript.edit(message_id, data["content"], self.services.clock.now())
        except ValueError as e:
            raise bad_request(str(e)) from None
        edited = transcript.message(message_id, chat_id)
        if edited is None:  # deleted by another process between the edit and the read
            raise ApiError(404, f"chat #{chat_id} has no message #{message_id}", "not_found")
        return JSONResponse({"message": message_json(edited)})

    def delete_message(self, request: Request) -> JSONResponse:
        """The owner deletes a message of a chat (to the archive, as the TUI does; issue 28
        item 5); the summaries covering it are invalidated."""
        self.caller.require_owner(request)
        transcript, chat_id, message_id = self._chat_message(request)
        transcript.delete(message_id, self.services.clock.now())
        return JSONResponse({"deleted": message_id, "chat": chat_id})

    # ------------------------------------------------------------------ chat
    async def chat(self, request: Request) -> Any:
        data = await self.body(request, sc.CHAT_BODY)
        ctx = self.caller.context(request, data["audience"], data["trusted"])
        conv = self.hub.conversation(ctx, data["channel"])
        if conv is None:
            if self.model_loading():
                raise ApiError(
                    503,
                    "the chat model is still loading; try again soon",
                    "loading",
                    {"retry-after": "5"},
                )
            raise ApiError(503, "chat is off: no chat model is loaded", "unavailable")
        if self.hub.waiting >= self.settings.max_waiting_chats:
            raise ApiError(
                503, "too many chat turns are waiting; try again soon", "busy", {"retry-after": "5"}
            )
        return EventSourceResponse(sse(self.hub.turn(conv, data["message"], ctx)), ping=15)

    # ------------------------------------------------------------------ openapi
    def openapi(self, request: Request) -> JSONResponse:
        return JSONResponse(sc.openapi_document())
