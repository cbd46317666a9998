"""A question that names a time (SPEC §4, relevance; core.timeframe): a record said within the
named day, month, season, year or relative stretch counts as more relevant; a record said at
another time keeps its score, and a record unrelated to the question gains nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime

import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig
from core.clock import ManualClock
from core.config import DAY
from core.timeframe import spans

NOW = datetime(2026, 12, 1, 12, 0).timestamp()  # a Tuesday


def days(query: str, now: float = NOW) -> list[tuple[date, date]]:
    """The spans as (first day, day after the last) in the local calendar."""
    return [
        (datetime.fromtimestamp(a).date(), datetime.fromtimestamp(b).date())
        for a, b in spans(query, now)
    ]


@pytest.mark.parametrize(
    "query, expected",
    [
        # a named day: the day before (a time zone) to the day after (told the next morning)
        ("What did I do on 3 June, 2023?", [(date(2023, 6, 2), date(2023, 6, 5))]),
        ("What did John do on June 3rd 2023?", [(date(2023, 6, 2), date(2023, 6, 5))]),
        ("Что я делала 3 июня 2023 года?", [(date(2023, 6, 2), date(2023, 6, 5))]),
        ("Что было 8 марта?", [(date(2026, 3, 7), date(2026, 3, 10))]),  # latest 8 March
        # a month: the latest one not after today when no year is named
        ("Where did I travel in July 2022?", [(date(2022, 7, 1), date(2022, 8, 2))]),
        ("Where did I go in June?", [(date(2026, 6, 1), date(2026, 7, 2))]),
        ("Куда я ездил в мае?", [(date(2026, 5, 1), date(2026, 6, 2))]),
        ("What happened last December?", [(date(2025, 12, 1), date(2026, 1, 2))]),
        # seasons and years
        ("What state did I visit in summer 2021?", [(date(2021, 6, 1), date(2021, 9, 2))]),
        ("Что я делал летом?", [(date(2026, 6, 1), date(2026, 9, 2))]),
        ("Где я был зимой 2022 года?", [(date(2021, 12, 1), date(2022, 3, 2))]),
        ("What did I achieve in 2022?", [(date(2022, 1, 1), date(2023, 1, 2))]),
        # relative to now
        ("What did I tell you yesterday?", [(date(2026, 11, 30), date(2026, 12, 2))]),
        ("Что я говорил вчера?", [(date(2026, 11, 30), date(2026, 12, 2))]),
        ("Where was I last week?", [(date(2026, 11, 23), date(2026, 12, 1))]),
        ("Что я делал на прошлой неделе?", [(date(2026, 11, 23), date(2026, 12, 1))]),
        ("What did I do last weekend?", [(date(2026, 11, 27), date(2026, 12, 1))]),
        ("Что я рассказывал в прошлом месяце?", [(date(2026, 11, 1), date(2026, 12, 2))]),
        ("What did I buy three weeks ago?", [(date(2026, 11, 4), date(2026, 11, 16))]),
        # the stretch before a named day
        (
            "What did John do the week before August 3, 2023?",
            [(date(2023, 7, 26), date(2023, 8, 5))],
        ),
        (
            "What did Maria adopt two weeks before 11 August 2023?",
            [(date(2023, 7, 27), date(2023, 8, 13))],
        ),
    ],
)
def test_the_times_a_question_names(query, expected):
    assert days(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "May I ask you something?",  # a verb, not a month
        "Расскажи про маяк",  # a word that starts like a month
        "How long have you been married?",
        "I have 3 cats and 2 dogs",
        "Я переехала в Лиссабон",
        "",
    ],
)
def test_a_question_that_names_no_time_has_no_span(query):
    assert spans(query, NOW) == []


def _open(tmp_path, clock: ManualClock, **cfg) -> Memory:
    return Memory.open(tmp_path / "m.db", MemoryConfig(recall_floor=0.0, **cfg), clock)


@pytest.mark.parametrize(
    "said, asked",
    [
        (
            (
                "Went to a concert with Lena, great evening",
                "Went to a concert with Oleg, loud but fun",
            ),
            ("Which concert did I go to?", "Which concert did I go to in May?"),
        ),
        (
            ("Ходила на концерт с Леной, чудесный вечер", "Ходила на концерт с Олегом, громко"),
            ("На какой концерт я ходила?", "На какой концерт я ходила в мае?"),
        ),
    ],
)
def test_a_record_said_in_the_named_month_outranks_a_fresher_equally_relevant_one(
    tmp_path, said, asked
):
    """SPEC §4: among comparably relevant memories the fresher wins — unless the question names
    a time, when the one said then is what it asks about."""
    clock = ManualClock(datetime(2026, 5, 12, 18).timestamp())
    mem = _open(tmp_path, clock)
    may = mem.save(said[0], kind="event").id
    clock.set(datetime(2026, 8, 20, 18).timestamp())
    august = mem.save(said[1], kind="event").id
    clock.set(datetime(2026, 9, 1, 10).timestamp())
    assert [h.id for h in mem.recall(asked[0], OWNER_TRUSTED)] == [august, may]
    assert [h.id for h in mem.recall(asked[1], OWNER_TRUSTED)] == [may, august]
    mem.close()


def test_the_named_time_refines_relevance_and_never_adds_an_unrelated_record(tmp_path):
    """A record said on the named day but sharing nothing with the question is not recalled
    for it; the relevance of one that is related doubles (timeframe_boost 1.0)."""
    clock = ManualClock(datetime(2023, 6, 3, 15).timestamp())
    mem = _open(tmp_path, clock)
    related = mem.save("Maria started volunteering at a dog shelter").id
    unrelated = mem.save("The weather is cold and rainy").id
    clock.set(datetime(2023, 9, 1, 10).timestamp())
    query = "What did Maria start on 3 June, 2023?"
    after = {h.id: h.relevance for h in mem.recall(query, OWNER_TRUSTED)}
    mem.config = replace(mem.config, timeframe_boost=0.0)
    before = {h.id: h.relevance for h in mem.recall(query, OWNER_TRUSTED)}
    assert unrelated not in before
    assert unrelated not in after
    assert after[related] == pytest.approx(2 * before[related], rel=0.05)
    mem.close()


def test_timeframe_boost_zero_turns_it_off_and_bad_values_are_refused(tmp_path):
    clock = ManualClock(datetime(2026, 5, 12, 18).timestamp())
    mem = _open(tmp_path, clock, timeframe_boost=0.0)
    may = mem.save("Went to a concert with Lena").id
    clock.advance(100 * DAY)
    august = mem.save("Went to a concert with Oleg").id
    clock.advance(10 * DAY)
    assert [h.id for h in mem.recall("Which concert in May?", OWNER_TRUSTED)][:2] == [august, may]
    mem.close()
    with pytest.raises(ValueError, match="timeframe_boost"):
        MemoryConfig(timeframe_boost=-1)


# ------------------------------------------------------------------ a memory's relative times


@pytest.mark.parametrize(
    "said, shown",
    [
        (
            "I lost my job as a banker yesterday, so I'm starting a studio.",
            "I lost my job as a banker yesterday (30 November 2026), so I'm starting a studio.",
        ),
        (
            "Вчера ходила к врачу, а завтра едем в Сочи.",
            "Вчера (30 November 2026) ходила к врачу, а завтра (2 December 2026) едем в Сочи.",
        ),
        (
            "Two weeks ago I went to Paris. Last month I started pottery.",
            "Two weeks ago (about 17 November 2026) I went to Paris. Last month (November 2026)"
            " I started pottery.",
        ),
        (
            "I gave a talk at a school last week.",
            "I gave a talk at a school last week (the week before 1 December 2026).",
        ),
        ("Через 3 дня экзамен.", "Через 3 дня (4 December 2026) экзамен."),
        ("We moved last year.", "We moved last year (2025)."),
        ("A few days ago I met Ann.", "A few days ago (about 28 November 2026) I met Ann."),
        ("Неделю назад был в Москве.", "Неделю назад (about 24 November 2026) был в Москве."),
        (
            "I went to a pottery workshop last Friday.",
            "I went to a pottery workshop last Friday (Friday 27 November 2026).",
        ),
        ("В прошлую субботу гуляли.", "В прошлую субботу (Saturday 28 November 2026) гуляли."),
        # no relative time, or no count to count from: the words as they are
        ("I'm training for the Leeds half marathon in May.", None),
        ("Years ago I lived in Paris, weeks ago I was back.", None),
        ("Hi Eva, I'm Callum, 44, I drive trams in Edinburgh.", None),
    ],
)
def test_a_memory_s_relative_times_show_the_day_they_meant(said, shown):
    """Issue 26 item 6 (LoCoMo, "When did …?"): a memory keeps the owner's words, and months
    later "yesterday" is no longer that day — the replies said "Jon lost his job yesterday" of
    a job lost three months before. The day each relative time meant, counted from the day the
    words were said, is shown after it."""
    from core.timeframe import dated

    assert dated(said, NOW) == (said if shown is None else shown)


def test_the_prompt_shows_the_day_and_keeps_the_words():
    """§5 with §8.10: the recalled line and the core line carry the day; the stored record, the
    memory tools' lines and the record Eva may quote keep the owner's words."""
    from core.memory import prompt_section as ps

    clock = ManualClock(NOW)
    with Memory.open(":memory:", MemoryConfig(), clock) as mem:
        r = mem.save("I lost my job as a banker yesterday.", OWNER_TRUSTED, kind="event")
        c = mem.save("I'm Jon, I moved to Paris last year.", OWNER_TRUSTED, kind="core")
        clock.advance(90 * DAY)
        section = mem.prompt_section("When did I lose my job as a banker?", OWNER_TRUSTED)
        assert "yesterday (30 November 2026)" in section.recalled_text
        assert "last year (2025)" in section.core_text
        assert section.recalled_contents == ("I lost my job as a banker yesterday.",)
        assert mem.get(r.id).content == "I lost my job as a banker yesterday."
        assert "(" not in ps.line(mem.get(c.id), clock.now(), mark="#")
