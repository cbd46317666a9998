"""The day a memory points to (SPEC §8.11, issue 29), read from its words.

:func:`read` finds the time a memory's words point to, read against when they were said:

- an absolute day: "14 марта", "June 2nd", "2026-06-02" (a yearless day is its next
  occurrence; one just past is a story about it, not a plan);
- a relative one: "завтра", "послезавтра", "в субботу", "next Friday", "через две недели",
  "in 3 days", "на выходных", "next week" (its Monday), "в конце месяца", "после праздников"
  (the New Year or May holidays, when one is near), "в июне" (its first day);
- a recurrence: "по средам", "every Wednesday", "каждое 5-е число", "every March 14", a
  birthday or an anniversary with its day.

Times that are not due dates give nothing: "три года назад", "в детстве", "last year", and a
weekday or a day told in the past tense ("в субботу ходили в кино"). A correction ("перенесли с
субботы на воскресенье", "не в пятницу, а в субботу") gives the new day.

The calendar arithmetic of due days (:func:`local_day`, :func:`next_yearly`) and a "done"
mark's words (:func:`strip_done`) are here too; what is due on a day is
:mod:`core.reminders.schedule`'s.
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from core.timeframe import (
    EN_NUMBER_WORDS,
    RU_NUMBER_WORDS,
    WEEKDAY,
    day_mentions,
    month_number,
    weekday_number,
)

__all__ = [
    "Due",
    "local_day",
    "next_yearly",
    "read",
    "says_moved",
    "strip_done",
    "topic_stems",
]

EVERY = ("week", "month", "year")

# the words a "done" mark adds to a memory ("(done 23.05.2026)"), never read as a due day
_DONE_MARK = re.compile(r"\s*\((?:done|сделано|выполнено)[^)]*\)", re.IGNORECASE)

_W = r"(?<![\w])"  # a word starts here (Cyrillic and Latin alike)
_E = r"(?![\w])"  # and ends here

_FUTURE = re.compile(
    _W + r"(?:will|won't|'ll|going to|gonna|have to|has to|need to|needs to|must|promised?|"
    r"plan(?:s|ned|ning)?|scheduled|booked|appointment|deadline|remind(?: me)?|due|moved|"
    r"postponed|rescheduled|pushed|coming|is on|are on|starts?|don't forget|do not forget|"
    r"expect(?:ing)?|arrives?|arriving|flying|leaving|meeting|visiting|taking|getting|"
    r"want to|wants to|should|hoping|next|tomorrow|tonight|"
    r"буду|будет|будем|будут|собира[а-яё]*|планир[а-яё]*|обеща[а-яё]*|пообеща[а-яё]*|"
    r"договорил[а-яё]*|надо|нужно|должен|должна|должны|забыть|напомн[а-яё]*|записал[а-яё]*|"
    r"запис[ьи]|назнач[а-яё]*|перенес[а-яё]*|перенос[а-яё]*|хочу|хотим|хочет|идем|пойд[а-яё]*|"
    r"поед[а-яё]*|еду|едем|едет|приед[а-яё]*|прилета[а-яё]*|прилетит|улета[а-яё]*|улечу|"
    r"уезжа[а-яё]*|встреча|встречаемся|экзамен[а-яё]*|дедлайн|сдать|сдаю|починю|позвоню|"
    r"схожу|куплю|заберу|отвезу|приду|придет|приезжает|следующ[а-яё]*|завтра|послезавтра|"
    r"планы|план|обещание|не забудь|надеюсь|начинается|начнется|будет)" + _E,
    re.IGNORECASE,
)
_PAST_EN = re.compile(
    r"\b(?:was|were|went|did|had|got|came|saw|met|ago|last|yesterday|used to|back then|"
    r"visited|finished|bought|fixed|called|told|took|gave|made|spent|watched|played|"
    r"[a-z]{3,}ed)\b"
)
_PAST_RU = re.compile(
    r"(?<![а-яё])(?:был|была|были|было|вчера|позавчера|назад|детстве|когда-то|прошл[а-яё]*|"
    r"[а-яё]{1,}[аеиоуыяю]л(?:а|и|о|ся|ась|ись|ось)?)(?![а-яё])"
)
_NOT_PAST = {
    "недели",
    "цели",
    "дела",
    "тела",
    "села",
    "сила",
    "мила",
    "школа",
    "пила",
    "дали",
    "земли",
    "весла",
    "стола",
    "пола",
    "котла",
    "мало",
    "смело",
    "число",
    "числа",
    "чисел",
    "орел",
    "стул",
    "угол",
    "зал",
    "мол",
    "ели",
    "ела",
    "дал",
    "ал",
    "оли",
    "юли",
    "коли",
    "кола",
    "поли",
    "сел",
    "дел",
    "тел",
    "пол",
    "гол",
    "бал",
    "вол",
    "вокзал",
    "канал",
    "финал",
    "журнал",
    "сигнал",
    "материал",
    "фестиваль",
    "идеал",
    "капитал",
    "сериал",
    "ресторан",
    "футбол",
    "апреля",
    "мыло",
    "было",
    "ули",
    "нули",
    "рубли",
    "ноль",
    "около",
    "весело",
    "тепло",
    "светло",
    "жила",
}


def _direction(text: str) -> str:
    """'future' (a plan, a promise, a cue of the future), 'past' (a story), or '' (no cue)."""
    if _FUTURE.search(text):
        return "future"
    if _PAST_EN.search(text):
        return "past"
    for m in _PAST_RU.finditer(text):
        if m.group(0) not in _NOT_PAST:
            return "past"
    return ""


@dataclass(frozen=True)
class Due:
    """The day a memory points to: ``on`` (for a recurrence its first occurrence after it was
    said), ``every`` (None, "week", "month", "year") and how it was read."""

    on: date
    every: str | None
    how: str  # absolute | relative | weekday | month | holiday | week | month_day | yearly
    phrase: str  # the words it was read from
    said: date  # the day they were said (a relative phrase is read against it)

    @property
    def read_as(self) -> str:
        """The ``due_read`` column: how it was read, as JSON."""
        return json.dumps(
            {"how": self.how, "phrase": self.phrase, "said": self.said.isoformat()},
            ensure_ascii=False,
        )

    def columns(self) -> tuple[str, str | None, str]:
        return self.on.isoformat(), self.every, self.read_as


def strip_done(text: str) -> str:
    return _DONE_MARK.sub("", text)


def local_day(t: float) -> date:
    return datetime.fromtimestamp(t).date()


def _add_months(d: date, n: int) -> date:
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    return date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


def _next_weekday(said: date, wd: int, *, next_week: bool = False) -> date:
    if next_week:
        return said - timedelta(days=said.weekday()) + timedelta(days=7 + wd)
    ahead = (wd - said.weekday()) % 7 or 7
    return said + timedelta(days=ahead)


def next_yearly(said: date, month: int, day: int, *, include_today: bool = True) -> date:
    for y in (said.year, said.year + 1, said.year + 2, said.year + 3, said.year + 4):
        try:
            d = date(y, month, day)
        except ValueError:
            d = date(y, month, 28)  # 29 February in a common year
        if d > said or (include_today and d == said):
            return d
    return date(said.year + 1, month, min(day, 28))


_NUM = {
    **EN_NUMBER_WORDS,
    "couple of": 2,
    "a couple of": 2,
    "few": 3,
    **RU_NUMBER_WORDS,
    "пару": 2,
    "полторы": 1,
}
_COUNT = r"(?P<n>\d{1,3}|" + "|".join(sorted(map(re.escape, _NUM), key=len, reverse=True)) + r")"
_UNIT = (
    r"(?P<u>hours?|часа|часов|час|days?|дн(?:я|ей)|день|weeks?|недел[юиь]|недель|"
    r"months?|месяц(?:а|ев)?|years?|год(?:а)?|лет)"
)
_IN = re.compile(r"(?:\bin\s+|" + _W + r"через\s+)(?:" + _COUNT + r"\s+)?" + _UNIT + _E)
_RU_PLURAL_WD = r"(?P<pwd>понедельникам|вторникам|средам|четвергам|пятницам|субботам|воскресеньям)"
_WEEKLY = re.compile(
    r"(?:\b(?:every|each)\s+" + WEEKDAY + r"\b|\bon\s+(?P<ewd>mondays|tuesdays|wednesdays|"
    r"thursdays|fridays|saturdays|sundays)\b|"
    + _W
    + r"по\s+"
    + _RU_PLURAL_WD
    + _E
    + r"|"
    + _W
    + r"кажд[а-яё]+\s+(?P<rwd>понедельник|вторник|среду|четверг|пятницу|субботу|"
    r"воскресенье)" + _E + ")"
)
_MONTHLY = re.compile(
    r"(?:\b(?:every|each)\s+month\s+on\s+the\s+(?P<d1>\d{1,2})(?:st|nd|rd|th)?\b"
    r"|\bon\s+the\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?\s+of\s+(?:every|each)\s+month\b"
    r"|" + _W + r"кажд[а-яё]+\s+(?P<d3>\d{1,2})(?:-?[а-яё]{1,2})?\s+числ[а-яё]*"
    r"|" + _W + r"(?P<d4>\d{1,2})(?:-?[а-яё]{1,2})?\s+числа\s+каждого\s+месяца)"
)
_YEARLY_CUE = re.compile(
    r"birthday|anniversary|every year|each year|annually|was born|"
    r"(?<![а-яё])(?:день рождени|днюх|годовщин|каждый год|ежегодн|именины|родил(?:ся|ась))"
)
# a habit of the past ("раньше по субботам ходил", "I used to … on Saturdays"): no day
_FORMER = re.compile(r"\bused to\b|(?<![а-яё])(?:раньше|когда-то|в детстве)(?![а-яё])")
_EVERY_BEFORE = re.compile(r"(?:\b(?:every|each)|" + _W + r"кажд[а-яё]+)\s*$")
_WEEKDAY_RE = re.compile(
    r"(?P<pre>\b(?:next|this|coming|on|by|until|till|from|to)\s+|"
    + _W
    + r"(?:в|во|на|к|до|с|со)\s+(?:(?:эту|этот|это|следующ[а-яё]+|ближайш[а-яё]+)\s+)?)?"
    + WEEKDAY
    + _E
)
_RELATIVE = (
    (re.compile(r"\bthe day after tomorrow\b|" + _W + r"послезавтра" + _E), 2, "relative"),
    (re.compile(r"\btomorrow\b|" + _W + r"(?<!после)завтра" + _E), 1, "relative"),
    (
        re.compile(r"\btoday\b|\btonight\b|\bthis (?:evening|afternoon)\b|" + _W + r"сегодня" + _E),
        0,
        "relative",
    ),
)
_NEXT_WEEK = re.compile(r"\bnext week\b|" + _W + r"на следующей неделе" + _E)
_END_WEEK = re.compile(
    r"\b(?:by )?the end of (?:the|this) week\b|" + _W + r"(?:в|к) конц[уе] недели" + _E
)
_WEEKEND = re.compile(
    r"\b(?:this|next|on the|at the|over the) weekend\b|"
    + _W
    + r"(?:на|в) (?:эти |эт[иу]х |ближайшие )?выходн(?:ых|ые)"
    + _E
)
_END_MONTH = re.compile(
    r"\b(?:by )?the end of (?:the|this) month\b|" + _W + r"(?:в|к) конц[уе] (?:этого )?месяца" + _E
)
_NEXT_MONTH = re.compile(
    r"\bnext month\b|\bearly next month\b|"
    + _W
    + r"(?:в следующем месяце|в начале следующего месяца)"
    + _E
)
_HOLIDAYS = re.compile(
    r"\bafter the holidays\b|" + _W + r"после (?:праздников|новогодних "
    r"праздников|майских|нового года|каникул)" + _E
)
_MONTH_RE = re.compile(
    r"(?:\b(?:in|this|next|early|late|mid)[\s-]+(?P<m>january|february|march|"
    r"april|may|june|july|august|september|october|november|december)\b"
    r"|" + _W + r"(?:в|во|к|на)\s+(?:следующем\s+)?(?P<rm>январе|феврале|"
    r"марте|апреле|мае|июне|июле|августе|сентябре|октябре|ноябре|декабре)" + _E + ")"
)
_CHANGE = re.compile(
    r"\b(?:moved|postponed|rescheduled|pushed|changed|instead)\b|"
    + _W
    + r"(?:перенес[а-яё]*|перенос[а-яё]*|передвину[а-яё]*|сдвину[а-яё]*|"
    r"вместо|поменял[а-яё]*)" + _E
)
_NEGATED = re.compile(r"(?:\bnot\b|" + _W + r"не)\s*(?:\S+\s+){0,1}$")


@dataclass(frozen=True)
class _Cand:
    start: int
    end: int
    on: date
    every: str | None
    how: str


def _holidays(said: date) -> date | None:
    """ "После праздников": the first day after the New Year holidays (9 January) when said in
    December or early January, after the May holidays (12 May) when said from late April."""
    if said.month == 12:
        return date(said.year + 1, 1, 9)
    if said.month == 1 and said.day <= 8:
        return date(said.year, 1, 9)
    if (said.month == 4 and said.day >= 20) or (said.month == 5 and said.day <= 11):
        return date(said.year, 5, 12)
    return None


def _candidates(text: str, said: date, direction: str) -> list[_Cand]:
    out: list[_Cand] = []
    past = direction == "past"
    yearly = bool(_YEARLY_CUE.search(text))
    for start, end, y, mo, d in day_mentions(text):
        every_before = _EVERY_BEFORE.search(text[:start])
        if yearly or every_before:
            out.append(_Cand(start, end, next_yearly(said, mo, d), "year", "yearly"))
            continue
        if y is not None:
            when = date(y, mo, d)
            if when >= said:
                out.append(_Cand(start, end, when, None, "absolute"))
            continue
        when = next_yearly(said, mo, d)
        if when.year > said.year:  # this year's day is past
            this_year = date(said.year, mo, min(d, calendar.monthrange(said.year, mo)[1]))
            if past or (said - this_year).days <= 45:
                continue  # a story about a day just past
        out.append(_Cand(start, end, when, None, "absolute"))
    for m in _MONTHLY.finditer(text):
        day = int(next(g for g in (m["d1"], m["d2"], m["d3"], m["d4"]) if g))
        if 1 <= day <= 31:
            first = said + timedelta(days=1)
            while first.day != min(day, calendar.monthrange(first.year, first.month)[1]):
                first += timedelta(days=1)
            out.append(_Cand(m.start(), m.end(), first, "month", "month_day"))
    weekly_spans = []
    for m in _WEEKLY.finditer(text):
        word = m["wd"] or m["ewd"] or m["pwd"] or m["rwd"]
        if m["ewd"]:
            wd = weekday_number(word[:-1])
        elif m["wd"]:
            wd = weekday_number(word)
        else:
            wd = _plural_weekday(word)
        if wd is None:
            continue
        weekly_spans.append((m.start(), m.end()))
        out.append(_Cand(m.start(), m.end(), _next_weekday(said, wd), "week", "week"))
    for m in _WEEKDAY_RE.finditer(text):
        if any(a <= m.start("wd") < b for a, b in weekly_spans):
            continue
        wd = weekday_number(m["wd"])
        if wd is None:
            continue
        pre = (m["pre"] or "").strip()
        if not pre:
            continue  # "люблю субботы", "I hate Mondays": a weekday, not a day
        next_week = pre.startswith(("next", "следующ")) or " следующ" in f" {pre}"
        if past and not next_week:
            continue
        out.append(
            _Cand(m.start(), m.end(), _next_weekday(said, wd, next_week=next_week), None, "weekday")
        )
    for pattern, days, how in _RELATIVE:
        for m in pattern.finditer(text):
            if days == 0 and past:
                continue
            out.append(_Cand(m.start(), m.end(), said + timedelta(days=days), None, how))
    for m in _IN.finditer(text):
        n = m["n"]
        count = 1 if n is None else (int(n) if n.isdigit() else _NUM[n])
        unit = m["u"]
        if unit.startswith(("hour", "час")):
            when = said
        elif unit.startswith(("day", "дн", "ден")):
            when = said + timedelta(days=count)
        elif unit.startswith(("week", "недел")):
            when = said + timedelta(days=7 * count)
        elif unit.startswith(("month", "месяц")):
            when = _add_months(said, count)
        else:
            when = _add_months(said, 12 * count)
        out.append(_Cand(m.start(), m.end(), when, None, "relative"))
    monday_next = said - timedelta(days=said.weekday()) + timedelta(days=7)
    for pattern, when in (
        (_NEXT_WEEK, monday_next),
        (_END_WEEK, said - timedelta(days=said.weekday()) + timedelta(days=4)),
        (_END_MONTH, date(said.year, said.month, calendar.monthrange(said.year, said.month)[1])),
        (_NEXT_MONTH, _add_months(date(said.year, said.month, 1), 1)),
    ):
        for m in pattern.finditer(text):
            if when >= said:
                out.append(_Cand(m.start(), m.end(), when, None, "relative"))
    if not past:
        for m in _WEEKEND.finditer(text):
            sat = said + timedelta(days=(5 - said.weekday()) % 7) if said.weekday() != 6 else said
            out.append(_Cand(m.start(), m.end(), sat, None, "relative"))
        for m in _MONTH_RE.finditer(text):
            month = month_number(m["m"] or m["rm"])
            if month is None or month == said.month:
                continue
            out.append(_Cand(m.start(), m.end(), next_yearly(said, month, 1), None, "month"))
    for m in _HOLIDAYS.finditer(text):
        holiday = _holidays(said)
        if holiday is not None:
            out.append(_Cand(m.start(), m.end(), holiday, None, "holiday"))
    return out


def _plural_weekday(word: str) -> int | None:
    for stem, wd in (
        ("понедельник", 0),
        ("вторник", 1),
        ("сред", 2),
        ("четверг", 3),
        ("пятниц", 4),
        ("суббот", 5),
        ("воскресен", 6),
    ):
        if word.startswith(stem):
            return wd
    return None


def read(content: str, said_at: float) -> Due | None:
    """The day ``content`` points to, read against ``said_at`` (epoch seconds, the owner's
    local calendar); None when it names no due time."""
    text = " ".join(strip_done(content).lower().replace("ё", "е").split())
    if not text:
        return None
    said = local_day(said_at)
    if _FORMER.search(text):
        return None
    direction = _direction(text)
    cands = _candidates(text, said, direction)
    if not cands:
        return None
    # overlapping readings: the longer (the more specific) wins
    cands.sort(key=lambda c: (c.start, -(c.end - c.start)))
    kept: list[_Cand] = []
    for c in cands:
        if kept and c.start < kept[-1].end:
            if c.every and not kept[-1].every:
                kept[-1] = c  # "every Friday" over "Friday"
            continue
        kept.append(c)
    live = [c for c in kept if not _NEGATED.search(text[: c.start])]
    if not live:
        return None
    if _CHANGE.search(text):
        pick = live[-1]  # "moved from Saturday to Sunday": the new day
    else:
        recurring = [c for c in live if c.every]
        absolute = [c for c in live if c.how in ("absolute", "yearly")]
        pick = (recurring or absolute or live)[0]
    return Due(pick.on, pick.every, pick.how, text[pick.start : pick.end].strip(), said)


def says_moved(content: str) -> bool:
    """Whether the words say a dated thing moved ("перенесли на 2 июня", "moved to Friday")."""
    return bool(_CHANGE.search(content.lower().replace("ё", "е")))


# stems of day words: two records sharing only "saturday" are not about one thing
_DAY_STEMS = re.compile(
    r"^(?:\d+|monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today|week|"
    r"month|year|next|move|moved|postpon|reschedul|понедельник|вторник|сред|четверг|пятниц|суббот|"
    r"воскресен|завтр|послезавтр|сегодн|недел|месяц|год|перенес|перенесл|следующ|"
    r"январ|феврал|март|апрел|ма|июн|июл|август|сентябр|октябр|ноябр|декабр|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"the|to|on|in|and|на|в|с|и|не|а)$"
)


def topic_stems(stems: Iterable[str]) -> set[str]:
    """A record's stems without the day words (what the dated thing is)."""
    return {s for s in stems if len(s) >= 3 and not _DAY_STEMS.match(s)}
