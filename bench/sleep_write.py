"""How many contradictions the memory-writing step catches when they are said (issue 17 item 2).

    python -m bench.sleep_write --data bench/data/sleep_corpus_hard.json --model NAME
                                [--embedder SPEC] [--arms new,old]

A fresh store holds the corpus without the newer record of each labelled contradiction; then,
for each contradiction, the owner says its ``said`` message and the structured memory step
(:class:`core.chat.memory_writer.MemoryWriter`) runs once. The contradiction is *caught* when the
older record was updated (its text changed) or forgotten by that step — so the night has
nothing left to resolve. Arm ``new`` is the step as it is (the arithmetic marks a related memory
the message seems to change, and offers ``update``); arm ``old`` switches that marking off (the
step before issue 17: ``update`` offered only for a message with a correction word). Prints
JSON: per arm ``caught``/``total`` (and per part of the corpus), ``updates_offered``, model
calls and seconds, and each item's outcome.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import environment, rounded
from bench.sleep_quality import build_store, load_embedder
from core.chat import supersession
from core.chat.memory_writer import STEP_RULE, MemoryWriter
from core.privacy import OWNER_TRUSTED


def run_arm(data: dict[str, Any], model: Any, embedder: Any, arm: str) -> dict[str, Any]:
    contra = data["expect"]["contradictions"]
    news = {c["new"] for c in contra}
    parts = {m["key"]: m.get("part", "dev") for m in data["memories"]}
    kept = {**data, "memories": [m for m in data["memories"] if m["key"] not in news]}
    original = supersession.outdated_by
    if arm == "old":
        supersession.outdated_by = lambda message, content: None
    items = []
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            mem, clock, keys = build_store(Path(tmp) / "memory.db", kept, embedder)
            mem.backfill_vectors()
            writer = MemoryWriter(mem, model, timeout=600)
            for c in contra:
                old_id = keys[c["old"]]
                before = mem.get(old_id).content
                said = c["said"]
                related = writer.related(said, OWNER_TRUSTED)
                messages = [
                    {"role": "system", "content": STEP_RULE},
                    {"role": "user", "content": said},
                    {
                        "role": "assistant",
                        "content": "Понятно, запомню."
                        if any("а" <= ch <= "я" for ch in said.lower())
                        else "Got it.",
                    },
                ]
                t1 = time.perf_counter()
                out = writer.run(messages, said, OWNER_TRUSTED)
                live = {r.id: r for r in mem.list(OWNER_TRUSTED, limit=10_000)}
                after = live.get(old_id)
                caught = after is None or after.content != before
                items.append(
                    {
                        "old": c["old"],
                        "said": said,
                        "part": parts[c["old"]],
                        "caught": caught,
                        "shown": old_id in {r.id for r in related},
                        "marked": any(r.id == old_id and r.outdated for r in related),
                        "ops": [(r.name, r.ok) for r in out.results],
                        "error": out.error,
                        "after": None if after is None else after.content,
                        "seconds": time.perf_counter() - t1,
                    }
                )
                clock.advance(60)
            mem.close()
    finally:
        supersession.outdated_by = original
    by_part: dict[str, dict[str, int]] = {}
    for it in items:
        p = by_part.setdefault(it["part"], {"caught": 0, "total": 0})
        p["total"] += 1
        p["caught"] += it["caught"]
    return {
        "caught": sum(i["caught"] for i in items),
        "total": len(items),
        "parts": by_part,
        "shown": sum(i["shown"] for i in items),
        "marked": sum(i["marked"] for i in items),
        "seconds": time.perf_counter() - t0,
        "items": items,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.sleep_write", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", required=True, help="packaged model name or GGUF path")
    ap.add_argument("--embedder", default=None)
    ap.add_argument("--arms", default="new,old")
    args = ap.parse_args(argv)
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    from models.llama import load_chat_model  # lazy: the bench module imports without models/

    model = load_chat_model(args.model, seed=0, n_ctx=8192)
    embedder = load_embedder(args.embedder)
    out: dict[str, Any] = {"model": args.model, "embedder": args.embedder}
    for arm in args.arms.split(","):
        out[arm] = run_arm(data, model, embedder, arm.strip())
    out["environment"] = environment()
    print(json.dumps(rounded(out, 3), ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
