"""Messages written straight into the transcript for the chat tests: a turn the owner and Eva
had in the TUI, without a model or a Conversation turn to produce it."""

from __future__ import annotations

from core.chat.transcript import Transcript


def tui_message(
    tr: Transcript,
    turn_id: str,
    role: str,
    text: str,
    *,
    chat_id: int | None,
    at: float,
    tokens: int = 5,
    private_ok: bool = True,
    meta: dict | None = None,
) -> int:
    """One delivered message (status "ok") of the default persona in the TUI; its id. The
    persona, the channel and the status are what every chat test's messages share, so only
    what a test is about is named at its call."""
    return tr.add(
        "default",
        "tui",
        turn_id,
        role,
        text,
        private_ok=private_ok,
        status="ok",
        tokens=tokens,
        at=at,
        meta={} if meta is None else meta,
        chat_id=chat_id,
    )
