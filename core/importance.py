"""How much a memory matters (SPEC §2, ``importance`` 1..5), read from its words.

The memory step's model gave nearly every save the same importance (5, or 1 when its enum was
shown 1 first), which leaves importance meaningless for recall (§4: × importance/3) and for
forgetting (§7). So the weight of a save is predicted from the saved text instead: a ridge
regression over its USE multilingual vector (the embedder the app already runs), trained on the
dev split of the labelled memory-step set (``bench/train_importance.py``; issue 26, chosen by
its numbers, never tuned on the test split). The model's own number stays the fallback where no
USE vectors can be had.

    weigh = importance_model()
    weigh.predict("У меня аллергия на арахис", use_vectors(embedder))   # 5
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from core.learned import Embed, Linear

MODEL_FILE = Path(__file__).with_name("importance.json")


class ImportanceModel:
    def __init__(self, linear: Linear) -> None:
        self.linear = linear

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> ImportanceModel | None:
        """The trained weights, or None when the file is missing or broken."""
        linear = Linear.load(path)
        return None if linear is None else cls(linear)

    def predict(self, content: str, embed: Embed) -> int | None:
        """The importance 1..5 of ``content``, or None when no USE vector can be had."""
        m = embed([content])
        scores = self.linear.scores(m)
        if m is None or scores is None or not np.any(m[0, : len(self.linear.weights)]):
            return None
        return int(min(5, max(1, round(float(scores[0])))))


@functools.cache
def importance_model() -> ImportanceModel | None:
    """The trained model, loaded once."""
    return ImportanceModel.load()
