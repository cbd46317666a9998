"""Message search and chat import at the size an owner reaches (issue 28 items 6 and 7).

    python -m bench.chat_search [--messages 10000] [--queries 300] [--import-messages 5000]
                                [--seed 7] [--out FILE]

- **Search**: a store on disk with ``--messages`` messages in 100 chats (Russian, English and
  mixed text from :class:`bench.scale.Corpus`, as owner and Eva take turns), then ``--queries``
  searches the way the owner types them: one word, two words, a word in another form (its
  stem plus another ending), in capitals, a half-typed word, and words that are in no message.
  Each is timed through :meth:`core.chat.transcript.Transcript.search` (FTS5, both passes, the
  snippets and the chat labels). Target: p95 ≤ 50 ms over 10,000 messages.
- **Import**: a ChatGPT ``conversations.json`` of ``--import-messages`` messages (100
  conversations, each a mapping tree with a system node, as ChatGPT writes them) is read,
  checked and written into a fresh store (:mod:`core.chat.imports`, one transaction), without
  drafting. ``import_seconds`` is the whole of it. Target: ≤ 10 s for 5,000 messages.

Prints JSON: ``messages``, ``queries``, ``p50_ms``, ``p95_ms``, ``max_ms``, ``mean_hits``,
``import_seconds`` (and its parse and write parts), ``targets`` and ``environment``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import Timer, emit, environment, latency_summary
from bench.scale import Corpus
from core import ManualClock, Memory, MemoryConfig
from core import text as T
from core.chat import imports as io
from core.chat.chats import Chats
from core.chat.transcript import Transcript

T0 = 1_780_000_000.0
CHATS = 100
SEARCH_P95_MS = 50.0
IMPORT_SECONDS = 10.0


def _store(path: Path) -> Memory:
    return Memory.open(path, MemoryConfig(embedding_model=None), ManualClock(T0))


def fill(mem: Memory, texts: list[str]) -> None:
    """``texts`` as messages of :data:`CHATS` chats, owner and Eva in turn (one transaction
    through the import path: filling is not what is measured)."""
    per = max(1, len(texts) // CHATS)
    chats = []
    for c in range(0, len(texts), per):
        part = texts[c : c + per]
        msgs = [
            io.ImportedMessage(
                "user" if k % 2 == 0 else "assistant", t, T0 - 86_400 * 365 + (c + k) * 60.0
            )
            for k, t in enumerate(part)
        ]
        chats.append(io.ImportedChat(f"Chat {c // per + 1}", "default", msgs))
    mem.attach(Chats).import_chats(chats, "bench", T0)


def make_queries(corpus: Corpus, texts: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out: list[str] = []
    kinds = ("one", "two", "form", "caps", "prefix", "miss")
    for i in range(n):
        kind = kinds[i % len(kinds)]
        words = [
            w
            for w in T.tokens(texts[int(rng.integers(len(texts)))])
            if not T.is_stopword(w) and not w.isdigit() and len(w) > 3
        ]
        if kind == "miss" or not words:
            out.append(f"zqx{i}nothing vq{i}where")
            continue
        w = words[int(rng.integers(len(words)))]
        if kind == "one":
            out.append(w)
        elif kind == "two":
            out.append(" ".join(words[:2]) if len(words) > 1 else w)
        elif kind == "form":
            stem = T.stem_token(w)
            end = "ом" if any("а" <= ch <= "я" for ch in w) else "s"
            out.append(stem + end)
        elif kind == "caps":
            out.append(w.upper())
        else:
            out.append(w[: max(3, len(w) - 2)])
    return out


def chatgpt_export(texts: list[str], conversations: int) -> list[dict[str, Any]]:
    """A ChatGPT ``conversations.json`` holding ``texts`` as alternating user/assistant
    messages of ``conversations`` conversations."""
    per = max(1, len(texts) // conversations)
    out = []
    for c in range(0, len(texts), per):
        part = texts[c : c + per]
        root = f"root-{c}"
        mapping: dict[str, Any] = {
            root: {"id": root, "message": None, "parent": None, "children": [f"sys-{c}"]}
        }
        mapping[f"sys-{c}"] = {
            "id": f"sys-{c}",
            "parent": root,
            "children": [],
            "message": {
                "id": f"sys-{c}",
                "author": {"role": "system", "metadata": {}},
                "create_time": None,
                "content": {"content_type": "text", "parts": [""]},
                "metadata": {"is_visually_hidden_from_conversation": True},
                "recipient": "all",
            },
        }
        parent = f"sys-{c}"
        for k, t in enumerate(part):
            node = f"m-{c}-{k}"
            mapping[parent]["children"].append(node)
            mapping[node] = {
                "id": node,
                "parent": parent,
                "children": [],
                "message": {
                    "id": node,
                    "author": {
                        "role": "user" if k % 2 == 0 else "assistant",
                        "name": None,
                        "metadata": {},
                    },
                    "create_time": T0 - 86_400 * 200 + (c + k) * 60.0,
                    "update_time": None,
                    "content": {"content_type": "text", "parts": [t]},
                    "status": "finished_successfully",
                    "end_turn": k % 2 == 1,
                    "weight": 1.0,
                    "metadata": {"model_slug": "gpt-4o"} if k % 2 else {},
                    "recipient": "all",
                },
            }
            parent = node
        out.append(
            {
                "title": f"Conversation {c // per + 1}",
                "create_time": T0 - 86_400 * 200,
                "update_time": T0 - 86_400 * 199,
                "mapping": mapping,
                "current_node": parent,
                "id": f"conv-{c}",
            }
        )
    return out


def run(
    messages: int = 10_000, queries: int = 300, import_messages: int = 5_000, seed: int = 7
) -> dict[str, Any]:
    corpus = Corpus(seed=seed)
    texts = corpus.records(messages, seed=seed)
    result: dict[str, Any] = {"bench": "chat_search", "messages": messages}
    with tempfile.TemporaryDirectory(prefix="eva-bench-chat-") as d:
        with _store(Path(d) / "search.db") as mem:
            with Timer() as fill_t:
                fill(mem, texts)
            tr = mem.attach(Transcript)
            qs = make_queries(corpus, texts, queries, seed + 1)
            for q in qs[:10]:  # warm the page cache as a running app has it
                tr.search(q)
            times, hits = [], []
            for q in qs:
                t0 = time.perf_counter()
                found = tr.search(q)
                times.append(time.perf_counter() - t0)
                hits.append(len(found))
            lat = latency_summary(times)
        result.update(
            {
                "queries": len(qs),
                "p50_ms": lat["p50_ms"],
                "p95_ms": lat["p95_ms"],
                "max_ms": lat["max_ms"],
                "mean_ms": lat["mean_ms"],
                "mean_hits": round(sum(hits) / len(hits), 2),
                "queries_with_hits": sum(1 for h in hits if h),
                "fill_seconds": round(fill_t.seconds, 3),
            }
        )
        # import of a ChatGPT export, without drafting
        path = Path(d) / "conversations.json"
        path.write_text(
            json.dumps(
                chatgpt_export(corpus.records(import_messages, seed + 2), CHATS), ensure_ascii=False
            ),
            encoding="utf-8",
        )
        t0 = time.perf_counter()
        plan = io.parse_file(path, T0)
        parsed = time.perf_counter()
        with _store(Path(d) / "import.db") as mem:
            ids, _ = mem.attach(Chats).import_chats(plan.chats, plan.format, T0)
        done = time.perf_counter()
        result.update(
            {
                "import_seconds": round(done - t0, 3),
                "import_parse_seconds": round(parsed - t0, 3),
                "import_write_seconds": round(done - parsed, 3),
                "import_messages": plan.messages,
                "import_chats": len(ids),
                "import_file_mb": round(path.stat().st_size / 1e6, 2),
            }
        )
    result["targets"] = {
        "search_p95_ms": {"target": SEARCH_P95_MS, "pass": result["p95_ms"] <= SEARCH_P95_MS},
        "import_seconds": {
            "target": IMPORT_SECONDS,
            "pass": result["import_seconds"] <= IMPORT_SECONDS,
        },
    }
    result["environment"] = environment()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--import-messages", type=int, default=5_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", help="also write the JSON here")
    a = p.parse_args(argv)
    emit(run(a.messages, a.queries, a.import_messages, a.seed), a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
