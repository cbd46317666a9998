"""A scripted chat model for orchestration tests (not for judging answers)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from core.llm import Done, ModelError, TextDelta, ToolCall


class ScriptedLLM:
    """Plays back one scripted reply per call. A reply is a list of str chunks and ToolCall
    objects, or an Exception to raise. Every call's messages and tools are recorded, and the
    prompt is "tokenised" as words so prefix reuse can be measured like llama.cpp does it."""

    name = "scripted"

    def __init__(
        self,
        replies: list[Any] | None = None,
        context_size: int = 32_768,
        plans: list[Any] | None = None,
    ) -> None:
        self.replies = list(replies or [])
        # answers of generate_json (the structured memory step); None: taken from ``replies``
        self.plans = None if plans is None else list(plans)
        self.json_calls: list[dict[str, Any]] = []
        self.warmed: list[list[str]] = []
        self.context_size = context_size
        self.calls: list[dict[str, Any]] = []
        self._last_tokens: list[str] = []
        self.chunk_hook = None  # called after each chunk (e.g. to set a cancel event)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def render(self, messages, tools=None) -> list[str]:
        # like a real chat template, the tool schemas go first, into the system block
        out: list[str] = json.dumps(tools or [], ensure_ascii=False).split()
        for m in messages:
            out.append(f"<{m['role']}>")
            out.extend(str(m.get("content", "")).split())
            if m.get("tool_calls"):
                out.extend(json.dumps(m["tool_calls"], ensure_ascii=False).split())
        return out

    def _reuse(self, toks: list[str]) -> int:
        """Tokens of ``toks`` already in the "cache" (the previous call's prompt)."""
        common = 0
        for a, b in zip(toks, self._last_tokens, strict=False):
            if a != b:
                break
            common += 1
        self._last_tokens = toks
        return common

    def warm_up(self, messages, tools=None) -> None:
        toks = self.render(messages, tools)
        self._reuse(toks)
        self.warmed.append(toks)

    def stream_chat(
        self,
        messages,
        tools=None,
        cancel: threading.Event | None = None,
        max_tokens=None,
        temperature=0.7,
    ) -> Iterator:
        toks = self.render(messages, tools)
        common = self._reuse(toks)
        self.calls.append(
            {
                "messages": [dict(m) for m in messages],
                "tools": tools,
                "prompt_tokens": len(toks),
                "evaluated": len(toks) - common,
                "temperature": temperature,
            }
        )
        reply = self.replies.pop(0) if self.replies else ["(no more script)"]
        if isinstance(reply, Exception):
            raise reply
        n = 0
        for item in reply:
            if cancel is not None and cancel.is_set():
                yield Done(len(toks), len(toks) - common, n, stopped=True)
                return
            if isinstance(item, ToolCall):
                yield item
            else:
                n += 1
                yield TextDelta(item)
                if self.chunk_hook:
                    self.chunk_hook(n)
        yield Done(len(toks), len(toks) - common, n, stopped=False)

    def force_tool_call(self, messages, tool, timeout=None, cancel=None) -> ToolCall:
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None) -> dict:
        toks = self.render(messages)
        common = self._reuse(toks)
        self.json_calls.append(
            {
                "messages": [dict(m) for m in messages],
                "schema": schema,
                "prompt_tokens": len(toks),
                "evaluated": len(toks) - common,
            }
        )
        source = self.replies if self.plans is None else self.plans
        reply = source.pop(0) if source else ModelError("no more script")
        if isinstance(reply, Exception):
            raise reply
        return reply
