"""Chats in (SPEC §8.12, §11; issue 28 item 7): nothing the owner said is locked in.

Eva's own JSON Lines (:mod:`core.chat.export` writes them), ChatGPT's ``conversations.json``
(the ``mapping`` tree of each conversation, followed from ``current_node`` up its parents: the
branch the owner last saw) and a SillyTavern chat ``.jsonl`` (a metadata line with
``user_name`` / ``character_name``, then one line per message: ``name``, ``is_user``, ``mes``,
``send_date``). The format is detected and named. The whole file is checked before anything is
written: a bad line is reported with its number (a conversation of a JSON file by its position
and title) and the reason, and nothing is written. Then one transaction writes every chat
(:meth:`core.chat.chats.Chats.import_chats`).

Imported messages are private-only (``private_ok``): what the owner said elsewhere is hers and
never enters a turn that cannot see private memory. Eva's own export keeps each message's flag.
What is not a conversation between the owner and the assistant — system prompts, tool calls and
their output, hidden or empty messages, a model's reasoning — is skipped and counted.

This module writes nothing: it reads the file and checks it (:class:`core.chat.chats.Chats` writes).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.chat.chats import MAX_TITLE
from core.chat.export import FORMAT_VERSION, HEADER_KEY
from core.errors import MemoryOpError, clip, clip_text

MAX_PROBLEMS = 20  # bad lines reported at most (the rest are counted)
MAX_CONTENT = 200_000  # characters of one imported message at most
MAX_FILE = 1024 * 1024 * 1024  # bytes of an import file at most (1 GiB)
FUTURE_SLACK = 86_400.0  # a time may lie at most a day past now (clocks disagree)

EVA, CHATGPT, SILLYTAVERN = "eva", "chatgpt", "sillytavern"
FORMAT_NAMES = {
    EVA: "Eva's chat export (JSON Lines)",
    CHATGPT: "ChatGPT export (conversations.json)",
    SILLYTAVERN: "SillyTavern chat (.jsonl)",
}
CHAT_FIELDS = frozenset({"type", "id", "title", "persona", "created_at", "updated_at"})
MESSAGE_FIELDS = frozenset(
    {"type", "chat", "id", "role", "content", "created_at", "private", "status"}
)


def day_span(first: float, last: float) -> str:
    """ "2024-05-01" or "2024-05-01 – 2024-06-05" (UTC days)."""
    a, b = (datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d") for t in (first, last))
    return a if a == b else f"{a} – {b}"


@dataclass
class ImportedMessage:
    role: str  # "user" (the owner) or "assistant"
    content: str
    created_at: float
    private: bool = True
    status: str = "ok"


@dataclass
class ImportedChat:
    title: str
    persona: str
    messages: list[ImportedMessage] = field(default_factory=list)
    where: str = ""  # where in the file it began ("line 2", "conversation 3")

    @property
    def created_at(self) -> float:
        return self.messages[0].created_at if self.messages else 0.0

    @property
    def updated_at(self) -> float:
        return max((m.created_at for m in self.messages), default=0.0)


@dataclass
class ImportPlan:
    """What an import file holds, checked whole, before anything is written."""

    format: str  # EVA, CHATGPT or SILLYTAVERN
    chats: list[ImportedChat]
    skipped: int = 0  # messages that are not the owner's or the assistant's words
    empty_chats: int = 0  # chats with nothing to import (left out)
    times_guessed: int = 0  # messages without a readable time (given their neighbour's)

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES[self.format]

    @property
    def messages(self) -> int:
        return sum(len(c.messages) for c in self.chats)


class ChatImportRefused(MemoryOpError):
    """The file has bad lines (or is no format Eva reads); nothing was written. ``problems``:
    (where, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]], fmt: str | None = None) -> None:
        shown = [(w, clip_text(why)) for w, why in problems[:MAX_PROBLEMS]]
        more = len(problems) - len(shown)
        msg = "; ".join(f"{w}: {why}" if w else why for w, why in shown)
        if more > 0:
            msg += f"; and {more} more bad line{'s' if more > 1 else ''}"
        what = f" ({FORMAT_NAMES[fmt]})" if fmt else ""
        super().__init__(f"nothing was imported{what} — {msg}", code="bad_import")
        self.problems = shown
        self.total = len(problems)
        self.format = fmt


class _Bad(Exception):
    """One problem of one line (collected, never raised to the caller)."""


def _time(value: object, name: str, now: float) -> float:
    """Seconds since the epoch (milliseconds too, as JavaScript writes them) or ISO 8601,
    between 1970 and a day past now."""
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise _Bad(f"{name} must be a time (seconds or ISO 8601), got {clip(value)}") from None
        ts = (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"{name} must be a time (seconds or ISO 8601), got {clip(value)}")
    else:
        try:
            ts = float(value)
        except OverflowError:
            ts = math.inf
        if math.isfinite(ts) and ts > now + FUTURE_SLACK and ts / 1000 <= now + FUTURE_SLACK:
            ts /= 1000  # milliseconds
    if not math.isfinite(ts) or not 0 <= ts <= now + FUTURE_SLACK:
        raise _Bad(
            f"{name} is out of range ({clip(value)}): a time must lie between 1970-01-01 and now"
        )
    return ts


def _content(value: object, name: str = "content") -> str:
    if not isinstance(value, str):
        raise _Bad(f"{name} must be text, got {clip(value)}")
    if len(value) > MAX_CONTENT:
        raise _Bad(f"{name} is {len(value):,} characters; a message is at most {MAX_CONTENT:,}")
    return value.replace("\x00", "")


def _title(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Bad(f"title must be text, got {clip(value)}")
    title = " ".join(value.split())
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1] + "…"


def read_text(path: str | Path) -> str:
    """An import file's text (UTF-8; a byte-order mark is dropped)."""
    p = Path(path).expanduser()
    try:
        if p.stat().st_size > MAX_FILE:
            raise MemoryOpError(f"{p} is larger than {MAX_FILE // 1024**3} GiB")
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise MemoryOpError(f"{p} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except IsADirectoryError:
        raise MemoryOpError(f"{p} is a directory; give the file") from None
    except FileNotFoundError:
        raise MemoryOpError(f"{p}: no such file") from None
    except OSError as e:
        raise MemoryOpError(f"{p} cannot be read: {e.strerror or e}") from None


def _lines(text: str) -> list[str]:
    """Split on "\\n" only (never ``splitlines``: U+2028 and the like stay inside a text)."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def _json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise _Bad(f"not JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise _Bad("not JSON Eva reads (nested too deeply)") from None
    except ValueError as e:
        raise _Bad(f"not JSON Eva reads ({clip_text(str(e).split(';')[0], 120)})") from None


UNKNOWN = (
    "this is not a chat file Eva reads: give Eva's chat export (eva export --chats), "
    "ChatGPT's conversations.json or a SillyTavern chat .jsonl"
)


def detect(text: str) -> str:
    """The format of an import file's text (EVA, CHATGPT or SILLYTAVERN); raises
    :class:`ChatImportRefused` naming the formats Eva reads."""
    stripped = text.lstrip()
    if not stripped:
        raise ChatImportRefused([("", "the file is empty")])
    if stripped[0] == "[":
        return CHATGPT
    first = next(ln for ln in _lines(stripped) if ln.strip())
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        obj = None
    if obj is None and stripped[0] == "{" and '"mapping"' in stripped:
        return CHATGPT  # one conversation, pretty-printed over many lines
    if isinstance(obj, dict):
        if HEADER_KEY in obj or obj.get("type") in ("chat", "message"):
            return EVA
        if "mapping" in obj:
            return CHATGPT
        if "user_name" in obj or "character_name" in obj or "chat_metadata" in obj:
            return SILLYTAVERN
        if "eva_export" in obj:
            raise ChatImportRefused(
                [
                    (
                        "",
                        "this is an export of Eva's memories, not of chats: "
                        "`eva import FILE` (without --chats) reads it",
                    )
                ]
            )
    raise ChatImportRefused([("", UNKNOWN)])


def parse(text: str, now: float) -> ImportPlan:
    """Every chat of an import file, checked whole (raises :class:`ChatImportRefused` with
    every bad line's place and reason; nothing is written either way)."""
    fmt = detect(text)
    return {EVA: _parse_eva, CHATGPT: _parse_chatgpt, SILLYTAVERN: _parse_sillytavern}[fmt](
        text, now
    )


def parse_file(path: str | Path, now: float) -> ImportPlan:
    return parse(read_text(path), now)


def _finish(plan: ImportPlan, problems: list[tuple[str, str]]) -> ImportPlan:
    if problems:
        raise ChatImportRefused(problems, plan.format)
    kept = [c for c in plan.chats if c.messages]
    plan.empty_chats += len(plan.chats) - len(kept)
    plan.chats = kept
    return plan


# -- Eva's own JSON Lines
def _parse_eva(text: str, now: float) -> ImportPlan:
    plan = ImportPlan(EVA, [])
    problems: list[tuple[str, str]] = []
    chats: dict[object, ImportedChat] = {}
    seen_any = False
    for n, raw in enumerate(_lines(text), 1):
        if not raw.strip():
            continue
        first, seen_any = not seen_any, True
        try:
            obj = _json(raw)
            if not isinstance(obj, dict):
                raise _Bad("a line must be a JSON object")
            if HEADER_KEY in obj:
                if not first:
                    raise _Bad("the export header is allowed only on the first line")
                if obj[HEADER_KEY] != FORMAT_VERSION:
                    raise _Bad(
                        f"chat export format {clip(obj[HEADER_KEY])} is not one this "
                        f"Eva reads ({FORMAT_VERSION})"
                    )
                continue
            kind = obj.get("type")
            if kind == "chat":
                unknown = sorted(set(obj) - CHAT_FIELDS)
                if unknown:
                    raise _Bad(f"unknown field {clip(unknown[0])} of a chat line")
                key = obj.get("id")
                if not isinstance(key, int | str) or isinstance(key, bool):
                    raise _Bad("a chat line needs its id (a number)")
                if key in chats:
                    raise _Bad(f"chat {clip(key)} is declared twice")
                persona = obj.get("persona", "default")
                if not isinstance(persona, str) or not persona.strip():
                    raise _Bad("persona must be a persona's id")
                for name in ("created_at", "updated_at"):
                    if name in obj:
                        _time(obj[name], name, now)
                chat = ImportedChat(_title(obj.get("title")), persona.strip(), where=f"line {n}")
                chats[key] = chat
                plan.chats.append(chat)
            elif kind == "message":
                unknown = sorted(set(obj) - MESSAGE_FIELDS)
                if unknown:
                    raise _Bad(f"unknown field {clip(unknown[0])} of a message line")
                target = (
                    chats.get(obj.get("chat")) if isinstance(obj.get("chat"), int | str) else None
                )
                if target is None:
                    raise _Bad(
                        f"message of chat {clip(obj.get('chat'))}, which no earlier "
                        "chat line declares"
                    )
                role = obj.get("role")
                if role not in ("user", "assistant"):
                    raise _Bad(f"role must be user or assistant (got {clip(role)})")
                content = _content(obj.get("content"))
                if not content.strip():
                    raise _Bad("content is empty")
                status = obj.get("status", "ok")
                if status not in ("ok", "stopped", "error"):
                    raise _Bad(f"status must be ok, stopped or error (got {clip(status)})")
                private = obj.get("private", True)
                if not isinstance(private, bool):
                    raise _Bad("private must be true or false")
                if "created_at" not in obj:
                    raise _Bad("created_at is missing")
                target.messages.append(
                    ImportedMessage(
                        role, content, _time(obj["created_at"], "created_at", now), private, status
                    )
                )
            else:
                raise _Bad(
                    'a line is a chat ({"type": "chat", …}) or a message ({"type": "message", …})'
                )
        except _Bad as e:
            problems.append((f"line {n}", str(e)))
    return _finish(plan, problems)


# -- ChatGPT's conversations.json
_CHATGPT_TEXT = ("text", "multimodal_text")


def _chatgpt_text(content: object) -> str | None:
    """The words of a ChatGPT message's content; None when it holds none (images only, a
    model's reasoning, tool output …)."""
    if not isinstance(content, dict):
        raise _Bad("message.content must be an object")
    ctype = content.get("content_type", "text")
    if ctype not in _CHATGPT_TEXT:
        return None
    parts = content.get("parts", [])
    if not isinstance(parts, list):
        raise _Bad("message.content.parts must be a list")
    words = [_content(p, "a part of message.content") for p in parts if isinstance(p, str)]
    text = "\n".join(w for w in words if w.strip())
    return text or None


def _parse_chatgpt(text: str, now: float) -> ImportPlan:
    plan = ImportPlan(CHATGPT, [])
    try:
        data = _json(text)
    except _Bad as e:
        # the line of a JSON error, counted from the start of the file
        m = re.search(r"line (\d+) column (\d+)", _decode_error(text))
        where = f"line {m.group(1)}" if m else ""
        raise ChatImportRefused([(where, str(e))], CHATGPT) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ChatImportRefused(
            [("", "conversations.json must be a list of conversations")], CHATGPT
        )
    problems: list[tuple[str, str]] = []
    for i, conv in enumerate(data, 1):
        where = f"conversation {i}"
        try:
            if not isinstance(conv, dict):
                raise _Bad("a conversation must be a JSON object")
            title = _title(conv.get("title"))
            if title:
                where += f" (“{clip_text(title, 40)}”)"
            mapping = conv.get("mapping")
            if not isinstance(mapping, dict):
                raise _Bad("it has no mapping (the tree of its messages)")
            start = (
                _time(conv["create_time"], "create_time", now)
                if conv.get("create_time") is not None
                else None
            )
            chain = _chatgpt_chain(mapping, conv.get("current_node"))
            chat = ImportedChat(title, "default", where=where)
            last = start
            for node_id in chain:
                msg = mapping[node_id].get("message")
                if msg is None:
                    continue
                if not isinstance(msg, dict):
                    raise _Bad(f"message of node {clip(node_id)} must be an object")
                author = msg.get("author") or {}
                role = author.get("role") if isinstance(author, dict) else None
                if not isinstance(role, str):
                    raise _Bad(f"node {clip(node_id)}: message.author.role is missing")
                meta = msg.get("metadata") or {}
                hidden = isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation")
                words = _chatgpt_text(msg.get("content"))
                when = msg.get("create_time")
                at = _time(when, "create_time", now) if when is not None else None
                if (
                    role not in ("user", "assistant")
                    or hidden
                    or words is None
                    or msg.get("recipient", "all") != "all"
                ):
                    plan.skipped += 1
                    continue
                if at is None:
                    plan.times_guessed += 1
                    at = last if last is not None else (start or now)
                last = at
                chat.messages.append(ImportedMessage(role, words, at))
            if not chat.title and chat.messages:
                chat.title = _title(
                    next((m.content for m in chat.messages if m.role == "user"), "")
                )
            plan.chats.append(chat)
        except _Bad as e:
            problems.append((where, str(e)))
    return _finish(plan, problems)


def _decode_error(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return f"line {e.lineno} column {e.colno}"
    except (ValueError, RecursionError):
        pass
    return ""


def _chatgpt_chain(mapping: dict, current: object) -> list[str]:
    """Node ids from the root to ``current_node`` (the branch the owner last saw); without
    one, to the last leaf of the mapping."""
    if current is None:
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        if not leaves:
            return []
        current = leaves[-1]
    if not isinstance(current, str) or current not in mapping:
        raise _Bad(f"current_node {clip(current)} is not a node of the mapping")
    chain: list[str] = []
    seen: set[str] = set()
    node: object = current
    while node is not None:
        if not isinstance(node, str) or node not in mapping:
            raise _Bad(f"parent {clip(node)} is not a node of the mapping")
        if node in seen:
            raise _Bad(f"the mapping loops at node {clip(node)}")
        seen.add(node)
        entry = mapping[node]
        if not isinstance(entry, dict):
            raise _Bad(f"node {clip(node)} must be an object")
        chain.append(node)
        node = entry.get("parent")
    return chain[::-1]


# -- SillyTavern's chat .jsonl
_ST_AT = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})\s*@\s*(\d{1,2})h\s*(\d{1,2})m"
    r"(?:\s*(\d{1,2})s)?(?:\s*(\d{1,3})ms)?"
)
_ST_FORMATS = (
    "%B %d, %Y %I:%M%p",
    "%B %d, %Y %I:%M %p",
    "%b %d, %Y %I:%M%p",
    "%B %d, %Y %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
)


def _st_time(value: object, now: float) -> float | None:
    """A SillyTavern send_date: milliseconds, ISO 8601, "June 5, 2024 10:30pm" or
    "2024-6-5 @22h 30m 15s 123ms" (each version wrote another); None when unreadable (the
    message then takes its neighbour's time and is counted)."""
    if value is None or value == "":
        return None
    try:
        return _time(value, "send_date", now)
    except _Bad:
        pass
    if not isinstance(value, str):
        return None
    s = value.strip()
    m = _ST_AT.search(s)
    if m:
        y, mo, d, h, mi, sec, _ms = (int(x) if x else 0 for x in m.groups())
        try:
            ts = datetime(y, mo, d, h, mi, sec, tzinfo=UTC).timestamp()
        except ValueError:
            return None
        return ts if 0 <= ts <= now + FUTURE_SLACK else None
    for f in _ST_FORMATS:
        try:
            ts = datetime.strptime(s, f).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
        return ts if 0 <= ts <= now + FUTURE_SLACK else None
    return None


def _parse_sillytavern(text: str, now: float) -> ImportPlan:
    plan = ImportPlan(SILLYTAVERN, [])
    problems: list[tuple[str, str]] = []
    chat: ImportedChat | None = None
    character = ""
    last: float | None = None
    for n, raw in enumerate(_lines(text), 1):
        if not raw.strip():
            continue
        try:
            obj = _json(raw)
            if not isinstance(obj, dict):
                raise _Bad("a line must be a JSON object")
            if chat is None:  # the metadata line
                character = obj.get("character_name") or ""
                if not isinstance(character, str):
                    raise _Bad("character_name must be text")
                made = _st_time(obj.get("create_date"), now)
                last = made
                title = character.strip() or "SillyTavern chat"
                if made is not None:
                    title += " · " + datetime.fromtimestamp(made, UTC).strftime("%Y-%m-%d")
                chat = ImportedChat(_title(title), "default", where=f"line {n}")
                plan.chats.append(chat)
                continue
            if "mes" not in obj:
                raise _Bad("a message line needs mes (its text)")
            words = _content(obj["mes"], "mes")
            is_user = obj.get("is_user", False)
            if not isinstance(is_user, bool):
                raise _Bad("is_user must be true or false")
            if obj.get("is_system") or not words.strip():
                plan.skipped += 1
                continue
            name = obj.get("name", "")
            if not isinstance(name, str):
                raise _Bad("name must be text")
            if not is_user and name and character and name != character:
                words = f"{name}: {words}"  # a group chat: who of the characters spoke
            at = _st_time(obj.get("send_date"), now)
            if at is None:
                plan.times_guessed += 1
                at = last if last is not None else now
            last = at
            chat.messages.append(ImportedMessage("user" if is_user else "assistant", words, at))
        except _Bad as e:
            problems.append((f"line {n}", str(e)))
    return _finish(plan, problems)


def import_summary(plan: ImportPlan) -> list[str]:
    """What a checked chat import holds, in the owner's words (the CLI and the TUI's preview
    say the same)."""
    n, m = len(plan.chats), plan.messages
    lines = [
        f"{plan.format_name}: {n} chat{'s' if n != 1 else ''}, {m} message{'s' if m != 1 else ''}"
    ]
    if plan.skipped:
        lines.append(
            f"{plan.skipped} message{'s are' if plan.skipped != 1 else ' is'} not "
            "yours or the assistant's words (system, tools, hidden, empty) and will "
            "not be imported"
        )
    if plan.empty_chats:
        lines.append(
            f"{plan.empty_chats} chat{'s have' if plan.empty_chats != 1 else ' has'} "
            "nothing to import and will be left out"
        )
    if plan.times_guessed:
        lines.append(
            f"{plan.times_guessed} message"
            f"{'s have' if plan.times_guessed != 1 else ' has'} no readable time and "
            "will take the time of the message before"
        )
    return lines
