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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    r"postponed|replaced|since|теперь|сейчас|больше не|уже не|вместо|переехал|переехала|"
    r"переехали|перебрал|поменял|сменил|закончил|закончила|закончили|завершил|завершила|"
    r"завершили|ушёл|ушел|ушла|уволил|перенесл|перенес|перенёс|стал |стала |новый|новая|"
    r"новое|новым|новой|бросил|бросила|отныне|с тех пор|перешёл|перешел|перешла)",
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


def says_change(content: str) -> bool:
    return bool(CHANGE.search(content))


def _days(content: str) -> frozenset[int]:
    return frozenset(_DAYS[w] for w in _WORDS.findall(content.lower()) if w in _DAYS)


def _names(content: str) -> list[frozenset[str]]:
    return text.name_stems(content)


def value_change(older: Record, newer: Record) -> str | None:
    """What the newer record changes of the older: different numbers, a name or a day the
    other does not have — or None when nothing tells them apart."""
    a, b = older.content, newer.content
    if not text.numbers_compatible(a, b):
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


def _time(r: Record) -> tuple[float, int]:
    return (r.created_at, r.id)


def propose(cluster: Sequence[int], corpus: Mapping[int, Record],
            weights: Mapping[tuple[int, int], float]) -> list[Candidate]:
    """The questions one cluster raises (pure arithmetic; deterministic). Pinned records are
    the owner's and are never proposed."""
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
        if change or cue:
            out.append(Candidate(SUPERSEDE, (older.id, newer.id), w,
                                 change or "the newer record says something changed"))
        else:
            out.append(Candidate(DUPLICATE, (older.id, newer.id), w,
                                 "similar, with nothing that tells them apart"))
    return out
