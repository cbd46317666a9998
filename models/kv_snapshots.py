"""Snapshots of llama.cpp's KV cache, one per recent conversation (issue 9): coming back to a
chat after another one restores its cache instead of evaluating its whole window again. Used by
:class:`models.llama.LlamaChatModel`."""

from __future__ import annotations

from typing import Any


def _common_prefix(a: Any, b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class KVSnapshots:
    """Snapshots of the KV cache of the last few conversations (sequence 0 only, so no logits
    buffer is copied). llama.cpp keeps one sequence: without these, coming back to a chat after
    another one re-evaluates its whole window — measured on the default model, 10-20 s before the
    first token where 1-3 s is usual. A snapshot of a ~2k-token window of the 1.5B model is about
    56 MB and takes some tens of milliseconds to take or restore."""

    def __init__(self, capacity: int = 6, max_bytes: int = 384 << 20, min_gain: int = 64) -> None:
        self.capacity, self.max_bytes, self.min_gain = capacity, max_bytes, min_gain
        self._items: list[tuple[list[int], bytes]] = []  # most recently used last
        self.restored = 0  # how many times a snapshot was used (for tests and benches)

    def __len__(self) -> int:
        return len(self._items)

    def save(self, llm: Any) -> None:
        import ctypes

        import llama_cpp

        ids = [int(t) for t in llm.input_ids[: llm.n_tokens]]
        if len(ids) < self.min_gain:
            return
        ctx = llm._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        if size <= 0 or size > self.max_bytes:
            return
        buf = (ctypes.c_uint8 * size)()
        got = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        if got <= 0:
            return
        blob = bytes(memoryview(buf)[:got])
        # a snapshot this one covers three quarters of is no longer worth its memory: the same
        # chat one turn earlier (only its recalled memories, message and reply differ), a
        # retry's first attempt; restoring this one instead re-reads at most that last quarter.
        # Another chat, the summariser's or sleep's prompt share little more than the persona.
        # Measured (issue 32 item 3, default model, 20 turns of one chat): 6 snapshots, 187 MB,
        # were kept before, each one turn of the same chat.
        self._items = [(t, b) for t, b in self._items if 4 * _common_prefix(t, ids) < 3 * len(t)]
        self._items.append((ids, blob))
        while len(self._items) > self.capacity or (
            len(self._items) > 1 and sum(len(b) for _, b in self._items) > self.max_bytes
        ):
            self._items.pop(0)

    def restore(self, llm: Any, tokens: list[int]) -> int:
        """Load the snapshot sharing the longest prefix with ``tokens`` when it beats what the
        cache holds now by ``min_gain`` tokens. Returns the tokens it saves from evaluation."""
        if not self._items:
            return 0
        import ctypes

        import llama_cpp

        now = _common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        best, best_n = None, now + self.min_gain
        for i, (ids, _) in enumerate(self._items):
            n = _common_prefix(ids, tokens)
            if n >= best_n:
                best, best_n = i, n
        if best is None:
            return 0
        ids, blob = self._items.pop(best)
        self._items.append((ids, blob))
        src = (ctypes.c_uint8 * len(blob)).from_buffer_copy(blob)
        if int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, src, len(blob), 0)) == 0:
            llm.n_tokens = 0  # the cache is in an unknown state: evaluate from scratch
            return 0
        llm.input_ids[: len(ids)] = ids
        llm.n_tokens = len(ids)
        self.restored += 1
        return best_n - now
