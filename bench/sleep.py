"""Sleep at scale (SPEC §7): clustering time, cluster sizes, model calls, and a second night.

    python -m bench.sleep --memories 1000,10000 [--seed 7] [--dim 384] [--no-vectors]
    python -m bench.sleep --memories 10000 --model qwen2.5-coder-1.5b [--changed 0.01] [--threads N]

For each size a fresh store (a temp file, a :class:`ManualClock`) gets a synthetic corpus of
mixed Russian/English records: unrelated "topics", near-duplicates of some of them (one or two
words changed), runs of similar events, and old low-importance trivia. Vectors come from a
deterministic hashed bag-of-stems embedder (``--dim``), so the semantic edges run through the
same blocked matrix products as with a real model (only the texts' meaning is cruder).

Reported per size: the clustering phase alone (seconds, edges, cluster-size histogram), then a
whole night with a no-op planner (every call answers "no changes") — its model calls, phase
timings and total time — and a second night one day later on the unchanged corpus, whose model
calls must be 0 (settled clusters are not sent; kept forgetting candidates and an unchanged
corpus for the kinds phase are not asked about again).

``--model`` (issue 27 item 4, a night at scale): the first night settles the corpus with the
no-op planner, as earlier nights would have; then ``--changed`` of it (1 % by default) changes
since that night — half of it rewritten in place (a word changed), half new records that repeat
an existing one with one value changed (what a supersession or a duplicate looks like) — and
the next night runs with the real model as the planner, once the new records are
``keep_recent`` old (a younger record is neither merged nor replaced, so sleep leaves its
questions for a later night instead of asking them twice). Printed under ``"changed_night"``:
``candidate_seconds`` (the clustering phase plus the review's search for what to ask, before
any call), ``model_calls``, ``seconds``, ``minutes``, the phases; and ``"after"``: one more
night a day later on the unchanged store, whose calls must be 0.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import NoopPlanner, environment, peak_rss_mb, rounded
from core import OWNER_TRUSTED
from core import text as core_text
from core.clock import ManualClock
from core.config import MemoryConfig, SleepConfig
from core.embedding import Progress, embed_batches
from core.memory.facade import Memory
from core.sleep import Sleeper, clustering

DAY = 86_400.0
T_NOW = 1_780_000_000.0


def _words(s: str) -> list[str]:
    return s.split()


EN = _words(
    "garden piano river coffee train winter book letter doctor market bicycle museum sister "
    "brother office project deadline concert holiday mountain island kitchen recipe football "
    "guitar violin painting camera laptop keyboard server python database meeting dentist "
    "passport ticket airport hotel beach forest lake village city bridge tower castle church "
    "school university teacher student exam lecture library novel poem story movie series "
    "podcast song album band festival theatre opera ballet dance yoga running swimming tennis "
    "chess puzzle game friend neighbour colleague manager client budget salary rent mortgage "
    "insurance bank loan tax invoice contract lawyer court judge police fire doctor nurse "
    "hospital clinic medicine pill vitamin diet sugar coffee tea juice wine beer bread cheese "
    "apple orange banana cherry strawberry tomato potato carrot onion garlic pepper salt"
)
RU = _words(
    "сад пианино река кофе поезд зима книга письмо врач рынок велосипед музей сестра брат "
    "офис проект срок концерт отпуск гора остров кухня рецепт футбол гитара скрипка картина "
    "камера ноутбук клавиатура сервер база встреча стоматолог паспорт билет аэропорт гостиница "
    "пляж лес озеро деревня город мост башня замок школа университет учитель студент экзамен "
    "лекция библиотека роман стихи рассказ фильм сериал песня альбом группа фестиваль театр "
    "опера балет танец йога бег плавание теннис шахматы головоломка игра друг сосед коллега "
    "начальник клиент бюджет зарплата аренда ипотека страховка банк кредит налог счёт договор "
    "юрист суд полиция больница клиника лекарство таблетка витамин диета сахар чай сок вино "
    "хлеб сыр яблоко апельсин банан вишня клубника помидор картошка морковь лук чеснок перец"
)
VERBS_EN = (
    "likes",
    "hates",
    "bought",
    "visited",
    "planned",
    "forgot",
    "fixed",
    "booked",
    "recommended",
    "remembers",
)
VERBS_RU = ("любит", "купил", "посетил", "планирует", "забыл", "починил", "заказал", "советует")


class HashedEmbedder:
    """Deterministic bag-of-stems vectors (random-sign hashing), unit length."""

    def __init__(self, dim: int = 384) -> None:
        self.name = f"bench-hash-{dim}"
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for s in core_text.stems(t):
                h = int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 40) & 1 else -1.0
            n = np.linalg.norm(out[i])
            if n:
                out[i] /= n
            else:
                out[i, 0] = 1.0
        return out

    def embed_many(
        self, texts: list[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        return embed_batches(self.embed, self.dim, texts, batch_size, progress)


SYLLABLES_EN = (
    "ka",
    "lo",
    "mi",
    "ren",
    "tor",
    "va",
    "sel",
    "din",
    "bro",
    "quen",
    "fal",
    "mur",
    "pes",
    "gol",
    "tri",
    "zan",
    "hel",
    "vik",
    "nor",
    "bel",
)
SYLLABLES_RU = (
    "ва",
    "ло",
    "ми",
    "рен",
    "тор",
    "ка",
    "сел",
    "дин",
    "бро",
    "жен",
    "фал",
    "мур",
    "пес",
    "гол",
    "три",
    "зан",
    "хел",
    "вик",
    "нор",
    "бел",
)


class Vocabulary:
    """Real words as the head and made-up names (people, places, things) as a long tail,
    drawn with a Zipf–Mandelbrot law (a flattened head: stop words are already gone) — roughly
    how content words spread over a personal corpus."""

    def __init__(self, rng: random.Random, tail: int = 20_000, s: float = 1.05) -> None:
        words = list(dict.fromkeys(EN + RU))
        rng.shuffle(words)
        seen = set(words)
        target = len(words) + tail
        while len(words) < target:
            syl = SYLLABLES_EN if rng.random() < 0.5 else SYLLABLES_RU
            w = "".join(rng.choice(syl) for _ in range(rng.randint(2, 4)))
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.words = words
        weights = [1.0 / (k + 30) ** s for k in range(len(words))]  # Zipf–Mandelbrot
        total = sum(weights)
        acc, cum = 0.0, []
        for w in weights:
            acc += w / total
            cum.append(acc)
        self.cum = cum
        self.rng = rng

    def sample(self, k: int) -> list[str]:
        out: list[str] = []
        while len(out) < k:
            w = self.words[
                min(len(self.words) - 1, bisect.bisect_left(self.cum, self.rng.random()))
            ]
            if w not in out:
                out.append(w)
        return out


def synthetic_corpus(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` records: ~80 % distinct topics, ~10 % near-duplicates of them (one or two words
    changed), ~6 % events in runs of 3 similar ones, ~4 % old trivia (importance 1–2, over a
    year old and never recalled: forgetting candidates)."""
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    out: list[dict[str, Any]] = []
    bases: list[str] = []

    def sentence() -> str:
        words = " ".join(vocab.sample(rng.randint(5, 9)))
        if rng.random() < 0.5:
            return f"The owner {rng.choice(VERBS_EN)} {words}"
        return f"Хозяин {rng.choice(VERBS_RU)} {words}"

    while len(out) < n:
        roll = rng.random()
        age = rng.uniform(3, 200) * DAY
        if roll < 0.80 or not bases:
            s = sentence()
            bases.append(s)
            out.append(
                {
                    "content": s,
                    "kind": "fact",
                    "importance": rng.choice((3, 3, 4)),
                    "created_at": T_NOW - age,
                }
            )
        elif roll < 0.90:
            words = rng.choice(bases).split()
            for _ in range(rng.randint(1, 2)):
                words[rng.randrange(2, len(words))] = vocab.sample(1)[0]
            out.append(
                {
                    "content": " ".join(words),
                    "kind": "fact",
                    "importance": 3,
                    "created_at": T_NOW - age,
                }
            )
        elif roll < 0.96:
            what = " ".join(vocab.sample(4))
            for k in range(3):
                out.append(
                    {
                        "content": f"Went to {what} with {vocab.sample(1)[0]}, day {k + 1}",
                        "kind": "event",
                        "importance": 2,
                        "created_at": T_NOW - age + k * DAY,
                    }
                )
        else:
            out.append(
                {
                    "content": f"Trivia: {' '.join(vocab.sample(4))}",
                    "kind": "fact",
                    "importance": rng.choice((1, 2)),
                    "created_at": T_NOW - 400 * DAY,
                }
            )
    return out[:n]


def _phases(run: Any) -> dict[str, Any]:
    return {
        p.name: {"seconds": p.seconds, "calls": p.calls, "status": p.status} for p in run.phases
    }


def _candidate_seconds(run: Any) -> float | None:
    """The clustering phase plus the review's candidate search (its journal note)."""
    total, found = 0.0, False
    for p in run.phases:
        if p.name == "clustering":
            total += p.seconds
            found = True
        m = re.search(r"candidates found in ([\d.]+) s", p.note or "")
        if p.name == "review" and m:
            total += float(m.group(1))
    return total if found else None


def changed_night(
    mem: Memory, sleeper: Sleeper, planner: Any, clock: ManualClock, changed: float, seed: int
) -> dict[str, Any]:
    """Change ``changed`` of the settled store, then a night with the real planner, then one
    more on the unchanged store (see the module's doc)."""
    rng = random.Random(seed + 1)
    vocab = Vocabulary(rng)
    live = [r for r in mem.corpus() if r.kind.value == "fact"]
    k = max(2, round(changed * len(live)))
    picked = rng.sample(live, k)
    rewritten = added = 0
    for i, r in enumerate(picked):
        words = r.content.split()
        words[rng.randrange(2, len(words))] = vocab.sample(1)[0]
        if i % 2:
            mem.update(r.id, OWNER_TRUSTED, content=" ".join(words))
            rewritten += 1
        else:
            mem.save(" ".join(words), OWNER_TRUSTED)
            added += 1
    # the night comes once the new records are old enough to be merged or replaced
    # (keep_recent): younger ones are left for a later night, not asked twice
    clock.advance(max(DAY, sleeper.config.keep_recent_seconds))
    c0 = planner.calls
    t0 = time.perf_counter()
    night = sleeper.run(reason="bench")
    seconds = time.perf_counter() - t0
    calls = planner.calls - c0
    clock.advance(DAY)
    c1 = planner.calls
    t0 = time.perf_counter()
    after = sleeper.run(reason="bench")
    after_s = time.perf_counter() - t0
    return {
        "changed": {"records": k, "rewritten": rewritten, "added": added},
        "changed_night": {
            "asked": [plan for p in night.phases if p.calls for plan in p.plans],
            "notes": {p.name: p.note for p in night.phases},
            "candidate_seconds": _candidate_seconds(night),
            "model_calls": calls,
            "seconds": seconds,
            "minutes": seconds / 60,
            "status": night.status,
            "phases": _phases(night),
        },
        "after": {
            "model_calls": planner.calls - c1,
            "seconds": after_s,
            "status": after.status,
            "phases": _phases(after),
            "asked": [plan for p in after.phases if p.calls for plan in p.plans],
        },
    }


def bench_size(
    n: int, seed: int, dim: int | None, model: Any = None, changed: float = 0.01
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(T_NOW)
        emb = HashedEmbedder(dim) if dim else None
        mem = Memory.open(Path(tmp) / "memory.db", MemoryConfig(), clock, embedder=emb)
        t0 = time.perf_counter()
        mem.import_records(synthetic_corpus(n, seed))
        load_s = time.perf_counter() - t0
        cfg = SleepConfig(min_memories=0, max_calls=10**9, max_ops=10**6)

        corpus = {r.id: r for r in mem.corpus()}
        stems = mem.stem_sets()
        t0 = time.perf_counter()
        result = clustering.cluster(
            stems,
            jaccard=cfg.cluster_jaccard,
            cosine=cfg.cluster_cosine,
            max_cluster=cfg.max_cluster,
            vectors=mem.vector_rows(),
            groups={i: r.scope for i, r in corpus.items()},
            max_neighbours=cfg.max_neighbours,
        )
        cluster_s = time.perf_counter() - t0

        planner = NoopPlanner()
        sleeper = Sleeper(mem, planner, cfg, clock)
        t0 = time.perf_counter()
        night1 = sleeper.run(reason="bench")
        night1_s = time.perf_counter() - t0
        calls1 = planner.calls
        clock.advance(DAY)
        t0 = time.perf_counter()
        night2 = sleeper.run(reason="bench")
        night2_s = time.perf_counter() - t0
        calls2 = planner.calls - calls1
        at_scale = (
            changed_night(mem, Sleeper(mem, model, cfg, clock), model, clock, changed, seed)
            if model is not None
            else {}
        )
        mem.close()
    return {
        "memories": n,
        "load_seconds": load_s,
        "clustering": {
            "seconds": cluster_s,
            "lexical_edges": result.lexical_edges,
            "semantic_edges": result.semantic_edges,
            "cut_edges": result.cut_edges,
            "clusters": len(result.clusters),
            "clustered_records": sum(len(c) for c in result.clusters),
            "size_histogram": {str(k): v for k, v in result.histogram().items()},
        },
        "night1": {
            "model_calls": calls1,
            "seconds": night1_s,
            "status": night1.status,
            "phases": _phases(night1),
        },
        "night2": {
            "model_calls": calls2,
            "seconds": night2_s,
            "status": night2.status,
            "phases": _phases(night2),
        },
        "second_night_zero_calls": calls2 == 0,
        **at_scale,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sleep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", default="1000,10000", help="comma-separated corpus sizes")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dim", type=int, default=384, help="vector size of the hashed embedder")
    ap.add_argument("--no-vectors", action="store_true", help="lexical edges only")
    ap.add_argument(
        "--model",
        default=None,
        help="packaged model name or GGUF path: a night with it after --changed of "
        "the settled store changed",
    )
    ap.add_argument(
        "--changed",
        type=float,
        default=0.01,
        help="share of the store changed before the --model night (default 0.01)",
    )
    ap.add_argument("--threads", type=int, default=None, help="the model's threads")
    args = ap.parse_args(argv)
    if not 0 < args.changed <= 1:
        ap.error("--changed must be in (0, 1]")
    sizes = [int(x) for x in args.memories.split(",") if x.strip()]
    model = None
    if args.model:
        from bench.sleep_quality import load_planner

        model = load_planner(args.model, threads=args.threads)
    results = [
        bench_size(n, args.seed, None if args.no_vectors else args.dim, model, args.changed)
        for n in sizes
    ]
    out = {
        "benchmark": "sleep",
        "environment": environment(),
        "results": results,
        "peak_rss_mb": peak_rss_mb(),
    }
    print(json.dumps(rounded(out, 3), ensure_ascii=False, indent=2))
    return (
        0
        if all(
            r["second_night_zero_calls"] and r.get("after", {}).get("model_calls", 0) == 0
            for r in results
        )
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
