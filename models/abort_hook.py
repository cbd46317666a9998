"""Stopping llama.cpp inside an interruptible call (issue 12): the prompt batch a background
call evaluates between two cancel checks, the exception that ends it, and llama.cpp's abort
callback that stops even a decode under way. Used by :class:`models.llama.LlamaChatModel`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

# prompt tokens between two cancel checks in an interruptible structured call (issue 12:
# a turn stopping the background summariser waited for a whole 512-token batch)
INTERRUPTIBLE_BATCH = 64


class _Abort(Exception):
    """Raised inside prompt evaluation when the caller cancelled or the deadline passed."""


class AbortHook:
    """llama.cpp's abort callback for an interruptible call (issue 12): ``llama_decode`` asks it
    between the compute graph's nodes, so a turn stopping the background summariser waits for
    one node (milliseconds), not for the rest of a prompt batch or a generated token (measured
    before: +100 % first-token p95 while summaries ran, most of it that wait). llama.cpp then
    drops the aborted batch from the KV cache and ``llama_decode`` returns 2.

    Armed only around interruptible calls: the callback is Python, so each node takes the GIL
    (about a thousand a decode, microseconds each when the GIL is free); a turn's own decode,
    with the TUI drawing its tokens, never pays for it."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp

        self._llm = llm
        self._check: Callable[[], bool] | None = None
        self.fired = False
        self.calls = 0  # how many times llama.cpp asked (tests and benches)
        self._cb = llama_cpp.ggml_abort_callback(self._ask)  # kept alive while the model is
        self._null = llama_cpp.ggml_abort_callback(0)

    def _ask(self, _data: Any) -> bool:
        self.calls += 1
        check = self._check
        try:
            if check is not None and check():
                self.fired = True
                return True
        except Exception:  # noqa: BLE001 - never raise into C
            return False
        return False

    @contextlib.contextmanager
    def armed(self, check: Callable[[], bool]) -> Iterator[None]:
        import logging

        import llama_cpp

        quiet = logging.getLogger("llama-cpp-python")
        level = quiet.level
        self._check, self.fired = check, False
        llama_cpp.llama_set_abort_callback(self._llm._ctx.ctx, self._cb, None)
        quiet.setLevel(logging.CRITICAL)  # llama.cpp logs each abort as an error; it is not
        try:
            yield
        finally:
            llama_cpp.llama_set_abort_callback(self._llm._ctx.ctx, self._null, None)
            self._check = None
            quiet.setLevel(level)
