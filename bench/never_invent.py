"""The never-invent judge over true answers: how often it holds a right answer as made up.

``python -m bench.never_invent [--data PATH] [--form memory|oracle] [--others 15] [--seed 7]``

Every LoCoMo QA item with evidence (category 5 skipped) is judged as the running app judges a
reply to a question about the owner (:class:`core.chat.judge.ReplyJudge`, SPEC §8.10): the gold
answer is the reply, given bare ("Sweden") and as a sentence ("Sweden."); the support is what a
turn would be shown — the owner's name as a core line ("The owner's name is Caroline."), the
evidence turns and ``--others`` random other turns of the conversation, each after the day it
was said as a recalled line gives it ("8 May 2023 …", its relative times with the day they meant:
"yesterday (7 May 2023)"), then the question. ``--form memory``
writes the owner's turns in their own words, as the memory step keeps them, and the other
speaker's under their name; ``--form oracle`` writes every turn under its speaker's name, as
bench.locomo_qa's oracle does.

Every answer held is a false alarm: in the app it becomes "I don't know" (a made-up answer to a
question is not asked again, core.chat.retry). Prints JSON: ``n`` replies judged, ``held``
and ``held_share`` by ``kind``, the checks of :func:`core.chat.invention.made_up` that fired
(``by_check``), and up to ``--examples`` held sentences."""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.locomo_qa import Turn, default_data, load_dialogue
from core import timeframe
from core.chat import invention
from core.chat.judge import Kind, ReplyJudge
from core.memory.prompt_section import said_on

# made_up's checks, in its order; a held reply none of them names spoke as the owner
CHECKS = (
    "unsupported",
    "_bare_claims",
    "missing_roles",
    "misattributed",
    "misnumbered",
    "someone_elses_life",
    "worded_numbers",
    "nothing_shown",
)


def support_line(t: Turn, owner: str, form: str) -> str:
    words = t.text if form == "memory" and t.speaker == owner else t.line
    return f"{said_on(t.at)} {timeframe.dated(words, t.at)}"


def checks_fired(reply: str, support: str, question: str) -> list[str]:
    out = []
    for name in CHECKS:
        check = getattr(invention, name)
        if name == "unsupported":
            found = check(reply, support)
        elif name == "missing_roles":
            found = check(question, support)
        else:
            found = check(reply, support, question)
        if found:
            out.append(name)
    return out or ["voice"]


def run(data: Path, form: str, others: int, seed: int, examples: int) -> dict[str, Any]:
    rng = random.Random(seed)
    samples = json.loads(data.read_text(encoding="utf-8"))
    kinds: Counter[str] = Counter()
    by_check: Counter[str] = Counter()
    held: list[dict[str, Any]] = []
    n = 0
    for sample in samples:
        d = load_dialogue(sample)
        turns = {t.dia: t for _, _, ts in d.sessions for t in ts}
        pool = list(turns.values())
        for q in d.qa:
            shown = [turns[x] for x in q.evidence] + rng.sample(pool, min(others, len(pool)))
            support = "\n".join(
                [f"The owner's name is {d.owner}."]
                + [support_line(t, d.owner, form) for t in shown]
                + [q.question]
            )
            for reply in (q.answer.strip(), q.answer.strip().rstrip(".") + "."):
                n += 1
                judge = ReplyJudge(q.question, "en", support=support)
                judge.feed(reply)
                judge.finish()
                kind = judge.verdict(reply).kind
                kinds[kind.value] += 1
                if kind is Kind.OK:
                    continue
                fired = checks_fired(reply, support, q.question) if kind is Kind.INVENTED else []
                by_check.update(fired)
                if len(held) < examples:
                    held.append(
                        {"question": q.question, "reply": reply, "kind": kind.value, "by": fired}
                    )
    out_of = sum(kinds.values())
    return {
        "bench": "never_invent",
        "data": str(data),
        "form": form,
        "others": others,
        "seed": seed,
        "n": n,
        "held": out_of - kinds[Kind.OK.value],
        "held_share": round((out_of - kinds[Kind.OK.value]) / out_of, 4) if out_of else None,
        "by_kind": dict(sorted(kinds.items())),
        "by_check": dict(by_check.most_common()),
        "examples": held,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.never_invent", description=__doc__)
    p.add_argument("--data", type=Path, default=None, help="LoCoMo JSON (default: the dev split)")
    p.add_argument("--form", choices=("memory", "oracle"), default="memory")
    p.add_argument("--others", type=int, default=15, help="random other turns in the support")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--examples", type=int, default=40)
    a = p.parse_args(argv)
    data = a.data or default_data()
    if not data.exists():
        print(f"no LoCoMo data at {data}: pass --data", file=sys.stderr)
        return 2
    print(json.dumps(run(data, a.form, a.others, a.seed, a.examples), ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
