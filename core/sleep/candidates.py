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

What can be true (issue 27 item 3; a night answered the supersession question "yes" 8 times of
8, dated a current fact and an event, and took a duplicate for a supersession):

* an event is never the older side of a supersession: it happened, it cannot stop being true
  (a night dated "Хозяин пробежал 5 км утром в понедельник"); an event and a lasting fact are
  never the same fact either (a duplicate question needs two events or two non-events);
* a pair the duplicate test would merge — no value tells them apart and only a change word
  does, the newer brings no name or negation of its own, and they are as close as paraphrases
  (:data:`DUP_COSINE`) or one holds every word of the other — is asked "same fact?" first
  (``same_first``) and is a supersession only if not;
* a name is changed only when it is gone from the other text altogether: "Марина — сестра
  хозяина…" opens with the name "Сестру хозяина зовут Марина" has (a sentence's first word is
  no name to :func:`core.text.name_stems`), and a night archived the one as replaced by the
  other.

The learned gate of :mod:`core.sleep.gate` then decides which supersessions are asked at all.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from core import text
from core.store.records import Kind, Record

DUPLICATE = "duplicate"
SUPERSEDE = "supersede"
EVENTS = "events"
KINDS = (DUPLICATE, SUPERSEDE, EVENTS)

CUE = "the newer record says something changed"
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
    re.IGNORECASE,
)

_DAYS = {
    "monday": 1,
    "mon": 1,
    "понедельник": 1,
    "понедельникам": 1,
    "tuesday": 2,
    "tue": 2,
    "вторник": 2,
    "вторникам": 2,
    "wednesday": 3,
    "wed": 3,
    "среда": 3,
    "среду": 3,
    "средам": 3,
    "thursday": 4,
    "thu": 4,
    "четверг": 4,
    "четвергам": 4,
    "friday": 5,
    "fri": 5,
    "пятница": 5,
    "пятницу": 5,
    "пятницам": 5,
    "saturday": 6,
    "sat": 6,
    "суббота": 6,
    "субботу": 6,
    "субботам": 6,
    "sunday": 7,
    "sun": 7,
    "воскресенье": 7,
    "воскресеньям": 7,
}
_WORDS = re.compile(r"[\w']+", re.UNICODE)


@dataclass(frozen=True)
class Candidate:
    kind: str  # DUPLICATE | SUPERSEDE | EVENTS
    ids: tuple[int, ...]  # a pair (SUPERSEDE: older, newer) or a run of events, oldest first
    weight: float  # the strongest similarity edge among them (the order of asking)
    why: str  # what the arithmetic saw (journaled)
    loose: bool = False  # found by a loose change link only (weak evidence of one subject)
    same_first: bool = False  # SUPERSEDE that the duplicate test would merge: "same fact?" first
    p: float | None = None  # the supersession gate's probability (None: not scored)


def says_change(content: str) -> bool:
    return bool(CHANGE.search(content))


def _day(word: str) -> int | None:
    return _DAYS.get(word) or (_DAYS.get(word[:-1]) if word.endswith("s") else None)


def _days(content: str) -> frozenset[int]:
    return frozenset(d for w in _WORDS.findall(content.lower()) if (d := _day(w)) is not None)


def name_groups(content: str) -> list[frozenset[str]]:
    """A text's names in both scripts (days of the week are not names)."""
    days = {text.stem_token(w) for w in _WORDS.findall(content.lower()) if _day(w)}
    return [g for g in text.name_stems(content) if not g & days]


def value_change(older: Record, newer: Record) -> str | None:
    """What the newer record changes of the older: different numbers, a name or a day the
    other does not have — or None when nothing tells them apart. A name is changed only when
    the other text lacks it altogether (issue 27: "Марина — сестра хозяина…" opens with the
    name, and a sentence's first word is no name to :func:`name_groups`)."""
    return text_change(older.content, newer.content, anywhere=True)


def text_change(a: str, b: str, anywhere: bool = False) -> str | None:
    """:func:`value_change` of two texts, the older first. Without ``anywhere`` a name is
    gone when the other text does not name it, even if it has the word (the feature
    :mod:`core.sleep.corrections` was trained with)."""
    na_, nb_ = numbers(a), numbers(b)
    if not (na_ <= nb_ or nb_ <= na_):
        return "a number changed"
    da, db = _days(a), _days(b)
    if da and db and da != db:
        return "a day changed"
    na, nb = name_groups(a), name_groups(b)
    if na and nb:
        sa, sb = (text.stem_set(a), text.stem_set(b)) if anywhere else (frozenset(), frozenset())
        # the trained features (not ``anywhere``) keep the stems they were trained with
        one = alike if anywhere else _share
        fresh = [g for g in nb if not any(one(g, h) for h in na) and not g & sa]
        gone = [g for g in na if not any(one(g, h) for h in nb) and not g & sb]
        if fresh and gone:
            return "a name changed"
    return None


NEGATION = re.compile(r"(?<!\w)(not|no|never|n't|не|нет|ни|никогда)(?!\w)|n't\b", re.IGNORECASE)


def adds(older: str, newer: str) -> bool:
    """Whether the newer text brings a name or a negation the older lacks ("…and now works at
    Yandex", "no longer", "больше не"): then it may change what the older says, and the pair is
    no plain repetition, whatever its words in common."""
    if len(NEGATION.findall(newer)) > len(NEGATION.findall(older)):
        return True
    old_names, old_stems = name_groups(older), text.stem_set(older)
    return any(
        not any(alike(g, h) for h in old_names) and not g & old_stems for g in name_groups(newer)
    )


def holds_words(a: str, b: str) -> bool:
    """Whether one of two texts in one language holds every word (stem), number and name of
    the other: a repetition, or a repetition with a detail ("Timur plays hockey" / "Timur now
    plays hockey for the school team")."""
    if script(a) != script(b):
        return False
    sa, sb = text.stem_set(a), text.stem_set(b)
    na, nb = numbers(a), numbers(b)
    return bool(sa and sb) and ((sa <= sb and na <= nb) or (sb <= sa and nb <= na))


_ORDINAL = re.compile(r"(?<=\d)(st|nd|rd|th|-?го|-?е|-?й|-?я)$")


# a number written in thousands: "42,000", "42 000", "42k", "42 тыс." are all 42000
_GROUPED = re.compile(r"(?<![\d.,])(\d{1,3})((?:[,\u00a0\u202f ]\d{3})+)(?!\d)(?![.,]\d)")
_THOUSANDS = re.compile(r"(?<![\d.,])(\d+)\s?(?:k|к|тыс\.?)(?!\w)", re.IGNORECASE)


def numbers(content: str) -> frozenset[str]:
    """The numbers of a text, ordinal endings dropped ("15th" and "15-го" are 15), thousands
    written out ("42,000", "42 000", "42k", "42 тыс." are 42000)."""
    content = _GROUPED.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), content)
    content = _THOUSANDS.sub(lambda m: m.group(1) + "000", content)
    return frozenset(_ORDINAL.sub("", n) for n in text.numbers(content))


# Whose fact a record states: the owner (no role word) or a relative / someone in a role. Word
# starts, lower case; each group is one role in both languages ("wife" / "жена", "жены").
ROLES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(r"\b(" + pattern + r")", re.IGNORECASE))
    for name, pattern in (
        ("wife", r"wife|wives|жен[аыеуо]"),
        ("husband", r"husband|муж[аеуо]?\b|мужем"),
        # a partner outside marriage (issue 26: "Мой парень Матвей" had no role, so "Liza's
        # husband" could be answered with the owner's boyfriend's name)
        (
            "partner",
            r"boyfriends?\b|girlfriends?\b|partners?\b|fianc[eé]e?|парень|парн[яюе]|девушк|"
            r"жених|невест",
        ),
        ("son", r"sons?\b(?!-in-law)|сын"),
        ("daughter", r"daughters?(?!-in-law)|доч[ьке]|дочер"),
        ("sister", r"sisters?(?!-in-law)|сестр"),
        ("brother", r"brothers?(?!-in-law)|брат"),
        ("mother", r"mother(?!s?-in-law)|mom|mum|мам|мать|матер"),
        ("father", r"father(?!s?-in-law)|dad|пап|отец|отц"),
        ("grandparent", r"grand(mother|father|ma|pa)|бабушк|дедушк"),
        ("child", r"kids?\b|children|дет[иья]|ребён|ребен"),
        # the rest of the kinship words (issue 27: "the owner's aunt" / "his godmother" had no
        # role, so two people's facts read as one person's)
        ("cousin", r"cousins?|двоюродн"),
        ("nephew", r"nephews?|племянник"),
        ("niece", r"nieces?|племянниц"),
        ("uncle", r"uncles?|дяд[яиеюь]"),
        ("aunt", r"aunts?\b|aunties?|тёт[яиеюь]|тет[яиеюь]"),
        ("grandchild", r"grand(?:son|daughter|child|kid)|внук|внучк"),
        (
            "in-law",
            r"(?:mother|father|sister|brother|son|daughter)s?-in-law|тёщ|тещ|свекров|свёк[ро]|"
            r"свек[ро]|тест[ьяю]|тестем|зят[ьяюе]|невестк|шурин|деверь|свояк|золовк|свояченниц",
        ),
        ("step-parent", r"step(?:mother|father|mom|dad)|мачех|отчим"),
        ("godparent", r"god(?:mother|father|parent)s?|крёстн|крестн"),
        ("neighbour", r"neighbou?rs?\b|сосед(?!н)"),
        ("friend", r"friends?|друг|друз|подруг"),
        ("colleague", r"colleagues?|коллег"),
        ("manager", r"manager|boss|начальни|руководител"),
    )
)
_MONTHS = re.compile(
    r"^(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|янв|фев|мар|апр|ма[яй]|июн|июл|авг|"
    r"сен|окт|ноя|дек)",
    re.IGNORECASE,
)


def roles(content: str) -> frozenset[str]:
    """The roles a text names ("wife", "son", "manager", …); empty: a fact about the owner."""
    return frozenset(name for name, rx in ROLES if rx.search(content))


# Who someone of the owner's is, said in the nominative: "My younger sister Tilly", "our son
# Theo", "Мой парень Матвей", "Tilly, my sister", "Матвей — мой парень", "Сестра хозяина Аня".
# A possessive, up to two words of description, a role word (:data:`ROLES`) and a capitalised
# name, either way round.
# Closed word classes (possessives, the role words), not a list of facts.
_ROLE_WORD = "|".join(
    rx.pattern[3:-1].replace("(mother|father|ma|pa)", "(?:mother|father|ma|pa)") for _, rx in ROLES
)
_WHO_NAME = r"(?P<name>[A-ZА-ЯЁ][a-zа-яё'’-]+)"
_WHO_PHRASE = (
    r"(?P<phrase>(?:(?i:my|our|the owner['’]s|мой|моя|моё|мое|мои|наш|наша|наше|наши)\s+"
    r"(?:[a-zа-яё-]+\s+){0,2}(?:(?i:" + _ROLE_WORD + r"))[a-zа-яё]*)"
    # the sleep's own wording: "Сестра хозяина Аня"
    r"|(?:(?i:" + _ROLE_WORD + r")[а-яё]*\s+(?i:хозяина|хозяйки)))"
)
_RELATIONS = (
    re.compile(r"(?<!\w)" + _WHO_PHRASE + r",?\s+" + _WHO_NAME + r"(?!\w)"),
    re.compile(_WHO_NAME + r"(?:\s*[,—–-]\s*|\s+is\s+|['’]s\s+)" + _WHO_PHRASE + r"(?!\w)"),
)
# the roles a person keeps whatever else changes: kin (a partner, a spouse, a friend, a boss may
# stop being one)
LASTING_ROLES = frozenset(
    {"son", "daughter", "sister", "brother", "mother", "father", "grandparent", "child"}
)


class Relation(NamedTuple):
    """Someone of the owner's, named with their role: ``name`` as written, ``phrase`` the
    possessive and role words ("My younger sister"), ``roles`` what :func:`roles` reads in it."""

    name: str
    phrase: str
    roles: frozenset[str]

    def said_by(self, content: str) -> bool:
        """Whether ``content`` names this person with one of these roles."""
        group = text.name_group(self.name)
        return any(
            other.roles & self.roles and group & text.name_group(other.name)
            for other in relations(content)
        )

    def sentence(self) -> str:
        """The relation as a record of its own, in the owner's words and language: "Tilly is
        my younger sister.", "Матвей — мой парень."."""
        phrase = self.phrase[0].lower() + self.phrase[1:]
        return f"{self.name} — {phrase}." if script(phrase) == "ru" else f"{self.name} is {phrase}."


def relations(content: str) -> list[Relation]:
    """The people ``content`` names with their role (see :data:`_RELATIONS`), each name once."""
    out: list[Relation] = []
    seen: set[frozenset[str]] = set()
    for rx in _RELATIONS:
        for m in rx.finditer(content):
            name, phrase = m.group("name"), m.group("phrase")
            group = text.name_group(name)
            found = roles(phrase)
            if not found or roles(name) or group in seen or name.lower() in text.NOT_NAMES:
                continue
            seen.add(group)
            out.append(Relation(name, " ".join(phrase.split()), found))
    return out


def kept_relations(old: str, new: str, message: str) -> list[Relation]:
    """Who someone is (:func:`core.sleep.candidates.relations`) that ``old`` says and the text
    replacing it (``new``, saved from the owner's ``message``) does not: retiring "My younger
    sister Tilly is a teacher." for "Tilly's quit teaching!" must not forget that Tilly is the
    owner's younger sister (:class:`core.chat.memory_writer.MemoryWriter` at write time, the
    night's resolve in :mod:`core.sleep.apply`). Of the dev correction pairs, 7 retire a record
    that holds such a relation, and in none does the message say it. Seen on an unseen scenario: "Мой парень
    Матвей — курьер…" retired for "Матвей ушёл из курьеров, теперь он сварщик…", and nothing
    left said who Matvey is.

    A relation the message speaks of itself (a role word of the same kind) is left to it: "he's
    not my boyfriend any more". A role that can end (a partner, a spouse, a friend, a boss) is
    kept only when the message speaks of something else the old text says (a word in common
    beyond the name and the role: "курьер"): "Мы с Катей расстались" shares nothing with "Моя
    девушка Катя живёт в Туле" but her name, and may end the relation itself."""
    said = roles(message) | roles(new)
    across = script(message) != script(old)

    def keyed(words: frozenset[str]) -> frozenset[str]:
        return text.script_keys(words) if across else words

    out = []
    new_stems = text.stem_set(new)
    for rel in relations(old):
        if rel.roles & said:
            continue
        group = text.name_group(rel.name)
        if any(group & text.name_group(r.name) for r in relations(new)):
            continue  # the new text says it too
        if not rel.roles <= LASTING_ROLES:
            aside = text.stem_set(rel.phrase) | group | {w for w in new_stems if w.isdigit()}
            common = keyed(text.stem_set(message) - aside) & keyed(text.stem_set(old) - aside)
            if not common:
                continue
        out.append(rel)
    return out


def different_people(a: str, b: str) -> bool:
    """Two texts that state facts about different people, by arithmetic: each names a role and
    the roles differ ("Anna is the owner's sister" / "Anna is the owner's manager"), or one
    names a role the other lacks and they share no name ("The owner's birthday is on March 3" /
    "The owner's wife's birthday is on March 13"; months are not names here). Such a pair is
    neither a duplicate nor an update (measured on dev: the 1.5B called 4 of 6 such decoys
    "NEW replaces OLD")."""
    ra, rb = whose(a), whose(b)
    if ra == rb:
        return False
    if ra and rb and not (ra & rb):
        return True
    if ra and rb:
        return False  # a role in common ("the owner's wife Olga" / "Olga and her sister")
    na, nb = _people(a), _people(b)
    return not any(alike(g, h) for g in na for h in nb)


_OWNER = re.compile(r"^(owner|хозя)", re.IGNORECASE)


_ANY_ROLE = r"(?:" + _ROLE_WORD + r")[a-zа-яё]*"
# a relative's relative: "the owner's wife's father", "the brother of his wife", "отец жены",
# "сын брата хозяина" (the second role word in the genitive); "двоюродная" is an adjective
_CHAINS = (
    re.compile(
        r"(?i:(?P<of>" + _ANY_ROLE + r")['’]s\s+(?:[a-z-]+\s+)?(?P<head>" + _ANY_ROLE + r"))"
    ),
    re.compile(
        r"(?i:(?P<head>" + _ANY_ROLE + r")\s+of\s+(?:the\s+owner['’]s|my|his|her|their)\s+"
        r"(?P<of>" + _ANY_ROLE + r"))"
    ),
    re.compile(r"(?i:(?!двоюродн)(?P<head>" + _ANY_ROLE + r")\s+(?P<of>" + _ANY_ROLE + r"))"),
)


def whose(content: str) -> frozenset[str]:
    """The people a text's roles name: :func:`roles`, except that a relative's relative is a
    person of its own — "father<wife" for "Отец жены хозяина" / "the owner's wife's father",
    not the owner's father (bench.same_fact dev: the night asked "same fact?" about the owner's
    mother and the husband's mother)."""
    chains: set[str] = set()
    for rx in _CHAINS:
        for m in rx.finditer(content):
            head, of = roles(m.group("head")), roles(m.group("of"))
            if head and of and m.group("head").lower() != m.group("of").lower():
                chains.add(f"{min(head)}<{min(of)}")
                content = content.replace(m.group(0), " ")
    return frozenset(chains) | roles(content)


def _people(content: str) -> list[frozenset[str]]:
    """Names in both scripts, a sentence's first word included ("Pavel left the company"),
    without months, the owner and role words."""
    return [
        g
        for g in name_groups("x " + content.replace(". ", ", "))
        if not any(_MONTHS.match(v) or _OWNER.match(v) or roles(v) for v in g)
    ]


# What a faded record may still hold that matters (issue 17: "never lose a debt, a promise, a
# date or a person"): word starts, lower case.
_MATTERS = re.compile(
    r"\b(owes?|owed|debt|lent|lend|borrow|loan|repay|pay back|promis|vow|swore|"
    r"roubles?|rubles?|dollars?|euros?|usd|eur|rub\b|руб|долг|должен|должна|одолж|занял|заняла|"
    r"взял в долг|верн(уть|ёт|ет) деньги|обеща|поклял|"
    r"grave|cemetery|funeral|могил|кладбищ|похорон|"
    r"birthday|anniversary|wedding|день рождения|годовщин|свадьб)",
    re.IGNORECASE,
)
_CURRENCY = re.compile(r"[$€£₽]|\d\s*(k|к|тыс)\b", re.IGNORECASE)
_DATE = re.compile(
    r"\b(\d{1,2}(st|nd|rd|th)?\s+(of\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|"
    r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b|"
    r"\d{1,2}(-?го)?\s+(янв|фев|мар|апр|ма[яй]|июн|июл|авг|сен|окт|ноя|дек)|"
    r"(until|till|by|before|до|к)\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|янв|фев|"
    r"мар|апр|ма[яй]|июн|июл|авг|сен|окт|ноя|дек)|(19|20)\d\d\b)",
    re.IGNORECASE,
)


def still_matters(content: str) -> str | None:
    """Why a faded record must not be offered for forgetting, by arithmetic: it names money or a
    debt, a promise, a grave or an anniversary, a date, or a person (a relative, a friend, a
    name) — or None. Measured on dev with the 1.5B: asked "forget or keep?", it answered
    "forget" for "Owes his friend Kolya 20 000 roubles until July" and for a promise to the
    daughter."""
    if _MATTERS.search(content) or _CURRENCY.search(content):
        return "money, a debt, a promise or an anniversary"
    if _DATE.search(content):
        return "a date"
    if roles(content) or [
        g for g in name_groups(content) if not any(_MONTHS.match(v) or _OWNER.match(v) for v in g)
    ]:
        return "a person"
    return None


def shares_name(a: str, b: str) -> bool:
    """Whether two texts name someone or something in common, in either script."""
    return any(alike(g, h) for g in name_groups(a) for h in name_groups(b))


def _share(g: frozenset[str], h: frozenset[str]) -> bool:
    return bool(g & h)


_VOWELS = re.compile(r"[aeiouy]+")
_AFTER = re.compile(r"(?<=[skcz])h")  # "sh", "kh", "ch", "zh": one sound, one letter here


def _skeleton(stem: str) -> str | None:
    """A Latin name stem's consonants in order, doubled letters once ("liverpool" and
    "liverpul" are "lvrpl", "artyom" and "artem" "rtm"), or None when it is not Latin."""
    if not stem.isascii() or not stem.isalpha():
        return None
    s = _VOWELS.sub("", _AFTER.sub("", stem.replace("c", "k").replace("q", "k")))
    return re.sub(r"(.)\1+", r"\1", s)


def alike(g: frozenset[str], h: frozenset[str]) -> bool:
    """Whether two name groups (:func:`name_groups`) are one name: a stem in common, or — a
    name written in the other script and transliterated another way ("Artyom" / "Артём",
    "Liverpool" / "Ливерпуль", "Octavia" / "Октавии") — the same consonants, at least three
    of them, in the same order, the same first letter."""
    if g & h:
        return True
    sg = {k: v for v in g if (k := _skeleton(v)) and len(k) >= 3}
    sh = {k: v for v in h if (k := _skeleton(v)) and len(k) >= 3}
    return any(k in sh and sh[k][0] == v[0] for k, v in sg.items())


def _time(r: Record) -> tuple[float, int]:
    return (r.created_at, r.id)


def propose(
    cluster: Sequence[int],
    corpus: Mapping[int, Record],
    weights: Mapping[tuple[int, int], float],
    change_only: frozenset[tuple[int, int]] | set[tuple[int, int]] = frozenset(),
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
        w = max(
            (
                weights.get((min(a.id, b.id), max(a.id, b.id)), 0.0)
                for a in shown
                for b in shown
                if a.id < b.id
            ),
            default=0.0,
        )
        out.append(
            Candidate(EVENTS, tuple(r.id for r in shown), w, f"{len(events)} events on one subject")
        )
    edges = sorted(
        ((w, a, b) for (a, b), w in weights.items() if a in ids and b in ids),
        key=lambda e: (-e[0], e[1], e[2]),
    )
    for w, a, b in edges:
        older, newer = sorted((corpus[a], corpus[b]), key=_time)
        change = value_change(older, newer)
        cue = says_change(newer.content) and not says_change(older.content)
        if older.id in in_run and newer.id in in_run and not cue:
            continue  # two events of a run: the run is the question
        if (older.id in in_run) != (newer.id in in_run) and not (change or cue):
            continue  # an event of a run is not the same fact as a record outside it
        loose = (min(a, b), max(a, b)) in change_only
        if loose and not change:
            # a loose link is weak evidence of one subject: a change word alone ("теперь",
            # "moved") does not make it a supersession — the same attribute with another value
            # must be found (issue 27 item 3). Measured on the dev parts of the four sleep
            # corpora: 11 loose pairs had a change word and no changed value, none of them a
            # contradiction; the 4 loose contradictions all changed a name
            continue
        if different_people(older.content, newer.content):
            continue  # facts about different people: nothing to ask
        n_events = (older.kind is Kind.EVENT) + (newer.kind is Kind.EVENT)
        if change or cue:
            if older.kind is Kind.EVENT:
                continue  # an event happened: it is never outdated by a newer record
            same_first = (
                not change
                and not loose
                and n_events != 1
                and not adds(older.content, newer.content)
                and (w >= DUP_COSINE or holds_words(older.content, newer.content))
            )
            out.append(
                Candidate(
                    SUPERSEDE,
                    (older.id, newer.id),
                    w,
                    change or CUE,
                    loose=loose,
                    same_first=same_first,
                )
            )
        elif n_events != 1:  # an episode and a lasting fact are never the same fact
            out.append(
                Candidate(
                    DUPLICATE,
                    (older.id, newer.id),
                    w,
                    "similar, with nothing that tells them apart",
                )
            )
    return out


def as_duplicate(c: Candidate, why: str) -> Candidate:
    """A supersession the duplicate test would merge, asked only "same fact?" (e.g. when the
    gate says the newer cannot replace the older)."""
    return replace(c, kind=DUPLICATE, why=f"{c.why}; {why}", same_first=False)


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


def script(content: str) -> str:
    """ "ru" when a text is mostly Cyrillic, else "en"."""
    cyr = len(re.findall(r"[а-яё]", content, re.IGNORECASE))
    lat = len(re.findall(r"[a-z]", content, re.IGNORECASE))
    return "ru" if cyr > lat else "en"


def probe_links(
    probes: Iterable[int],
    corpus: Mapping[int, Record],
    stems: Mapping[int, frozenset[str]],
    vectors: tuple[np.ndarray, np.ndarray, float] | None,
    *,
    dup_cosine: float = DUP_COSINE,
    change_cosine: float = CHANGE_COSINE,
    k: int = PROBE_NEIGHBOURS,
    block: int = 512,
    check: Callable[[], None] = lambda: None,
) -> Links:
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
    names = {i: name_groups(corpus[i].content) for i in live}
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
            chunk = with_vec[start : start + block]
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
                other = script(corpus[j].content) != script(corpus[i].content)
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
