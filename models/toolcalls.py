"""Recognising tool calls in what a chat model writes (pure text, no model).

Qwen2.5 models are taught to answer a tool call as::

    <tool_call>
    {"name": "memory_save", "arguments": {"content": "…", "kind": "fact", "importance": 3}}
    </tool_call>

but small models also wrap the object in a ```json fence, emit it bare, double the braces
(``{{"name": …}}`` — an artefact of one GGUF's template), name the arguments ``parameters``,
give the arguments as a JSON *string*, or break the JSON. This module turns such output into
``(visible text, [ToolCall])`` and never lets tool-call text reach the visible text (SPEC §3.2:
the model's tool calls are executed, not shown).

Rules:
- Inside ``<tool_call>…</tool_call>`` everything is a call; JSON that does not parse gives a
  :class:`ToolCall` whose ``arguments`` is the raw string, so the caller reports a tool error the
  model can read (its name is recovered when the text shows one).
- A fenced block or a bare object is a call only when it has the call's shape (``name`` and
  ``arguments``/``parameters``) — otherwise it is ordinary text (the owner may have asked for
  JSON); a broken one counts only when it clearly names one of the offered tools.
- A hallucinated ``<tool_response>`` block after a call is dropped.

:class:`ToolCallStream` does the same incrementally for a token stream: it releases text as soon
as it cannot be the start of a tool call and holds back only what might be one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from core.chat.filters import json_end  # the one string-aware JSON scanner
from core.llm import ToolCall

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
RESPONSE_OPEN = "<tool_response>"
RESPONSE_CLOSE = "</tool_response>"
FENCE = "```"

_NAME_RE = re.compile(r'"(?:name|function)"\s*:\s*"([A-Za-z_][\w.\-]*)"')
_FENCE_RE = re.compile(r"```[ \t]*([\w+\-]*)[ \t]*\n?(.*?)```", re.S)
_JSON_FENCE_LANGS = {"", "json", "json5", "tool_call", "tool", "javascript", "js"}


# ------------------------------------------------------------------------------- JSON helpers
def _loads_lenient(text: str) -> Any:
    """Parse JSON that a small model wrote: surrounding junk, doubled braces, a missing closing
    brace or two. Raises ValueError when nothing sensible parses."""
    s = text.strip()
    if not s:
        raise ValueError("empty")
    candidates = [s]
    if s.startswith("{{") and s.rstrip().endswith("}}"):
        candidates.append(s[1:-1].strip())
    dec = json.JSONDecoder()
    for c in candidates:
        try:
            return json.loads(c)
        except ValueError:
            pass
        start = min((i for i in (c.find("{"), c.find("[")) if i >= 0), default=-1)
        if start < 0:
            continue
        try:
            obj, _ = dec.raw_decode(c[start:])
            return obj
        except ValueError:
            pass
        # truncated: close what is open (outside strings)
        closed = _close_brackets(c[start:])
        if closed is not None:
            try:
                return json.loads(closed)
            except ValueError:
                pass
    raise ValueError("not JSON")


class _JsonStrings:
    """Follows a left-to-right scan of JSON text through its string literals (escapes
    included), so the caller sees only the characters outside them."""

    __slots__ = ("esc", "in_str")

    def __init__(self) -> None:
        self.in_str = self.esc = False

    def outside(self, ch: str) -> bool:
        """Take the next character; True when it stands outside every string (a quote that
        opens or closes one does not)."""
        if self.in_str:
            if self.esc:
                self.esc = False
            elif ch == "\\":
                self.esc = True
            elif ch == '"':
                self.in_str = False
            return False
        if ch == '"':
            self.in_str = True
            return False
        return True


def _close_brackets(s: str) -> str | None:
    stack: list[str] = []
    strings = _JsonStrings()
    for ch in s:
        if not strings.outside(ch):
            continue
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    if strings.in_str or not stack or len(stack) > 3:
        return None
    return s + "".join(reversed(stack))


# ------------------------------------------------------------------------------- shape
def _as_calls(obj: Any) -> list[dict[str, Any]] | None:
    """The call dicts in a parsed object, or None when it is not call-shaped."""
    items = obj if isinstance(obj, list) else [obj]
    if not items:
        return None
    out = []
    for it in items:
        if not isinstance(it, dict):
            return None
        if isinstance(
            it.get("function"), dict
        ):  # OpenAI style {"type": "function", "function": {…}}
            it = it["function"]
        name = it.get("name")
        if not isinstance(name, str) or not name:
            return None
        if "arguments" in it:
            args = it["arguments"]
        elif "parameters" in it:
            args = it["parameters"]
        elif "args" in it:
            args = it["args"]
        else:
            return None
        out.append({"name": name, "arguments": args})
    return out


def _normalise_arguments(args: Any) -> dict[str, Any] | str:
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            return args
        return parsed if isinstance(parsed, dict) else args
    if args is None:
        return {}
    return json.dumps(args, ensure_ascii=False)


def _guess_name(raw: str) -> str:
    m = _NAME_RE.search(raw)
    return m.group(1) if m else ""


def parse_call_block(
    raw: str, known: Iterable[str] | None = None, *, strict: bool = True
) -> list[ToolCall] | None:
    """Tool calls in one candidate block (the inside of a tag or fence, or a bare object).

    ``strict=False`` (inside ``<tool_call>``): always returns calls — a block that does not parse
    gives one call with the raw text as its arguments. ``strict=True`` (fences, bare JSON):
    returns None unless the block is call-shaped (an unknown name is still a call: the caller
    answers it with an "unknown tool" error); a block whose JSON is broken is a (raw) call only
    when it clearly names one of the ``known`` tools.
    """
    known_set = set(known) if known is not None else None
    try:
        obj = _loads_lenient(raw)
    except ValueError:
        obj = None
    calls = _as_calls(obj) if obj is not None else None
    if calls is not None:
        return [
            ToolCall(name=c["name"], arguments=_normalise_arguments(c["arguments"])) for c in calls
        ]
    name = _guess_name(raw)
    if strict:
        looks = name and re.search(r'"(?:arguments|parameters)"\s*:', raw)
        if not looks or known_set is None or name not in known_set:
            return None
    return [ToolCall(name=name, arguments=raw.strip())]


# ------------------------------------------------------------------------------- whole text
def parse_tool_calls(text: str, known: Iterable[str] | None = None) -> tuple[str, list[ToolCall]]:
    """Split a complete model answer into (visible text, tool calls)."""
    s = ToolCallStream(known)
    visible = s.feed(text) + s.finish()
    return visible, s.calls


# ------------------------------------------------------------------------------- streaming
_BARE_KEYS = ('"name"', '"function"')


class ToolCallStream:
    """Incremental splitter: ``feed(delta) -> text safe to show now``; ``finish() -> the rest``;
    recognised calls accumulate in ``calls``.

    Text is released as soon as it cannot be the start of a tool call; only a possible call
    (a ``<tool_call>`` tag, a JSON fence, a bare ``{"name": …`` at the start of the answer or of
    a line, or a partial marker at the very end) is held back until it is decided.
    """

    def __init__(self, known: Iterable[str] | None = None) -> None:
        self.known = set(known) if known is not None else None
        self.calls: list[ToolCall] = []
        self._buf = ""  # undecided text
        self._mode = "text"  # "text" | "response" (dropped) | "fence" (a plain code block)
        self._seen_text = False  # anything non-blank shown yet
        self._line_start = True  # the shown text ends a line (a bare call may start here)

    @property
    def holding(self) -> bool:
        """Whether some text is held back because it may be a tool call."""
        return bool(self._buf)

    def feed(self, delta: str) -> str:
        self._buf += delta
        return self._drain(final=False)

    def finish(self) -> str:
        return self._drain(final=True)

    # -- internals
    def _emit(self, text: str, out: list[str]) -> None:
        if not text:
            return
        if text.strip():
            self._seen_text = True
        tail = text.rstrip(" \t")
        self._line_start = tail.endswith("\n") if tail else self._line_start
        out.append(text)

    def _drain(self, final: bool) -> str:
        out: list[str] = []
        while self._buf:
            if self._mode == "response":
                j = self._buf.find(RESPONSE_CLOSE)
                if j < 0:
                    self._buf = "" if final else self._buf[-(len(RESPONSE_CLOSE) - 1) :]
                    break
                self._buf = self._buf[j + len(RESPONSE_CLOSE) :]
                self._mode = "text"
                continue
            if self._mode == "fence":
                j = self._buf.find(FENCE)
                if j < 0:
                    keep = 0 if final else _tail_prefix(self._buf, FENCE)
                    self._emit(self._buf[: len(self._buf) - keep], out)
                    self._buf = self._buf[len(self._buf) - keep :]
                    break
                self._emit(self._buf[: j + len(FENCE)], out)
                self._buf = self._buf[j + len(FENCE) :]
                self._mode = "text"
                continue
            i, kind = self._next_candidate()
            if i is None:
                keep = 0 if final else self._partial_marker_tail()
                self._emit(self._buf[: len(self._buf) - keep], out)
                self._buf = self._buf[len(self._buf) - keep :]
                break
            if i > 0:
                self._emit(self._buf[:i], out)
                self._buf = self._buf[i:]
            done = self._try_close(kind, final)
            if done is None:  # still open: wait for more
                break
            consumed, text = done
            self._emit(text, out)
            self._buf = self._buf[consumed:]
        return "".join(out)

    def _bare_start(self) -> int | None:
        """Index of a ``{`` (or ``[`` at the very start) that may open a bare call."""
        b = self._buf
        if self._line_start:
            j = len(b) - len(b.lstrip(" \t\n"))
            if j < len(b) and (b[j] == "{" or (b[j] == "[" and not self._seen_text)):
                return j
        for m in re.finditer(r"\n[ \t]*\{", b):
            return m.end() - 1
        return None

    def _next_candidate(self) -> tuple[int | None, str]:
        b = self._buf
        best: tuple[int | None, str] = (None, "")
        for marker, kind in ((OPEN_TAG, "tag"), (FENCE, "fence"), (RESPONSE_OPEN, "response")):
            j = b.find(marker)
            if j >= 0 and (best[0] is None or j < best[0]):
                best = (j, kind)
        bare = self._bare_start()
        if bare is not None and (best[0] is None or bare < best[0]):
            best = (bare, "bare")
        return best

    def _partial_marker_tail(self) -> int:
        """Length of the buffer's tail that may be the start of a marker (held back)."""
        b = self._buf
        keep = max(_tail_prefix(b, m) for m in (OPEN_TAG, FENCE, RESPONSE_OPEN))
        if self._line_start and not b.strip(" \t\n"):
            keep = len(b)  # blank so far at a line start: a bare call may follow
        else:
            nl = b.rfind("\n")
            if nl >= 0 and not b[nl + 1 :].strip(" \t"):
                keep = max(keep, len(b) - nl - 1)  # spaces after a newline: hold them
        return keep

    def _try_close(self, kind: str, final: bool) -> tuple[int, str] | None:
        """Decide the candidate at the start of the buffer: (chars consumed, text to show), or
        None when it is not complete yet."""
        b = self._buf
        if kind == "response":
            self._mode = "response"
            return len(RESPONSE_OPEN), ""
        if kind == "tag":
            j = b.find(CLOSE_TAG, len(OPEN_TAG))
            k = b.find(OPEN_TAG, len(OPEN_TAG))
            if j < 0 or (0 <= k < j):
                if k >= 0:  # a tag left open is closed by the next call's tag
                    j = end = k
                elif final:
                    j = end = len(b)
                else:
                    return None
            else:
                end = j + len(CLOSE_TAG)
            inner = b[len(OPEN_TAG) : j]
            if inner.strip():
                self.calls.extend(parse_call_block(inner, self.known, strict=False) or [])
            return end, ""
        if kind == "fence":
            m = _FENCE_RE.match(b)
            if m is not None:
                if m.group(1).lower() in _JSON_FENCE_LANGS:
                    calls = parse_call_block(m.group(2), self.known, strict=True)
                    if calls:
                        self.calls.extend(calls)
                        return m.end(), ""
                return m.end(), b[: m.end()]
            nl = b.find("\n")
            lang = (b[len(FENCE) : nl] if nl >= 0 else b[len(FENCE) :]).strip().lower()
            body = b[nl + 1 :].lstrip() if nl >= 0 else ""
            if final:
                if lang in _JSON_FENCE_LANGS:
                    calls = parse_call_block(body, self.known, strict=True)
                    if calls:
                        self.calls.extend(calls)
                        return len(b), ""
                return len(b), b
            if nl >= 0 and (lang not in _JSON_FENCE_LANGS or (body and body[0] not in "{[")):
                # a fence that cannot hold a call (```python …): stream it through
                self._mode = "fence"
                return nl + 1, b[: nl + 1]
            if nl < 0 and lang and not any(x.startswith(lang) for x in _JSON_FENCE_LANGS):
                self._mode = "fence"
                return len(b), b
            return None
        # bare JSON
        head = b.lstrip("{[ \n\t")
        at_start = not self._seen_text
        if not head:
            return (len(b), b) if final else None
        if at_start:
            ok = head[0] == '"'
            undecided = False
        else:
            ok = any(head.startswith(k) for k in _BARE_KEYS)
            undecided = not ok and any(k.startswith(head) for k in _BARE_KEYS)
        if undecided:
            return (len(b), b) if final else None
        if not ok:
            return 1, b[0]  # ordinary text: release the bracket, go on scanning
        block_end = json_end(b, 0)
        if block_end is None:
            if not final:
                return None
            calls = parse_call_block(b, self.known, strict=True)
            if calls:
                self.calls.extend(calls)
                return len(b), ""
            return len(b), b
        calls = parse_call_block(b[:block_end], self.known, strict=True)
        if calls:
            self.calls.extend(calls)
            return block_end, ""
        return block_end, b[:block_end]


def _tail_prefix(b: str, marker: str) -> int:
    """Length of the longest tail of ``b`` that is a proper prefix of ``marker``."""
    for n in range(min(len(marker) - 1, len(b)), 0, -1):
        if b.endswith(marker[:n]):
            return n
    return 0


def _open_fence(b: str) -> tuple[str, str]:
    nl = b.find("\n")
    if nl < 0:
        return b[len(FENCE) :].strip(), ""
    return b[len(FENCE) : nl].strip(), b[nl + 1 :]


def tool_function(tool: dict[str, Any]) -> dict[str, Any]:
    """The function description of a tool given flat (``{"name", "description", "parameters"}``)
    or OpenAI-style (``{"type": "function", "function": {...}}``)."""
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ValueError(f"not a tool schema: {tool!r}")
    return fn
