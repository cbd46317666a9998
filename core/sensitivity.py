"""Whether a memory is private (SPEC §2: "Body, health, money, location, documents … Set by the
model or the owner"), read from its words.

The memory step's model sets ``private`` itself, and the owner's own "it's a secret" sets it
(:func:`core.chat.owner_message.says_secret`). Neither was enough: on an unseen scenario "Between
you and me, I owe about twelve thousand pounds on credit cards…" was saved public — the model
left the flag false and the secret words were not among the stems — so that record would have
been shown to any group Eva talks in. A leak is the worst bug Eva can have, so the flag gets a
third, measured source: a logistic regression over the saved text's USE multilingual vector
(the embedder the app already runs), scored whole and sentence by sentence (the highest
counts), trained on the dev split of the labelled memory-step set
(``bench/train_sensitivity.py``; its ``private`` labels), with its threshold set for recall:
marking a harmless record private only hides it from other audiences, missing one leaks it.

Any of the three marks the record private; none can unmark it. Without USE vectors only the
model and the owner's words decide.

    sensitive("I owe twelve thousand on credit cards", use_vectors(embedder))   # True
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

from core.learned import Embed, Linear

MODEL_FILE = Path(__file__).with_name("sensitivity.json")
_SENTENCES = re.compile(r"(?<=[.!?…])\s+|\n+")


class SensitivityModel:
    def __init__(self, linear: Linear) -> None:
        self.linear = linear
        self.threshold = float(linear.data["threshold"])

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> SensitivityModel | None:
        """The trained weights, or None when the file is missing or broken."""
        linear = Linear.load(path, "threshold")
        return None if linear is None else cls(linear)

    def score(self, content: str, embed: Embed) -> float | None:
        """The highest score of ``content`` and its sentences, or None without USE vectors."""
        pieces = [content, *rows(content)]
        m = embed(pieces)
        scores = self.linear.scores(m)
        if m is None or scores is None or not np.any(m[:, : len(self.linear.weights)]):
            return None
        return float(np.max(scores))

    def private(self, content: str, embed: Embed) -> bool | None:
        """Whether ``content`` must be private, or None when no USE vector can be had."""
        s = self.score(content, embed)
        return None if s is None else s >= self.threshold


def rows(content: str) -> list[str]:
    """The sentences of ``content`` scored beside it (a secret in one sentence of several)."""
    parts = [s.strip() for s in _SENTENCES.split(content.strip()) if s.strip()]
    return parts if len(parts) > 1 else []


@functools.cache
def sensitivity_model() -> SensitivityModel | None:
    """The trained model, loaded once."""
    return SensitivityModel.load()


def sensitive(content: str, embed: Embed | None) -> bool:
    """True when the trained model marks ``content`` private; False when it does not, or
    cannot (no model file, no USE vectors: the model's flag and the owner's words decide)."""
    model = sensitivity_model()
    if model is None or embed is None:
        return False
    return bool(model.private(content, embed))
