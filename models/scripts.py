"""Scripts a generation may not slip into (issue 26: seen as the owner on the default model, a
Russian reply read "…в вашем生活中…": Qwen, trained on much Chinese, continues a word in
Chinese when it is unsure of the Russian one).

Eva speaks with her owner in Russian or English, so a reply, a saved memory or a summary in
Chinese, Japanese or Korean script is a slip, not an answer. Filtering such characters after the
fact leaves a hole in the sentence; forbidding the tokens makes the model write its next-best
token, which is the word in the owner's language (measured on the default model: "生" → "shēng",
the rest of the reply unchanged). The ban is lifted for a prompt that holds such script itself:
an owner who writes Chinese may get Chinese back.

A byte-level BPE token of East Asian script holds a UTF-8 lead byte 0xE3–0xED: U+3000–U+DFFF,
which is CJK punctuation, kana, Bopomofo, the CJK ideographs, Yi and Hangul (and the unused
surrogates). No Latin, Cyrillic, typographic punctuation (U+2000–U+2FFF: "—", "…") or emoji
(4-byte) character has one, and a continuation byte (0x80–0xBF) never equals one, so a token that
holds such a byte is one that starts an East Asian character.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

EAST_ASIAN_LEADS = frozenset(range(0xE3, 0xEE))


def is_east_asian_piece(piece: bytes) -> bool:
    """The token's bytes start a character of East Asian script."""
    return any(b in EAST_ASIAN_LEADS for b in piece)


class ScriptGuard:
    """The token ids of East Asian script for one vocabulary, found once (about a second for
    Qwen's 152k tokens, so :meth:`prepare` runs at warm-up, not on the first reply), and the
    logits processor that forbids them."""

    def __init__(self, detokenize: Callable[[int], bytes], n_vocab: int) -> None:
        self._detokenize = detokenize
        self._n_vocab = n_vocab
        self._ids: np.ndarray | None = None
        self._id_set: frozenset[int] = frozenset()

    def prepare(self) -> np.ndarray:
        if self._ids is None:
            ids = [i for i in range(self._n_vocab) if is_east_asian_piece(self._detokenize(i))]
            self._ids = np.array(ids, dtype=np.intc)
            self._id_set = frozenset(ids)
        return self._ids

    def processor(self, prompt_tokens: list[int]) -> Callable[[Any, Any], Any] | None:
        """A logits processor that forbids East Asian tokens, or None when the prompt holds
        such script itself (or the vocabulary has none)."""
        ids = self.prepare()
        if not len(ids) or any(t in self._id_set for t in prompt_tokens):
            return None

        def forbid(_input_ids: Any, scores: Any) -> Any:
            scores[ids] = -np.inf
            return scores

        return forbid
