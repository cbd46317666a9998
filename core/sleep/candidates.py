"""What sleep asks the model about (SPEC §7.3, issue 17): arithmetic proposes, the model decides.

A cluster of similar records (:mod:`core.sleep.clustering`) is turned into *candidates*, each a
small question a small model answers well, by arithmetic alone (no model, deterministic):

* **events** — three or more event records of one cluster: "what lasting fact follows?";
* **supersede** — two similar records where the newer one changes a value of the older: a
  number, a name, a day or month, or it says so ("now", "moved", "left", "finished", "теперь",
  "больше не", …): "does the newer one replace the older?";
* **duplicate** — two similar records with nothing that tells them apart (the same numbers,
  no change word): "do they say the same thing?". Pairs across languages come from the
  semantic edges, so they are proposed like any other pair.

Events that belong to a run are not asked about pairwise (a weekly climbing session is not a
duplicate of last week's), unless the newer one says it changed something ("moved to Friday").
Each pair is proposed once, strongest edge first; :func:`propose` is pure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core import text
from core.records import Kind, Record

DUPLICATE = "duplicate"
SUPERSEDE = "supersede"
EVENTS = "events"
KINDS = (DUPLICATE, SUPERSEDE, EVENTS)

MIN_RUN = 3  # events on one subject that make a run
MAX_RUN = 6  # events shown in one question (the most recent)

# The newer record says something changed. Matched at word starts, in lower case.
CHANGE = re.compile(
    r"\b(now|moved|no longer|not any ?more|anymore|instead|changed|switched|finished|"
    r"completed|is over|left|quit|became|has become|new|newly|stopped|retired|rescheduled|"
    r"postponed|replaced|since|started|began|теперь|сейчас|больше не|уже не|вместо|переехал|переехала|"
    r"переехали|перебрал|поменял|сменил|закончил|закончила|закончили|завершил|завершила|"
    r"завершили|ушёл|ушел|ушла|уволил|перенесл|перенес|перенёс|стал |стала |новый|новая|"
    r"новое|новым|новой|бросил|бросила|отныне|с тех пор|перешёл|перешел|перешла|начал|"
    r"пошёл|пошла|пошел|с (января|февраля|марта|апреля|мая|июня|июля|августа|сентября|"
    r"октября|ноября|декабря))",
    re.IGNORECASE)

_DAYS = {
    "monday": 1, "mon": 1, "понедельник": 1, "понедельникам": 1,
    "tuesday": 2, "tue": 2, "вторник": 2, "вторникам": 2,
    "wednesday": 3, "wed": 3, "среда": 3, "среду": 3, "средам": 3,
    "thursday": 4, "thu": 4, "четверг": 4, "четвергам": 4,
    "friday": 5, "fri": 5, "пятница": 5, "пятницу": 5, "пятницам": 5,
    "saturday": 6, "sat": 6, "суббота": 6, "субботу": 6, "субботам": 6,
    "sunday": 7, "sun": 7, "воскресенье": 7, "воскресеньям": 7,
}
_WORDS = re.compile(r"[\w']+", re.UNICODE)


@dataclass(frozen=True)
class Candidate:
    kind: str  # DUPLICATE | SUPERSEDE | EVENTS
    ids: tuple[int, ...]  # a pair (SUPERSEDE: older, newer) or a run of events, oldest first
    weight: float  # the strongest similarity edge among them (the order of asking)
    why: str  # what the arithmetic saw (journaled)
    loose: bool = False  # found by a loose change link only (weak evidence of one subject)


def says_change(content: str) -> bool:
    return bool(CHANGE.search(content))


def _day(word: str) -> int | None:
    return _DAYS.get(word) or (_DAYS.get(word[:-1]) if word.endswith("s") else None)


def _days(content: str) -> frozenset[int]:
    return frozenset(d for w in _WORDS.findall(content.lower()) if (d := _day(w)) is not None)


def _names(content: str) -> list[frozenset[str]]:
    """Names in both scripts (days of the week are not names)."""
    days = {text.stem_token(w) for w in _WORDS.findall(content.lower()) if _day(w)}
    return [g for g in text.name_stems(content) if not g & days]


def value_change(older: Record, newer: Record) -> str | None:
    """What the newer record changes of the older: different numbers, a name or a day the
    other does not have — or None when nothing tells them apart."""
    return text_change(older.content, newer.content)


def text_change(a: str, b: str) -> str | None:
    """:func:`value_change` of two texts, the older first."""
    na_, nb_ = numbers(a), numbers(b)
    if not (na_ <= nb_ or nb_ <= na_):
        return "a number changed"
    da, db = _days(a), _days(b)
    if da and db and da != db:
        return "a day changed"
    na, nb = _names(a), _names(b)
    if na and nb:
        fresh = [g for g in nb if not any(g & h for h in na)]
        gone = [g for g in na if not any(g & h for h in nb)]
        if fresh and gone:
            return "a name changed"
    return None


_ORDINAL = re.compile(r"(?<=\d)(st|nd|rd|th|-?го|-?е|-?й|-?я)$")


def numbers(content: str) -> frozenset[str]:
    """The numbers of a text, ordinal endings dropped ("15th" and "15-го" are 15)."""
    return frozenset(_ORDINAL.sub("", n) for n in text.numbers(content))


def shares_name(a: str, b: str) -> bool:
    """Whether two texts name someone or something in common, in either script."""
    return any(g & h for g in _names(a) for h in _names(b))


def _time(r: Record) -> tuple[float, int]:
    return (r.created_at, r.id)


def propose(cluster: Sequence[int], corpus: Mapping[int, Record],
            weights: Mapping[tuple[int, int], float],
            change_only: frozenset[tuple[int, int]] | set[tuple[int, int]] = frozenset()
            ) -> list[Candidate]:
    """The questions one cluster raises (pure arithmetic; deterministic). Pinned records are
    the owner's and are never proposed. An edge in ``change_only`` (a loose link found because
    the newer record says something changed) can only raise a supersession question."""
    members = [corpus[i] for i in cluster if i in corpus and not corpus[i].pinned]
    ids = {r.id for r in members}
    out: list[Candidate] = []
    events = sorted((r for r in members if r.kind is Kind.EVENT), key=_time)
    in_run: set[int] = set()
    if len(events) >= MIN_RUN:
        shown = events[-MAX_RUN:]
        in_run = {r.id for r in events}
        w = max((weights.get((min(a.id, b.id), max(a.id, b.id)), 0.0)
                 for a in shown for b in shown if a.id < b.id), default=0.0)
        out.append(Candidate(EVENTS, tuple(r.id for r in shown), w,
                             f"{len(events)} events on one subject"))
    edges = sorted(((w, a, b) for (a, b), w in weights.items() if a in ids and b in ids),
                   key=lambda e: (-e[0], e[1], e[2]))
    for w, a, b in edges:
        older, newer = sorted((corpus[a], corpus[b]), key=_time)
        change = value_change(older, newer)
        cue = says_change(newer.content) and not says_change(older.content)
        if older.id in in_run and newer.id in in_run and not cue:
            continue  # two events of a run: the run is the question
        if (min(a, b), max(a, b)) in change_only and not (change or cue):
            continue
        if change or cue:
            out.append(Candidate(SUPERSEDE, (older.id, newer.id), w,
                                 change or "the newer record says something changed",
                                 loose=(min(a, b), max(a, b)) in change_only))
        else:
            out.append(Candidate(DUPLICATE, (older.id, newer.id), w,
                                 "similar, with nothing that tells them apart"))
    return out


# ---------------------------------------------------------------------------- loose links

DUP_COSINE = 0.45  # calibrated cosine of a loose duplicate link (clusters use cluster_cosine)
CHANGE_COSINE = 0.25  # … of a loose supersession link (the newer record says something changed)
PROBE_NEIGHBOURS = 4  # loose links kept per probed record (strongest first)


@dataclass
class Links:
    weights: dict[tuple[int, int], float] = field(default_factory=dict)
    change_only: set[tuple[int, int]] = field(default_factory=set)
    weights_strong: set[tuple[int, int]] = field(default_factory=set)

    def add(self, a: int, b: int, w: float, change_only: bool) -> None:
        key = (min(a, b), max(a, b))
        if w > self.weights.get(key, -1.0):
            self.weights[key] = w
        if change_only and key not in self.weights_strong:
            self.change_only.add(key)
        elif not change_only:
            self.change_only.discard(key)
            self.weights_strong.add(key)


def _script(content: str) -> str:
    cyr = len(re.findall(r"[а-яё]", content, re.IGNORECASE))
    lat = len(re.findall(r"[a-z]", content, re.IGNORECASE))
    return "ru" if cyr > lat else "en"


def probe_links(probes: Iterable[int], corpus: Mapping[int, Record],
                stems: Mapping[int, frozenset[str]],
                vectors: tuple[np.ndarray, np.ndarray, float] | None, *,
                dup_cosine: float = DUP_COSINE, change_cosine: float = CHANGE_COSINE,
                k: int = PROBE_NEIGHBOURS, block: int = 512,
                check: Callable[[], None] = lambda: None) -> Links:
    """Links the strict clusters miss, searched from the ``probes`` only (the records changed
    since the last night, so an unchanged corpus costs nothing): per probe, at most ``k``
    records of its scope

    * whose calibrated cosine reaches ``dup_cosine`` (a paraphrase, another language);
    * that share a name with it written in the other script ("Zenit" / "Зенит");
    * when the probe says something changed ("moved", "теперь", "since March"): older records
      whose cosine reaches ``change_cosine``, or that share a name or a rare word with it —
      these links may only raise a supersession question.

    Vector maths in blocks (probes × all), names and rare words through inverted indexes."""
    links = Links()
    probes = sorted(i for i in set(probes) if i in corpus and not corpus[i].pinned)
    if not probes:
        return links
    live = [i for i in corpus if not corpus[i].pinned]
    cue = {i for i in probes if says_change(corpus[i].content)}
    # names, in both scripts
    names = {i: _names(corpus[i].content) for i in live}
    by_name: dict[str, set[int]] = {}
    for i, groups in names.items():
        for g in groups:
            for v in g:
                by_name.setdefault(v, set()).add(i)
    # rare words: in at most max(2, 1 % of the corpus) records
    df: Counter[str] = Counter()
    for i in live:
        df.update(stems.get(i, ()))
    rare_max = max(2, len(live) // 100)
    by_stem: dict[str, set[int]] = {}
    for i in live:
        for st in stems.get(i, ()):
            if df[st] <= rare_max:
                by_stem.setdefault(st, set()).add(i)

    found: dict[int, list[tuple[float, int, bool]]] = {i: [] for i in probes}
    if vectors is not None:
        ids, mat, background = vectors
        row = {int(x): n for n, x in enumerate(ids)}
        live_rows = np.array([row[i] for i in live if i in row], dtype=np.int64)
        live_ids = np.array([i for i in live if i in row], dtype=np.int64)
        with_vec = [i for i in probes if i in row]
        for start in range(0, len(with_vec), block):
            check()
            chunk = with_vec[start:start + block]
            sims = mat[[row[i] for i in chunk]] @ mat[live_rows].T
            cal = (sims - background) / (1.0 - background)
            for n, i in enumerate(chunk):
                limit = change_cosine if i in cue else dup_cosine
                for c in np.flatnonzero(cal[n] >= limit):
                    j = int(live_ids[c])
                    if j == i or corpus[j].scope != corpus[i].scope:
                        continue
                    w = float(min(1.0, cal[n, c]))
                    found[i].append((w, j, w < dup_cosine))
    for i in probes:
        mine_names = names.get(i, [])
        for g in mine_names:
            for j in {x for v in g for x in by_name.get(v, ())}:
                if j == i or corpus[j].scope != corpus[i].scope:
                    continue
                other = _script(corpus[j].content) != _script(corpus[i].content)
                if other or i in cue:
                    found[i].append((0.5, j, not other))
        if i in cue:
            for st in stems.get(i, ()):
                for j in by_stem.get(st, ()):
                    if j != i and corpus[j].scope == corpus[i].scope:
                        found[i].append((0.4, j, True))
        best: dict[int, tuple[float, bool]] = {}
        for w, j, only in found[i]:
            if i in cue and only and corpus[j].created_at > corpus[i].created_at:
                continue  # a loose change link points from the newer record to an older one
            w0, only0 = best.get(j, (-1.0, True))
            best[j] = (max(w, w0), only and only0)
        for j, (w, only) in sorted(best.items(), key=lambda e: (-e[1][0], e[0]))[:k]:
            links.add(i, j, w, only)
    return links
