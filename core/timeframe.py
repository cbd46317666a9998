"""A question that names a time (SPEC §4, relevance): "what did I do on 3 June?", "что я
рассказывал в мае?", "where was I last week?".

Such a question is about what was said then, so recall counts a record said within the named
time (its ``created_at``) as more relevant: relevance × (1 + ``memory.timeframe_boost``). It is a
refinement of relevance, never a filter: a record said at another time keeps its score, and a
record with no relevance gains nothing.

:func:`spans` reads the times a query names, in English and Russian, as half-open intervals of
epoch seconds in the owner's local calendar:

- a day: "3 June 2023", "June 3rd", "on 21 May, 2023", "3 июня 2023 года", "8 июня";
- a month: "in June 2023", "in June", "в июне", "в мае 2023 года", "June 2023";
- a season: "in summer 2021", "last winter", "летом", "зимой 2022 года";
- a year: "in 2022", "в 2022 году";
- relative to now: today / yesterday / the day before yesterday / last night, this or last
  week, weekend, month or year, "N days/weeks/months ago" (and the Russian forms: сегодня,
  вчера, позавчера, на этой / прошлой неделе, в прошлые выходные, в прошлом месяце, в прошлом
  году, N дней / недель / месяцев назад);
- "the week / N days / two weeks before <a day>": the stretch before that day.

A day or a month named without its year is its latest occurrence not after now. Every span is
widened by a day after its end (an evening's story is often told the next morning, and a day
boundary depends on the time zone) and a day before a named day.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

__all__ = [
    "EN_NUMBER_WORDS",
    "RU_NUMBER_WORDS",
    "WEEKDAY",
    "day_mentions",
    "month_number",
    "spans",
    "weekday_number",
]

DAY = 86400.0

_EN_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
# Russian month names in every case the questions use (январь, января, январе, …)
_RU_MONTH_STEMS = (
    ("январ", 1),
    ("феврал", 2),
    ("март", 3),
    ("апрел", 4),
    ("июн", 6),
    ("июл", 7),
    ("август", 8),
    ("сентябр", 9),
    ("октябр", 10),
    ("ноябр", 11),
    ("декабр", 12),
)
_RU_MAY = ("май", "мая", "мае", "маем")

_EN_MONTH = r"(?P<m>" + "|".join(sorted(_EN_MONTHS, key=len, reverse=True)) + r")"
_RU_MONTH = (
    r"(?P<rm>(?:"
    + "|".join(s for s, _ in _RU_MONTH_STEMS)
    + r")[а-яё]{0,3}|"
    + "|".join(_RU_MAY)
    + r")"
)
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th|-?го|-?е)?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"

# Counts said in words, one to ten, that both readers of a count share: a question's "two weeks
# ago" here, a reminder's "in two days" in :mod:`core.reminders.due_day`. Each adds its own
# vaguer words ("couple", "несколько", "полторы") around them.
EN_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
RU_NUMBER_WORDS = {
    "один": 1,
    "одну": 1,
    "одна": 1,
    "два": 2,
    "две": 2,
    "три": 3,
    "четыре": 4,
    "пять": 5,
    "шесть": 6,
    "семь": 7,
    "восемь": 8,
    "девять": 9,
    "десять": 10,
}
_NUMBERS = {
    **EN_NUMBER_WORDS,
    "couple": 2,
    "few": 3,
    **RU_NUMBER_WORDS,
    "пару": 2,
    "несколько": 3,
}
_COUNT = r"(?P<n>\d{1,3}|" + "|".join(_NUMBERS) + r")"
# unit → days it spans
_UNITS = (
    (r"days?|дн(?:я|ей|ь)|день|сутки|суток", 1),
    (r"weekends?|выходн[а-яё]*", 7),
    (r"weeks?|недел[а-яё]*", 7),
    (r"fortnight", 14),
    (r"months?|месяц[а-яё]*", 30),
    (r"years?|год[а-яё]*|лет", 365),
)
_UNIT = r"(?P<u>" + "|".join(u for u, _ in _UNITS) + r")"

_PATTERNS_DAY = (
    # 3 June 2023, 3rd of June, 3 июня 2023 года
    re.compile(r"\b" + _DAY + r"(?:\s+of)?\s+" + _EN_MONTH + r"(?:,?\s+" + _YEAR + r")?\b"),
    # June 3, 2023 / June 3rd
    re.compile(r"\b" + _EN_MONTH + r"\s+" + _DAY + r"\b(?:,?\s+" + _YEAR + r"\b)?"),
    re.compile(r"\b" + _DAY + r"\s+" + _RU_MONTH + r"(?:\s+" + _YEAR + r")?(?![а-яё])"),
    # 2023-06-03, 03.06.2023
    re.compile(r"\b(?P<iy>(?:19|20)\d\d)-(?P<im>[01]?\d)-(?P<id>[0-3]?\d)\b"),
    re.compile(r"\b(?P<dd>[0-3]?\d)\.(?P<dm>[01]?\d)\.(?P<dy>(?:19|20)\d\d)\b"),
)
_PATTERNS_MONTH = (
    re.compile(r"\b" + _EN_MONTH + r",?\s+" + _YEAR + r"\b"),
    re.compile(r"(?<![а-яё])" + _RU_MONTH + r"\s+" + _YEAR + r"\b"),
    # "in June" (a bare "may" is a verb: only after in / during / of / last / this)
    re.compile(r"\b(?:in|during|of|last|this|early|late|mid)[\s-]+" + _EN_MONTH + r"\b"),
    re.compile(r"(?<![а-яё])(?:в|во|на|прошлом|прошлый|этом)\s+" + _RU_MONTH + r"(?![а-яё])"),
)
# season → (first month, months it spans); winter begins in the December before its year
_SEASONS = {
    "spring": (3, 3),
    "summer": (6, 3),
    "autumn": (9, 3),
    "fall": (9, 3),
    "winter": (12, 3),
    "весн": (3, 3),
    "лет": (6, 3),
    "осен": (9, 3),
    "зим": (12, 3),
}
_PATTERN_SEASON = re.compile(
    r"(?:\b(?:in|during|last|this|the)\s+(?:the\s+)?(?P<se>spring|summer|autumn|fall|winter)\b"
    r"|\b(?P<se2>spring|summer|autumn|fall|winter)\s+(?=(?:19|20)\d\d)"
    r"|(?<![а-яё])(?P<sr>весн|лет|осен|зим)(?:ой|ом|ью)(?![а-яё]))"
    r"(?:\s+(?:of\s+)?" + _YEAR + r"(?:\s+года)?\b)?"
)
_PATTERN_YEAR = re.compile(
    r"(?:\b(?:in|during|of)\s+|(?<![а-яё])(?:в|во)\s+)" + _YEAR + r"\b(?!\s*[-–.:]\d)"
)
_PATTERN_BEFORE = re.compile(
    r"(?:\b" + _COUNT + r"\s+)?(?:the\s+)?\b" + _UNIT + r"\s+(?:before|prior\s+to|до|перед)\s*$"
)
_PATTERN_AGO = re.compile(r"(?:\b" + _COUNT + r"\s+)?\b" + _UNIT + r"\s+(?:ago|назад)\b")

_RELATIVE_PHRASES = (
    # phrase, (start offset in days from today's midnight, length in days)
    (r"\bthe day before yesterday\b|(?<![а-яё])позавчера(?![а-яё])", (-2, 1)),
    (r"\byesterday\b|\blast night\b|(?<![а-яё])вчера(?![а-яё])", (-1, 1)),
    (r"\btoday\b|\btonight\b|\bthis morning\b|(?<![а-яё])сегодня(?![а-яё])", (0, 1)),
)
_RELATIVE = tuple((re.compile(p), v) for p, v in _RELATIVE_PHRASES)
_LAST_WEEK = re.compile(r"\blast week\b|\bthe past week\b|(?<![а-яё])(?:на\s+)?прошлой\s+неделе")
_THIS_WEEK = re.compile(r"\bthis week\b|(?<![а-яё])на\s+этой\s+неделе")
_LAST_WEEKEND = re.compile(
    r"\b(?:last|this|past) weekend\b|(?<![а-яё])(?:в|на)\s+"
    r"(?:прошлые|прошлых|эти|этих)\s+выходн"
)
_LAST_MONTH = re.compile(r"\blast month\b|(?<![а-яё])в\s+прошлом\s+месяце")
_THIS_MONTH = re.compile(r"\bthis month\b|(?<![а-яё])в\s+этом\s+месяце")
_LAST_YEAR = re.compile(r"\blast year\b|(?<![а-яё])в\s+прошлом\s+году")


# Every pattern above needs one of these (a digit, a month, a season, a unit or a relative
# day): a question with none of them names no time, found with one search instead of all the
# patterns (most questions; it was a quarter of a lexical recall's cost at 10k records).
_ANY_TIME = re.compile(
    r"\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|spring|summer|autumn|fall|winter"
    r"|day|night|morning|week|fortnight|month|year"
    r"|"
    + "|".join(stem for stem, _ in _RU_MONTH_STEMS)
    + "|"
    + "|".join(_RU_MAY)
    + r"|весн|лет|осен|зим|вчера|сегодня|дн|день|сутк|недел|выходн|месяц|год"
)


def _midnight(d: date) -> float:
    return datetime(d.year, d.month, d.day).timestamp()


def _month_start(year: int, month: int) -> date:
    return date(year, month, 1)


def _next_month(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def _latest(today: date, month: int, day: int | None = None) -> date | None:
    """The latest date with this month (and day) that is not after today."""
    for year in (today.year, today.year - 1):
        try:
            d = date(year, month, day or 1)
        except ValueError:
            return None
        if d <= today:
            return d
    return None


def _month_of(match: re.Match) -> int | None:
    groups = match.groupdict()
    if groups.get("m"):
        return _EN_MONTHS[groups["m"].rstrip(".")]
    word = groups.get("rm")
    if word:
        if word in _RU_MAY:
            return 5
        for stem, number in _RU_MONTH_STEMS:
            if word.startswith(stem):
                return number
    return None


def _count(match: re.Match) -> int:
    n = match.groupdict().get("n")
    if not n:
        return 1
    return int(n) if n.isdigit() else _NUMBERS[n]


def _unit_days(word: str) -> int:
    for pattern, days in _UNITS:
        if re.fullmatch(pattern, word):
            return days
    return 1


def _day_span(text: str, match: re.Match, d: date) -> tuple[float, float]:
    """The span a named day stands for: the day itself, or the stretch before it when the
    text says "the week / N days before <day>"."""
    before = _PATTERN_BEFORE.search(text[: match.start()].rstrip(" ,"))
    if before:
        days = _count(before) * _unit_days(before["u"])
        return _midnight(d) - (days + 1) * DAY, _midnight(d) + 2 * DAY
    return _midnight(d) - DAY, _midnight(d) + 2 * DAY


def _scan_days(
    text: str, resolve: Callable[[re.Match, int | None, int, int], Any]
) -> tuple[list[Any], list[tuple[int, int]]]:
    """Every day ``text`` names by its date, each read by ``resolve(match, year or None, month,
    day)``; a match it gives None for is skipped (and its words stay free for another pattern).
    Returns what it gave, in the patterns' order, and the spans taken."""
    out: list[Any] = []
    taken: list[tuple[int, int]] = []
    y: int | None
    for pattern in _PATTERNS_DAY:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            if g.get("iy"):
                y, mo, d = int(g["iy"]), int(g["im"]), int(g["id"])
            elif g.get("dy"):
                y, mo, d = int(g["dy"]), int(g["dm"]), int(g["dd"])
            else:
                month = _month_of(m)
                if month is None:
                    continue
                y, mo, d = (int(g["y"]) if g.get("y") else None), month, int(g["d"])
            got = resolve(m, y, mo, d)
            if got is None:
                continue
            taken.append((m.start(), m.end()))
            out.append(got)
    return out, taken


def _named_days(text: str, today: date) -> tuple[list[tuple[float, float]], list[tuple[int, int]]]:
    def span(m: re.Match, y: int | None, mo: int, d: int) -> tuple[float, float] | None:
        if not 1 <= d <= 31:
            return None
        try:
            day = date(y, mo, d) if y is not None else _latest(today, mo, d)
        except ValueError:
            return None
        return None if day is None else _day_span(text, m, day)

    return _scan_days(text, span)


# Weekdays (issue 29: the reminders read "в субботу", "next Friday"): a pattern whose group
# ``wd`` is one of these words in any case the messages use, and the number it stands for.
_WEEKDAYS = (
    (r"mondays?|понедельник[а-я]{0,2}", 0),
    (r"tuesdays?|вторник[а-я]{0,2}", 1),
    (r"wednesdays?|сред(?:а|у|ы|ам|е)", 2),
    (r"thursdays?|четверг[а-я]{0,2}", 3),
    (r"fridays?|пятниц(?:а|у|ы|ам|е)", 4),
    (r"saturdays?|суббот(?:а|у|ы|ам|е)", 5),
    (r"sundays?|воскресень(?:е|я|ям|ю)", 6),
)
WEEKDAY = r"(?P<wd>" + "|".join(p for p, _ in _WEEKDAYS) + r")"


def weekday_number(word: str) -> int | None:
    """0 (Monday) … 6 (Sunday) for a weekday word :data:`WEEKDAY` matched; None otherwise."""
    for pattern, number in _WEEKDAYS:
        if re.fullmatch(pattern, word):
            return number
    return None


def month_number(word: str) -> int | None:
    """1..12 for an English or Russian month word in any case ("june", "июня", "мае")."""
    word = word.lower().replace("ё", "е").rstrip(".")
    if word in _EN_MONTHS:
        return _EN_MONTHS[word]
    if word in _RU_MAY:
        return 5
    for stem, number in _RU_MONTH_STEMS:
        if word.startswith(stem) and len(word) <= len(stem) + 3:
            return number
    return None


def day_mentions(text: str) -> list[tuple[int, int, int | None, int, int]]:
    """The days ``text`` names by their date ("14 марта", "June 2nd", "2026-06-02",
    "02.06.2026"), in order of position: (start, end, year or None, month, day). The text is
    read as :func:`spans` reads it (lower case, "ё" as "е"); which year a yearless date means
    is the caller's choice (a question looks back, a reminder forward)."""
    text = text.lower().replace("ё", "е")

    def mention(
        m: re.Match, y: int | None, mo: int, d: int
    ) -> tuple[int, int, int | None, int, int] | None:
        try:
            date(y or 2000, mo, d)  # 2000: a leap year, so 29 February stands
        except ValueError:
            return None
        return m.start(), m.end(), y, mo, d

    return sorted(_scan_days(text, mention)[0])


def _says_last(match: re.Match) -> bool:
    return match.group(0).startswith(("last", "прошл"))


def spans(query: str, now: float) -> list[tuple[float, float]]:
    """The times ``query`` names, as [start, end) epoch seconds; empty when it names none."""
    text = " ".join(query.lower().replace("ё", "е").split())
    if not text or not _ANY_TIME.search(text):
        return []
    today = datetime.fromtimestamp(now).date()
    t0 = _midnight(today)
    out, taken = _named_days(text, today)

    def free(m: re.Match) -> bool:
        return not any(a < m.end() and m.start() < b for a, b in taken)

    for pattern in _PATTERNS_MONTH:
        for m in pattern.finditer(text):
            month = _month_of(m)
            if month is None or not free(m):
                continue
            year = m.groupdict().get("y")
            start = _month_start(int(year), month) if year else _latest(today, month)
            if start is None:
                continue
            if not year and _says_last(m) and start.month == today.month:
                start = date(start.year - 1, start.month, 1)  # "last June", said in June
            taken.append((m.start(), m.end()))
            out.append((_midnight(start), _midnight(_next_month(start)) + DAY))
    for m in _PATTERN_SEASON.finditer(text):
        first, length = _SEASONS[m["se"] or m["se2"] or m["sr"]]
        if m["y"]:
            start = date(int(m["y"]) - (first == 12), first, 1)
        else:
            start = _latest(today, first)
            if start is None:
                continue
            if _says_last(m):  # "last winter" in December: the one before this one
                start = date(start.year - 1, start.month, 1)
        end = start
        for _ in range(length):
            end = _next_month(end)
        taken.append((m.start(), m.end()))
        out.append((_midnight(start), _midnight(end) + DAY))
    for m in _PATTERN_YEAR.finditer(text):
        if free(m):
            y = int(m["y"])
            out.append((_midnight(date(y, 1, 1)), _midnight(date(y + 1, 1, 1)) + DAY))
    for pattern, (offset, length) in _RELATIVE:
        if pattern.search(text):
            out.append((t0 + offset * DAY, t0 + (offset + length + 1) * DAY))
    monday = t0 - today.weekday() * DAY
    if _LAST_WEEK.search(text):
        out.append((monday - 7 * DAY, monday + DAY))
    if _THIS_WEEK.search(text):
        out.append((monday, t0 + 2 * DAY))
    if _LAST_WEEKEND.search(text):
        # the latest Saturday–Sunday that has begun (this one, if today is one of them)
        saturday = t0 - ((today.weekday() - 5) % 7) * DAY
        out.append((saturday - DAY, saturday + 3 * DAY))
    if _LAST_MONTH.search(text):
        this_month = _month_start(today.year, today.month)
        prev = _month_start(
            this_month.year - (this_month.month == 1), (this_month.month - 2) % 12 + 1
        )
        out.append((_midnight(prev), _midnight(this_month) + DAY))
    if _THIS_MONTH.search(text):
        out.append((_midnight(_month_start(today.year, today.month)), t0 + 2 * DAY))
    if _LAST_YEAR.search(text):
        out.append((_midnight(date(today.year - 1, 1, 1)), _midnight(date(today.year, 1, 1)) + DAY))
    for m in _PATTERN_AGO.finditer(text):
        days = _count(m) * _unit_days(m["u"])
        slack = max(1.0, days / 4)  # "three weeks ago" is not to the day
        out.append((t0 - (days + slack) * DAY, t0 - (days - slack - 1) * DAY))
    return sorted(set(out))


# ------------------------------------------------------------------ a memory's relative times
# A memory keeps the owner's words, "I lost my job yesterday"; read months later, "yesterday" is
# no longer that day. The prompt line shows the day each relative time of the words meant,
# counted from the day the memory was said (its ``updated_at``): "yesterday (19 January 2023)". The
# stored words never change.
# the text is read in lower case, as spans reads a question: the patterns above are lower case
_SAID_DAY = (
    *((pattern, offset) for pattern, (offset, _) in _RELATIVE),
    (re.compile(r"\bthe day after tomorrow\b|(?<![а-яё])послезавтра(?![а-яё])"), 2),
    (re.compile(r"\btomorrow\b|(?<![а-яё])завтра(?![а-яё])"), 1),
)
_NEXT_WEEK = re.compile(r"\bnext week\b|(?<![а-яё])на\s+следующей\s+неделе")
_NEXT_MONTH = re.compile(r"\bnext month\b|(?<![а-яё])в\s+следующем\s+месяце")
_NEXT_YEAR = re.compile(r"\bnext year\b|(?<![а-яё])в\s+следующем\s+году")
_IN_UNITS = re.compile(r"(?:\bin|(?<![а-яё])через)\s+" + _COUNT + r"\s+" + _UNIT + r"(?![\wа-яё])")
_VAGUE = frozenset({"few", "couple", "несколько", "пару"})  # "a few days ago": about
# a unit said without a count that still means one of it ("неделю назад", "a week ago" has "a")
_ONE_UNIT = frozenset(
    [
        "day",
        "week",
        "weekend",
        "fortnight",
        "month",
        "year",
        "день",
        "сутки",
        "неделю",
        "неделя",
        "месяц",
        "год",
    ]
)
_LAST_WEEKDAY = re.compile(
    r"(?:\b(?:last|this past|past)|(?<![а-яё])в\s+прошл(?:ый|ую|ое))\s+" + WEEKDAY + r"(?![\wа-яё])"
)


def _day_text(d: date) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


def _shift_months(d: date, months: int) -> date:
    k = d.year * 12 + d.month - 1 + months
    return date(k // 12, k % 12 + 1, 1)


def dated(content: str, said_at: float) -> str:
    """``content`` with the day each relative time in it meant when it was said at
    ``said_at``, in brackets after it: "I lost my job yesterday (19 January 2023)", "в прошлом
    месяце (December 2022)", "two weeks ago (about 6 January 2023)", "next week (the week after 20
    January 2023)", "last Friday (Friday 14 July 2023)". Unchanged when it names none."""
    low = content.lower().replace("ё", "е")
    if len(low) != len(content) or not (_ANY_TIME.search(low) or _LAST_WEEKDAY.search(low)):
        return content
    said = datetime.fromtimestamp(said_at).date()
    notes: list[tuple[int, int, str]] = []

    def add(m: re.Match, text: str) -> None:
        if not any(a < m.end() and m.start() < b for a, b, _ in notes):
            notes.append((m.start(), m.end(), text))

    for pattern, offset in _SAID_DAY:
        for m in pattern.finditer(low):
            add(m, _day_text(date.fromordinal(said.toordinal() + offset)))
    weekly = (
        (_LAST_WEEK, "the week before"),
        (_THIS_WEEK, "the week of"),
        (_NEXT_WEEK, "the week after"),
        (_LAST_WEEKEND, "the weekend before"),
    )
    for pattern, words in weekly:
        for m in pattern.finditer(low):
            add(m, f"{words} {_day_text(said)}")
    monthly = ((_LAST_MONTH, -1), (_THIS_MONTH, 0), (_NEXT_MONTH, 1))
    for pattern, months in monthly:
        for m in pattern.finditer(low):
            add(m, _shift_months(said, months).strftime("%B %Y"))
    for pattern, years in ((_LAST_YEAR, -1), (_NEXT_YEAR, 1)):
        for m in pattern.finditer(low):
            add(m, str(said.year + years))
    for pattern, sign in ((_PATTERN_AGO, -1), (_IN_UNITS, 1)):
        for m in pattern.finditer(low):
            if not m["n"] and m["u"] not in _ONE_UNIT:
                continue  # "years ago", "недели назад": how many is not said
            days = _count(m) * _unit_days(m["u"]) * sign
            when = date.fromordinal(said.toordinal() + days)
            vague = m["n"] in _VAGUE or abs(days) >= 7
            if abs(days) >= 365:
                text = f"about {when.year}"
            elif abs(days) >= 30:
                text = f"about {when.strftime('%B %Y')}"
            else:
                text = f"about {_day_text(when)}" if vague else _day_text(when)
            add(m, text)
    for m in _LAST_WEEKDAY.finditer(low):
        wd = weekday_number(m["wd"])
        if wd is not None:
            back = (said.weekday() - wd - 1) % 7 + 1  # the latest one before the day it was said
            when = date.fromordinal(said.toordinal() - back)
            add(m, f"{when.strftime('%A')} {_day_text(when)}")
    out = content
    for _, end, text in sorted(notes, reverse=True):
        out = f"{out[:end]} ({text}){out[end:]}"
    return out
