"""LoCoMo retrieval benchmark: recall_any@k of Eva's recall on long dated conversations.

    python -m bench.locomo --data ../shared/data/locomo/locomo-dev.json --mode turns --k 1,5,10
    python -m bench.locomo --data ... --mode observations
    python -m bench.locomo --data ... --mode turns,observations --embedder SPEC

For each conversation a fresh store (a temp file) on a :class:`ManualClock` ingests every turn
("Speaker: text", plus ``[shares a photo: <blip_caption>]`` when the turn carries an image) or
every observation, through :meth:`Memory.save` — the real write path, dedup included — with the
clock set to the turn's session date (``session_N_date_time``) plus one second per turn, so the
order inside a session is kept. Then the clock is set one day after the last session and every
question of categories 1–4 is asked (5, adversarial, is skipped).

recall_any@k = share of questions where at least one evidence turn (``dia_id``) maps to a record
among the top k. Dedup may merge near-identical turns into one record (that is the system's real
behaviour): every dia_id maps to the record its save returned, so a merged record answers for all
of its turns; merges are counted and reported.

Records are saved as kind ``fact``, importance 3: a conversation spans months, and ``event``
(half-life 7.5 days) would let age dominate relevance for anything older than a few weeks — the
benchmark measures retrieval, and ``--kind event`` is there to see that effect.

Scoring variants, per system:

* ``full`` — the real §4 selection: ``Memory.recall(query, OWNER_TRUSTED, top_k=max k)``, i.e.
  relevance × freshness × importance × frequency, top k, and the relative floor
  (``recall_floor``), which may return fewer than k records (``short_of_k`` says how often).
* ``relevance_only`` — relevance alone (no freshness/importance/frequency, no floor): the same
  store opened a second time with ``recall_floor=0``, every candidate recalled and ranked by
  ``Hit.relevance`` (ties: newer id first, as the core does).

Baselines on the same texts, one document per item (no dedup): bare bm25s with its own tokenizer
and the English Snowball stemmer, with stopwords "en" (``bm25s``) and without
(``bm25s_nostop``) — the README's reference (bm25s R@5 = 0.547, turn level, dev split).

Evidence is cleaned the same way for every system (README of the data): entries joined by
spaces, ``;`` or ``,`` are split; ``D:11:26`` → ``D11:26``; leading zeros are dropped
(``D30:05`` → ``D30:5``); ids that still name no turn are ignored; a question left with no
evidence is excluded (and counted).

``--embedder SPEC`` loads ``models.embedders.load_embedder(SPEC)`` and reports ``eva_hybrid``
(relevance = 0.5 BM25 + 0.5 calibrated cosine) beside ``eva_lexical`` on the same stores;
``--calibrate`` measures the background cosine ``b`` on each store after ingest (as
``eva calibrate`` does) instead of using the config default. ``--set KEY=VALUE`` overrides a
:class:`MemoryConfig` field for exploration (e.g. ``--set half_life_days=365``).
"""

from __future__ import annotations

import argparse
import calendar
import json
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from bench.common import Timer, emit, environment, latency_summary, parse_int_list, peak_rss_mb
from core.clock import ManualClock
from core.config import MemoryConfig
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.store.records import Source

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
DAY = 86_400.0
DEFAULT_START = 1_600_000_000.0  # used only when a file has no parsable session date at all

# ---------------------------------------------------------------------------------- parsing

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_DATE = re.compile(
    r"(?:(?P<h>\d{1,2})[:.](?P<m>\d{2})\s*(?P<ampm>[ap]\.?m\.?)?\s*(?:on\s+)?)?"
    r"(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+)\.?,?\s+(?P<year>\d{4})",
    re.IGNORECASE,
)
_DATE_MDY = re.compile(
    r"(?:(?P<h>\d{1,2})[:.](?P<m>\d{2})\s*(?P<ampm>[ap]\.?m\.?)?\s*(?:on\s+)?)?"
    r"(?P<month>[A-Za-z]+)\.?\s+(?P<day>\d{1,2}),?\s+(?P<year>\d{4})",
    re.IGNORECASE,
)


def parse_date(value: object) -> float | None:
    """ "1:56 pm on 8 May, 2023" → seconds since the epoch (UTC); None if not recognised.
    Also takes "8 May 2023", "May 8, 2023" and "10:37 am on May 8, 2023"."""
    if not isinstance(value, str):
        return None
    for pattern in (_DATE, _DATE_MDY):
        m = pattern.search(value.strip())
        if not m:
            continue
        month = _MONTHS.get(m["month"].lower())
        if month is None:
            continue
        hour = int(m["h"]) if m["h"] else 12
        minute = int(m["m"]) if m["m"] else 0
        ampm = (m["ampm"] or "").lower().replace(".", "")
        if ampm == "pm" and hour < 12:
            hour += 12
        elif ampm == "am" and hour == 12:
            hour = 0
        try:
            return float(
                calendar.timegm((int(m["year"]), month, int(m["day"]), hour, minute, 0, 0, 0, 0))
            )
        except (ValueError, OverflowError):
            return None
    return None


_DIA = re.compile(r"D:?0*(\d+):0*(\d+)", re.IGNORECASE)


def dia_ids(entry: object) -> list[str]:
    """Normalised dia_ids in an evidence entry (or an observation's id field): splits joined
    ids, ``D:11:26`` → ``D11:26``, ``D30:05`` → ``D30:5``; fragments that are not ids
    (a stray ``'D'``) give nothing. Lists are flattened."""
    if isinstance(entry, list | tuple):
        return [d for e in entry for d in dia_ids(e)]
    if not isinstance(entry, str):
        return []
    out = []
    for part in re.split(r"[\s;,]+", entry.strip()):
        m = _DIA.fullmatch(part)
        if m:
            out.append(f"D{int(m[1])}:{int(m[2])}")
    return out


def turn_text(turn: dict, captions: bool = True) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    speaker = str(turn.get("speaker", "")).strip()
    out = f"{speaker}: {text}" if speaker else text
    caption = turn.get("blip_caption")
    if captions and isinstance(caption, str) and caption.strip():
        out += f" [shares a photo: {' '.join(caption.split())}]"
    return out


@dataclass
class Item:
    """One unit to ingest: its text, the turns it stands for, and when it was said."""

    text: str
    dias: tuple[str, ...]
    at: float
    plain: str | None = None  # a turn without its photo caption (the README's bm25s reference)


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Item]
    observations: list[Item]
    questions: list[Question]
    excluded: int  # non-adversarial questions whose evidence names no turn
    evidence_dropped: int  # evidence ids that named no turn (ignored)
    end: float  # the moment questions are asked

    def items(self, mode: str) -> list[Item]:
        return self.turns if mode == "turns" else self.observations


def _session_numbers(conv: dict) -> list[int]:
    nums = set()
    for key, value in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(value, list):
            nums.add(int(m[1]))
    return sorted(nums)


def _session_times(conv: dict, numbers: Sequence[int]) -> dict[int, float]:
    """Each session's time; a missing or unparsable date is one day after the previous one."""
    times: dict[int, float] = {}
    parsed = {n: parse_date(conv.get(f"session_{n}_date_time")) for n in numbers}
    known = [t for t in parsed.values() if t is not None]
    prev = (min(known) - DAY) if known else DEFAULT_START
    for n in numbers:
        t = parsed[n]
        if t is None:
            t = prev + DAY
        times[n] = t
        prev = t
    return times


def load_conversation(
    sample: dict, index: int = 0, captions: bool = True, skip_speakers: frozenset[str] = frozenset()
) -> Conversation:
    """One conversation; turns of ``skip_speakers`` are left out (their ids then name no turn,
    so a question whose only evidence they were is excluded and counted)."""
    conv = sample.get("conversation") or {}
    numbers = _session_numbers(conv)
    times = _session_times(conv, numbers)
    turns: list[Item] = []
    known: set[str] = set()
    for n in numbers:
        for i, turn in enumerate(conv.get(f"session_{n}") or []):
            if not isinstance(turn, dict) or turn.get("speaker") in skip_speakers:
                continue
            turn_ids = tuple(dia_ids(turn.get("dia_id")))
            text = turn_text(turn, captions)
            if not turn_ids or not text.strip():
                continue
            known.update(turn_ids)
            turns.append(Item(text, turn_ids, times[n] + i, turn_text(turn, captions=False)))

    observations: list[Item] = []
    obs = sample.get("observation") or {}
    for key, value in obs.items() if isinstance(obs, dict) else ():
        m = re.fullmatch(r"session_(\d+)_observation", key)
        if not m or not isinstance(value, dict):
            continue
        n = int(m[1])
        base = times.get(n)
        if base is None:
            base = max(times.values()) if times else DEFAULT_START
        i = 0
        for facts in value.values():
            for fact in facts if isinstance(facts, list) else ():
                if isinstance(fact, list | tuple) and fact and isinstance(fact[0], str):
                    text, fact_ids = fact[0], dia_ids(list(fact[1:]))
                elif isinstance(fact, str):
                    text, fact_ids = fact, []
                else:
                    continue
                text = " ".join(text.split())
                if not text:
                    continue
                observations.append(Item(text, tuple(d for d in fact_ids if d in known), base + i))
                i += 1
    observations.sort(key=lambda it: it.at)

    questions: list[Question] = []
    excluded = dropped = 0
    for qa in sample.get("qa") or []:
        try:
            category = int(qa.get("category"))
        except (TypeError, ValueError):
            continue
        if category == ADVERSARIAL or not str(qa.get("question", "")).strip():
            continue
        raw = qa.get("evidence") or []
        ids = [d for e in (raw if isinstance(raw, list) else [raw]) for d in dia_ids(e)]
        good = frozenset(d for d in ids if d in known)
        dropped += sum(1 for d in ids if d not in known)
        if not good:
            excluded += 1
            continue
        questions.append(Question(str(qa["question"]).strip(), category, good))

    all_times = [t.at for t in turns] + [o.at for o in observations] + list(times.values())
    end = (max(all_times) if all_times else DEFAULT_START) + DAY
    return Conversation(
        str(sample.get("sample_id", f"conv-{index}")),
        turns,
        observations,
        questions,
        excluded,
        dropped,
        end,
    )


def load(
    path: str | Path, captions: bool = True, skip_speakers: Sequence[str] = ()
) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict):  # a single conversation
        data = [data]
    skip = frozenset(skip_speakers)
    return [load_conversation(s, i, captions, skip) for i, s in enumerate(data)]


# ---------------------------------------------------------------------------------- scoring


@dataclass
class Tally:
    """recall_any@k of one system/variant over the questions, overall and by category."""

    ks: Sequence[int]
    hits: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    n: int = 0
    cat_hits: dict[int, dict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    cat_n: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    latency: list[float] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)

    def add(
        self,
        q: Question,
        ranked_dias: Sequence[frozenset[str] | set[str]],
        seconds: float | None = None,
    ) -> None:
        self.n += 1
        self.cat_n[q.category] += 1
        self.returned.append(len(ranked_dias))
        if seconds is not None:
            self.latency.append(seconds)
        first = None
        for rank, dias in enumerate(ranked_dias):
            if q.evidence & dias:
                first = rank
                break
        for k in self.ks:
            if first is not None and first < k:
                self.hits[k] += 1
                self.cat_hits[q.category][k] += 1

    def report(self, with_returned: bool = False) -> dict[str, Any]:
        def share(h: int, n: int) -> float | None:
            return round(h / n, 4) if n else None

        out: dict[str, Any] = {
            "n": self.n,
            "recall_any": {f"@{k}": share(self.hits[k], self.n) for k in self.ks},
            "by_category": {
                f"{c} {CATEGORIES.get(c, '?')}": {
                    "n": self.cat_n[c],
                    "recall_any": {
                        f"@{k}": share(self.cat_hits[c][k], self.cat_n[c]) for k in self.ks
                    },
                }
                for c in sorted(self.cat_n)
            },
            "latency": latency_summary(self.latency),
        }
        if with_returned and self.returned:
            kmax = max(self.ks)
            out["mean_returned"] = round(sum(self.returned) / len(self.returned), 3)
            out["short_of_k"] = {
                f"@{k}": share(sum(1 for r in self.returned if r < k), len(self.returned))
                for k in self.ks
            }
            out["note"] = (
                f"top_k={kmax} asked; the relative floor may return fewer records "
                "(short_of_k: share of questions with fewer than k returned)"
            )
        return out


# ---------------------------------------------------------------------------------- systems


def _bm25s_ranker(texts: list[str], stopwords: str | None):
    """A bare bm25s index over the texts; returns query -> ranked item indices (positive scores)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    sw: str | list[str] = stopwords or []
    corpus = bm25s.tokenize(texts, stopwords=sw, stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    vocab = corpus.vocab

    def rank(query: str, k: int) -> list[int]:
        toks = bm25s.tokenize(
            [query], stopwords=sw, stemmer=stemmer, return_ids=False, show_progress=False
        )[0]
        ids = [vocab[t] for t in toks if t in vocab]
        if not ids:
            return []
        scores = retriever.get_scores(ids)
        return [int(i) for i in _argtop(scores, min(k, len(scores))) if scores[i] > 0]

    return rank


def _argtop(scores, k: int):
    import numpy as np

    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


def _load_embedder(spec: str):
    from models.embedders import load_embedder  # lazy: the bench works without models/

    return load_embedder(spec)


def run_mode(
    convs: list[Conversation],
    mode: str,
    ks: Sequence[int],
    *,
    kind: str = "fact",
    importance: int = 3,
    embedder: Any = None,
    with_bm25s: bool = True,
    overrides: dict[str, Any] | None = None,
    calibrate: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    max_k = max(ks)
    overrides = dict(overrides or {})
    items_all = [it for c in convs for it in c.items(mode)]
    longest = max((len(it.text) for it in items_all), default=0)
    base_cfg = MemoryConfig(**overrides)
    max_chars = max(base_cfg.max_chars, longest)
    cfg = replace(base_cfg, max_chars=max_chars)
    rel_cfg = replace(cfg, recall_floor=0.0)

    systems: dict[str, dict[str, Tally]] = {
        "eva_lexical": {"full": Tally(ks), "relevance_only": Tally(ks)}
    }
    if embedder is not None:
        systems["eva_hybrid"] = {"full": Tally(ks), "relevance_only": Tally(ks)}
    # name -> (stopwords, use the caption-free text of turns)
    baselines: dict[str, tuple[str | None, bool]] = {}
    if with_bm25s:
        baselines = {"bm25s": ("en", False), "bm25s_nostop": (None, False)}
        if mode == "turns" and any(it.plain != it.text for it in items_all):
            baselines["bm25s_no_caption"] = ("en", True)
    base_tallies = {name: Tally(ks) for name in baselines}

    n_items = n_records = merged = updated = embed_errors = 0
    backgrounds: list[float] = []
    calibration_errors: list[str] = []
    save_times: list[float] = []
    ingest_seconds = 0.0
    uncovered = 0  # questions none of whose evidence turns any item stands for
    per_conv = []
    for conv in convs:
        items = conv.items(mode)
        covered = {d for it in items for d in it.dias}
        uncovered += sum(1 for q in conv.questions if not (q.evidence & covered))
        clock = ManualClock(items[0].at if items else conv.end)
        with tempfile.TemporaryDirectory(prefix="eva-locomo-") as tmp:
            path = Path(tmp) / "memory.db"
            mem = Memory.open(path, cfg, clock, embedder)
            rec_dias: dict[int, set[str]] = defaultdict(set)
            conv_merged = 0
            with Timer() as t_ingest:
                for it in items:
                    clock.set(it.at)
                    t0 = time.perf_counter()
                    res = mem.save(
                        it.text,
                        OWNER_TRUSTED,
                        kind=kind,
                        importance=importance,
                        source=Source.DIALOGUE,
                    )
                    save_times.append(time.perf_counter() - t0)
                    rec_dias[res.id].update(it.dias)
                    if res.status != "created":
                        conv_merged += 1
                        updated += res.status == "updated"
            ingest_seconds += t_ingest.seconds
            if embedder is not None:
                if calibrate:
                    from core.recall.calibration import calibrate as measure_background

                    try:
                        measure_background(mem, apply=True)  # what `eva calibrate` does
                    except Exception as e:  # too few records, embedder failure: keep default b
                        calibration_errors.append(f"{conv.sample_id}: {e}")
                st = mem.status()
                if st.background is not None:
                    backgrounds.append(st.background)
                embed_errors += st.error is not None
            n_items += len(items)
            n_records += len(rec_dias)
            merged += conv_merged
            frozen = {rid: frozenset(d) for rid, d in rec_dias.items()}
            empty: frozenset[str] = frozenset()
            clock.set(conv.end)
            mem_rel = Memory.open(path, rel_cfg, clock, embedder)
            n_live = max(1, mem.count())
            for sys_name, tallies in systems.items():
                use_vectors = sys_name == "eva_hybrid"
                for q in conv.questions:
                    t0 = time.perf_counter()
                    hits = mem.recall(q.text, OWNER_TRUSTED, top_k=max_k, use_vectors=use_vectors)
                    dt = time.perf_counter() - t0
                    tallies["full"].add(q, [frozen.get(h.id, empty) for h in hits], dt)
                    t0 = time.perf_counter()
                    allhits = mem_rel.recall(
                        q.text, OWNER_TRUSTED, top_k=n_live, use_vectors=use_vectors
                    )
                    allhits.sort(key=lambda h: (-h.relevance, -h.id))
                    dt = time.perf_counter() - t0
                    tallies["relevance_only"].add(
                        q, [frozen.get(h.id, empty) for h in allhits[:max_k]], dt
                    )
            mem_rel.close()
            mem.close()
        item_dias = [frozenset(it.dias) for it in items]
        for name, (sw, plain) in baselines.items():
            texts = [(it.plain or it.text) if plain else it.text for it in items]
            if not texts:
                for q in conv.questions:
                    base_tallies[name].add(q, [], 0.0)
                continue
            rank = _bm25s_ranker(texts, sw)
            for q in conv.questions:
                t0 = time.perf_counter()
                top = rank(q.text, max_k)
                dt = time.perf_counter() - t0
                base_tallies[name].add(q, [item_dias[i] for i in top], dt)
        per_conv.append(
            {
                "sample_id": conv.sample_id,
                "items": len(items),
                "records": len(rec_dias),
                "merged": conv_merged,
                "questions": len(conv.questions),
                "excluded": conv.excluded,
            }
        )
        if progress:
            progress(f"{mode}: {conv.sample_id} done ({len(items)} items, {conv_merged} merged)")

    out_systems: dict[str, Any] = {}
    for sys_name, tallies in systems.items():
        out_systems[sys_name] = {
            "full": tallies["full"].report(with_returned=True),
            "relevance_only": tallies["relevance_only"].report(),
        }
        out_systems[sys_name]["relevance_only"]["note"] = (
            "relevance alone, no freshness/importance/frequency, no floor; latency includes "
            "recalling every candidate (not comparable with full)"
        )
    if "eva_hybrid" in out_systems:
        out_systems["hybrid_minus_lexical"] = {
            variant: {
                key: round(h - lx, 4) if h is not None and lx is not None else None
                for key, h, lx in (
                    (
                        kk,
                        out_systems["eva_hybrid"][variant]["recall_any"][kk],
                        out_systems["eva_lexical"][variant]["recall_any"][kk],
                    )
                    for kk in out_systems["eva_lexical"][variant]["recall_any"]
                )
            }
            for variant in ("full", "relevance_only")
        }
    for name, tally in base_tallies.items():
        out_systems[name] = tally.report()
        sw, plain = baselines[name]
        out_systems[name]["note"] = (
            "bare bm25s, own tokenizer + English Snowball stemmer, "
            + ("stopwords 'en'" if sw else "no stopwords")
            + (", turns without photo captions (the README's reference setting)" if plain else "")
            + ", one document per item (no dedup); only positive scores ranked"
        )
    n_questions = sum(len(c.questions) for c in convs)
    return {
        "items": n_items,
        "records": n_records,
        "merged": merged,
        "merged_updated_content": updated,
        "max_item_chars": longest,
        "max_chars": max_chars,
        "max_chars_raised": max_chars != base_cfg.max_chars,
        "questions": {
            "n": n_questions,
            "excluded": sum(c.excluded for c in convs),
            "evidence_ids_ignored": sum(c.evidence_dropped for c in convs),
            "evidence_not_covered_by_any_item": uncovered,
            "by_category": dict(
                sorted(
                    Counter(
                        f"{q.category} {CATEGORIES.get(q.category, '?')}"
                        for c in convs
                        for q in c.questions
                    ).items()
                )
            ),
        },
        "ingest": {"seconds": round(ingest_seconds, 3), "save": latency_summary(save_times)},
        "embedder": None
        if embedder is None
        else {
            "name": getattr(embedder, "name", None),
            "background_cosine": (
                round(sum(backgrounds) / len(backgrounds), 4) if backgrounds else None
            ),
            "background_calibrated": calibrate,
            "calibration_errors": calibration_errors,
            "conversations_with_embedding_errors": embed_errors,
        },
        "systems": out_systems,
        "conversations": per_conv,
    }


def run(
    data: str | Path,
    modes: Sequence[str] = ("turns",),
    ks: Sequence[int] = (1, 5, 10),
    *,
    embedder_spec: str | None = None,
    kind: str = "fact",
    importance: int = 3,
    limit: int | None = None,
    with_bm25s: bool = True,
    captions: bool = True,
    overrides: dict[str, Any] | None = None,
    calibrate: bool = False,
    skip_speakers: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError("k must be positive")
    convs = load(data, captions, skip_speakers)
    if limit:
        convs = convs[:limit]
    embedder = _load_embedder(embedder_spec) if embedder_spec else None
    cfg = MemoryConfig(**(overrides or {}))
    result: dict[str, Any] = {
        "bench": "locomo",
        "data": str(data),
        "conversations": len(convs),
        "k": ks,
        "settings": {
            "kind": kind,
            "photo_captions": captions,
            "skipped_speakers": sorted(set(skip_speakers)),
            "importance": importance,
            "recall_floor": cfg.recall_floor,
            "dedup_jaccard": cfg.dedup_jaccard,
            "half_life_days": cfg.half_life_days,
            "clock": "session date + 1 s per turn; questions asked 1 day after the last item",
            "context": "OWNER_TRUSTED",
            "config_overrides": dict(overrides or {}),
            "embedder": getattr(embedder, "name", None) if embedder else None,
        },
        "modes": {},
    }
    for mode in modes:
        if mode not in ("turns", "observations"):
            raise ValueError(f"unknown mode {mode!r} (turns or observations)")
        result["modes"][mode] = run_mode(
            convs,
            mode,
            ks,
            kind=kind,
            importance=importance,
            embedder=embedder,
            with_bm25s=with_bm25s,
            overrides=overrides,
            calibrate=calibrate,
            progress=progress,
        )
    result["peak_rss_mb"] = peak_rss_mb()
    result["environment"] = environment()
    return result


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """["half_life_days=365", "recall_floor=0"] -> typed MemoryConfig overrides."""
    types = {f.name: type(getattr(MemoryConfig(), f.name)) for f in fields(MemoryConfig)}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in types:
            raise SystemExit(
                f"--set {pair!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(types))}"
            )
        typ = types[key]
        if value.strip().lower() in ("none", "null", ""):
            out[key] = None
        elif typ is bool:
            out[key] = value.strip().lower() in ("1", "true", "yes")
        elif typ in (int, float):
            out[key] = typ(float(value)) if typ is int else float(value)
        else:  # a default of None (an optional number, e.g. lexical_weight): a number if it is one
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a JSON file in LoCoMo's format")
    ap.add_argument(
        "--mode",
        default="turns",
        help="turns, observations, or both comma-separated (default: turns)",
    )
    ap.add_argument("--k", default="1,5,10", help="comma-separated k values (default 1,5,10)")
    ap.add_argument(
        "--embedder",
        default=None,
        help="an embedder spec for models.embedders.load_embedder (hybrid vs lexical)",
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="with --embedder: measure the background cosine b on each store after "
        "ingest (core.recall.calibration, as `eva calibrate` does) instead of the "
        "config default",
    )
    ap.add_argument("--kind", default="fact", choices=("fact", "event"))
    ap.add_argument("--importance", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--no-bm25s", action="store_true", help="skip the bare bm25s baselines")
    ap.add_argument(
        "--no-captions",
        action="store_true",
        help="ingest turns without their [shares a photo: …] captions",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a MemoryConfig field, e.g. --set half_life_days=365 "
        "(repeatable; for exploring, the defaults are the SPEC's)",
    )
    ap.add_argument(
        "--skip-speaker",
        action="append",
        default=[],
        metavar="NAME",
        help="leave this speaker's turns out of the store (repeatable), e.g. Eva "
        "for bench/data/bilingual.json: Eva never saves her own replies",
    )
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.mode.split(",") if m.strip()]
    if modes == ["both"]:
        modes = ["turns", "observations"]
    import sys

    def progress(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    result = run(
        args.data,
        modes,
        parse_int_list(args.k),
        embedder_spec=args.embedder,
        kind=args.kind,
        importance=args.importance,
        limit=args.limit,
        with_bm25s=not args.no_bm25s,
        captions=not args.no_captions,
        overrides=parse_overrides(args.set),
        calibrate=args.calibrate,
        skip_speakers=args.skip_speaker,
        progress=progress,
    )
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
