"""How much a memory matters (SPEC §2, ``importance`` 1..5), read from its words.

The memory step's model gave nearly every save the same importance (5, or 1 when its enum was
shown 1 first), which leaves importance meaningless for recall (§4: × importance/3) and for
forgetting (§7). So the weight of a save is predicted from the saved text instead: a ridge
regression over its USE multilingual vector (the embedder the app already runs), trained on the
dev split of the labelled memory-step set (``bench/train_importance.py``; issue 26, chosen by
its numbers, never tuned on the test split). The model's own number stays the fallback where no
USE vectors can be had.

    weigh = ImportanceModel.load()
    weigh.predict("У меня аллергия на арахис", embed)   # 5
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

MODEL_FILE = Path(__file__).with_name("importance.json")


class ImportanceModel:
    def __init__(self, weights: np.ndarray, bias: float) -> None:
        self.weights = weights
        self.bias = bias

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> ImportanceModel | None:
        """The trained weights, or None when the file is missing or broken."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(np.asarray(data["weights"], dtype=np.float32), float(data["bias"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def predict(self, content: str, embed: Callable[[list[str]], np.ndarray | None]
                ) -> int | None:
        """The importance 1..5 of ``content``, or None when no USE vector can be had."""
        m = embed([content])
        if m is None or m.ndim != 2 or m.shape[1] < len(self.weights):
            return None
        v = m[0, : len(self.weights)].astype(np.float32)
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            return None
        score = float(v / norm @ self.weights + self.bias)
        return int(min(5, max(1, round(score))))


_MODEL: list[ImportanceModel | None] = []


def importance_model() -> ImportanceModel | None:
    """The trained model, loaded once."""
    if not _MODEL:
        _MODEL.append(ImportanceModel.load())
    return _MODEL[0]
