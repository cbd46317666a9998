"""Corrections at write time (SPEC §3, issue 26 item 2): does the owner's new message replace a
memory Eva already holds? "Update: Anna moved again, she now lives in Yerevan." must retire
"My sister Anna moved to Tbilisi last month.", or "Where does my sister live now?" is answered
"Tbilisi".

Hand-written rules alone (:func:`core.chat.supersession.supersedes`: a change word, the same
someone, a changed value and a word in common) retired 1 of 20 corrections of the labelled
dev set: "I switched to decaf, doctor's orders." shares no word with "I drink three espressos a
day.". The decision is a small logistic regression over a few features of the pair, learned on
the dev split of ``bench/data/correction_pairs.json`` and the memory-step set
(``bench/train_corrections.py``), never on test, and shipped as ``corrections.json`` beside
this module. The features are the message's USE cosine to the memory and its margin over the
other memories shown (the correction's target is the one it is about), and the arithmetic the
sleep already uses (a change word, a changed value, the same someone, different people, words
in common) — each keeps its weight by what it is worth on the data.

Archiving a true memory is the harm Eva promises never to do, so the threshold is chosen on
dev for precision first (``bench.train_corrections --precision``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core import text
from core.learned import Embed, Linear
from core.sleep import candidates as sleep_candidates

MODEL = Path(__file__).with_name("corrections.json")

# the message says a known fact changed or was wrong (a feature: its weight is learned)
_CHANGE = re.compile(
    r"\b(now|moved|no longer|not anymore|anymore|actually|instead|changed|switched|turned out|"
    r"update|correction|wrong|mistake|"
    r"теперь|сейчас|переехал\w*|больше не|уже не|на самом деле|вместо|поменял\w*|сменил\w*|"
    r"оказалось|перенес\w*|перенёс\w*|передумал\w*|ошиб\w*|не так|поправ\w*)",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(not|no|never|isn'?t|aren'?t|wasn'?t|didn'?t|don'?t|doesn'?t|"
    r"не|нет|ни|никогда)\b",
    re.IGNORECASE,
)

FEATURES = (
    "cosine",
    "margin",
    "best",
    "change_word",
    "negation",
    "value_changed",
    "same_someone",
    "other_people",
    "overlap",
    "old_changes",
)


def says_change(message: str) -> bool:
    return bool(_CHANGE.search(message))


def features(message: str, old: str, cosine: float, best_other: float) -> np.ndarray:
    """The pair's feature row, in the order of :data:`FEATURES`. ``cosine`` is the USE cosine
    of the message and ``old``; ``best_other`` the highest cosine of the message to the other
    memories shown beside ``old`` (0 when it is alone)."""
    mine, theirs = text.stem_set(message), text.stem_set(old)
    same = sleep_candidates.shares_name(message, old) or bool(
        sleep_candidates.roles(message) & sleep_candidates.roles(old)
    )
    return np.array(
        [
            cosine,
            cosine - best_other,
            1.0 if cosine >= best_other else 0.0,
            1.0 if says_change(message) else 0.0,
            1.0 if _NEGATION.search(message) else 0.0,
            1.0 if sleep_candidates.text_change(old, message) else 0.0,
            1.0 if same else 0.0,
            1.0 if sleep_candidates.different_people(old, message) else 0.0,
            text.jaccard(mine, theirs) if mine and theirs else 0.0,
            1.0 if says_change(old) else 0.0,
        ],
        dtype=np.float32,
    )


def pair_rows(message: str, memories: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """One feature row per memory; ``vectors`` holds the message's USE vector first, then one
    per memory (any length: only their directions count)."""
    v: np.ndarray = vectors.astype(np.float32)
    v = v / np.where((n := np.linalg.norm(v, axis=1, keepdims=True)) > 0, n, 1.0)
    cos = v[1:] @ v[0]
    rows = []
    for i, old in enumerate(memories):
        others = np.delete(cos, i)
        rows.append(
            features(message, old, float(cos[i]), float(others.max()) if len(others) else 0.0)
        )
    return np.stack(rows) if rows else np.zeros((0, len(FEATURES)), dtype=np.float32)


class CorrectionModel:
    def __init__(self, linear: Linear) -> None:
        self.linear = linear
        self.threshold = float(linear.data["threshold"])  # archive: precision first
        self.hint = float(linear.data.get("hint_threshold", self.threshold))  # offer update

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(rows @ self.linear.weights + self.linear.bias)))

    def scores(self, message: str, memories: Sequence[str], embed: Embed) -> list[float] | None:
        """Per memory, the probability that ``message`` replaces it; None when there are no
        USE vectors (the caller keeps its rules)."""
        if not memories:
            return []
        vectors = embed([message, *memories])
        if vectors is None or len(vectors) != len(memories) + 1:
            return None
        return [float(p) for p in self.probabilities(pair_rows(message, memories, vectors))]


@functools.cache
def correction_model() -> CorrectionModel | None:
    linear = Linear.load(MODEL, "threshold")
    return (
        CorrectionModel(linear)
        if linear is not None and len(linear.weights) == len(FEATURES)
        else None
    )
