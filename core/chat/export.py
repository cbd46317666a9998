"""Chats out (SPEC §8.12, §11; issue 28 item 7): nothing the owner said is locked in.

JSON Lines for round trips (a header line, then per chat a ``"type": "chat"`` line followed by
its ``"type": "message"`` lines; :mod:`core.chat.imports` reads them back) or Markdown for
reading. Under the memory export's rule, private content leaves only when asked for: a message
written where private memory was visible (``private_ok``, SPEC §8.9 — Eva's answer may quote a
private memory, and the owner's words were said in private) is left out unless ``private``, and
the output says how many were left out. A chat with nothing left to export is left out whole
(its title too).

This module is pure (no store access of its own): it reads through :class:`core.chat.chats.Chats`
and :class:`core.chat.transcript.Transcript`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.chat.chats import Chats
from core.chat.transcript import Transcript
from core.errors import MemoryOpError
from core.memory.portability import readable_time

FORMAT_VERSION = 1
HEADER_KEY = "eva_chats"
FORMATS = ("jsonl", "md")


@dataclass(frozen=True)
class ChatExport:
    lines: list[str]
    chats: int
    messages: int
    private_left_out: int  # messages written where private memory was visible, not exported


def export_chats(
    chats: Chats,
    transcript: Transcript,
    fmt: str = "jsonl",
    *,
    chat_id: int | None = None,
    private: bool = False,
    now: float,
) -> ChatExport:
    """The owner's live chats (or one, ``chat_id``) as JSON Lines or Markdown."""
    if fmt not in FORMATS:
        raise MemoryOpError(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    if chat_id is not None:
        chat = chats.get(chat_id)
        if chat.archived:
            raise MemoryOpError(f"chat #{chat_id} is in the archive: restore it first")
        picked = [chat]
    else:
        picked = sorted(chats.list(), key=lambda c: c.id)
    rows, left_out = transcript.exported([c.id for c in picked], private=private)
    by_chat: dict[int, list[dict]] = {}
    for r in rows:
        by_chat.setdefault(r["chat_id"], []).append(r)
    kept = [c for c in picked if by_chat.get(c.id)]
    n_msgs = sum(len(by_chat[c.id]) for c in kept)
    if fmt == "jsonl":
        header = {
            HEADER_KEY: FORMAT_VERSION,
            "exported_at": now,
            "chats": len(kept),
            "messages": n_msgs,
            "private_included": private,
            "private_left_out": left_out,
        }
        lines = [json.dumps(header, ensure_ascii=False) + "\n"]
        for c in kept:
            lines.append(
                json.dumps(
                    {
                        "type": "chat",
                        "id": c.id,
                        "title": c.label,
                        "persona": c.persona,
                        "created_at": c.created_at,
                        "updated_at": c.updated_at,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
            lines += [
                json.dumps(
                    {
                        "type": "message",
                        "chat": c.id,
                        "id": m["id"],
                        "role": m["role"],
                        "content": m["content"],
                        "created_at": m["created_at"],
                        "private": bool(m["private_ok"]),
                        "status": m["status"],
                    },
                    ensure_ascii=False,
                )
                + "\n"
                for m in by_chat[c.id]
            ]
    else:
        lines = [
            f"# Eva's chats — exported {readable_time(now)}\n",
            "\n",
            f"{len(kept)} chat{'s' if len(kept) != 1 else ''}, {n_msgs} "
            f"message{'s' if n_msgs != 1 else ''}.\n",
        ]
        if left_out:
            lines.append(
                f"{left_out} message{'s' if left_out != 1 else ''} written where "
                "private memory was visible "
                f"{'was' if left_out == 1 else 'were'} left out (export with "
                "--private to include them).\n"
            )
        lines.append("\n")
        for c in kept:
            lines.append(f"## {c.label} (#{c.id})\n\n")
            lines.append(f"Persona {c.persona}; started {readable_time(c.created_at)}.\n\n")
            for m in by_chat[c.id]:
                who = "You" if m["role"] == "user" else "Eva"
                stopped = " (stopped)" if m["status"] == "stopped" else ""
                lines.append(f"**{who}** · {readable_time(m['created_at'])}{stopped}\n\n")
                lines.append(m["content"].rstrip() + "\n\n")
    return ChatExport(lines, len(kept), n_msgs, left_out)
