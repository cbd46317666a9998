"""A chat turn's events as Server-Sent Events: ``sleeping``, ``memory``, ``token``,
``remembering``, ``memory_note``, ``notice``, ``error``, ``done``. A failure's text never reaches
the caller (it may quote memory): the ``error`` event says the server log has the details."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from core.chat import events as turn_events


def _j(d: dict) -> str:
    return json.dumps(d, ensure_ascii=False)


def event_json(ev: Any) -> dict | None:
    """One event as ``{"event": name, "data": json}``; None for one the caller does not get."""
    if isinstance(ev, turn_events.Sleeping):
        return {
            "event": "sleeping",
            "data": _j({"message": "Eva is asleep; your message is queued until she wakes."}),
        }
    if isinstance(ev, turn_events.MemoryUsed):
        s = ev.section
        return {
            "event": "memory",
            "data": _j(
                {
                    "recalled_ids": list(s.recalled_ids),
                    "core_ids": list(s.core_ids),
                    "withheld_footnote": s.withheld_footnote,
                }
            ),
        }
    if isinstance(ev, turn_events.Token):
        return {"event": "token", "data": _j({"text": ev.text})}
    if isinstance(ev, turn_events.Remembering):
        return {"event": "remembering", "data": _j({})}
    if isinstance(ev, turn_events.ToolFinished):
        r = ev.result
        return {"event": "memory_note", "data": _j({"tool": ev.name, "ok": r.ok, "text": r.text})}
    if isinstance(ev, turn_events.Notice):
        return {"event": "notice", "data": _j({"text": ev.text})}
    if isinstance(ev, turn_events.TurnError):
        return {"event": "error", "data": _j({"message": ev.message, "turn_id": ev.turn_id})}
    if isinstance(ev, turn_events.TurnDone):
        return {
            "event": "done",
            "data": _j(
                {
                    "turn_id": ev.turn_id,
                    "stopped": ev.stopped,
                    "prompt_tokens": ev.prompt_tokens,
                    "evaluated_tokens": ev.evaluated_tokens,
                    "completion_tokens": ev.completion_tokens,
                    "first_token_seconds": ev.first_token_seconds,
                    "seconds": ev.seconds,
                    "model_calls": ev.model_calls,
                }
            ),
        }
    if isinstance(ev, BaseException):
        return {
            "event": "error",
            "data": _j(
                {"message": "Eva could not answer this message; the server log has the details."}
            ),
        }
    return None  # ToolStarted: its ToolFinished follows


async def sse(events: AsyncGenerator[Any, None]) -> AsyncIterator[dict]:
    """The events a turn yields, as SSE (``sleeping`` once however often it is said). Closing
    this (the client went away) closes ``events`` at once, which stops the turn."""
    sent_sleeping = False
    try:
        async for ev in events:
            if isinstance(ev, turn_events.Sleeping):
                if sent_sleeping:
                    continue
                sent_sleeping = True
            out = event_json(ev)
            if out is not None:
                yield out
    finally:
        await events.aclose()
