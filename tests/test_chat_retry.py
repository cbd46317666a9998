"""The retry decision as a table (issue 30): the judge's verdict on a reply → ask again (with
which note, where) or not, and then what stands. Pure: no model, no store. The rules named are
SPEC §3.1 (never show markup, an echo or the other language; issue 9) and §8.10 (never invent:
an honest "I don't know" instead of a made-up fact; issue 26)."""

from __future__ import annotations

import pytest

from core.chat.judge import Kind, ReplyJudge, Verdict
from core.chat.retry import (
    ACKNOWLEDGE,
    DONT_KNOW,
    INVENT_NUDGE,
    LANGUAGE_NUDGE,
    QUESTION_ECHO_NUDGE,
    REFRAME,
    REFUSAL_NUDGE,
    REPEAT_NUDGE,
    RETRY_NUDGE,
    Form,
    Outcome,
    Retry,
    decide,
    noted,
    on_stop,
    own_line,
    reframed,
    settle,
)

STATEMENT = "Я учитель физики, работаю в обычной школе."
QUESTION = "Сколько мне лет?"
SAY_RU = "(Ответь по-русски.)"


def v(kind: Kind, reply: str = "x", **flags) -> Verdict:
    """A verdict of ``kind`` with its own flag set, as the judge gives it."""
    own = {
        Kind.ECHO: "echoed",
        Kind.REPEAT: "repeated",
        Kind.WRONG_LANGUAGE: "wrong_language",
        Kind.REFUSAL: "refused",
        Kind.INVENTED: "invented",
    }.get(kind)
    if own:
        flags.setdefault(own, True)
    return Verdict(kind, "" if kind is Kind.EMPTY else reply, **flags)


# (case, verdict, question?, expected: None or (form, note, attempt shown, language watched))
DECISIONS = [
    ("§3.1 a good reply is not asked again", v(Kind.OK, held="Бублик"), False, None),
    (
        "§3.1 an empty statement reply: the owner's words quoted as theirs",
        v(Kind.EMPTY),
        False,
        (Form.REFRAME, REFRAME.format(text=STATEMENT), False, False),
    ),
    (
        "§3.1 an echoed statement: quoted as the owner's, the echo not shown back",
        v(Kind.ECHO, STATEMENT),
        False,
        (Form.REFRAME, REFRAME.format(text=STATEMENT), False, False),
    ),
    (
        "§3.1 an empty answer to a question: asked to answer",
        v(Kind.EMPTY, question=True),
        True,
        (Form.AFTER, f"{RETRY_NUDGE} {SAY_RU}", False, False),
    ),
    (
        "§3.1 an echoed question: its echo shown back as its own attempt",
        v(Kind.ECHO, QUESTION, question=True),
        True,
        (Form.AFTER, f"{QUESTION_ECHO_NUDGE} {SAY_RU}", True, False),
    ),
    (
        "§3.1 a copy of an earlier reply: new words asked for",
        v(Kind.REPEAT, "Как дела?"),
        False,
        (Form.AFTER, f"{REPEAT_NUDGE} {SAY_RU}", True, False),
    ),
    (
        "§3.1 a reply in the other language: asked in the owner's, language watched again",
        v(Kind.WRONG_LANGUAGE, "Your dog is Bublik."),
        False,
        (Form.AFTER, f"{LANGUAGE_NUDGE.format(language='Russian')} {SAY_RU}", False, True),
    ),
    (
        "§3.1 a refusal to a plain statement: nothing to refuse",
        v(Kind.REFUSAL, "Извините, но я не могу продолжать этот диалог."),
        False,
        (Form.AFTER, f"{REFUSAL_NUDGE} {SAY_RU}", False, False),
    ),
    (
        "§8.10 a made-up answer to a question is not asked again (she does not know)",
        v(Kind.INVENTED, "Тебе 12 лет.", question=True, about_owner=True, claims=("12",)),
        True,
        None,
    ),
    (
        "§8.10 made up and in the other language: not asked again either",
        v(Kind.WRONG_LANGUAGE, "You are 12.", question=True, invented=True),
        True,
        None,
    ),
    (
        "§8.10 a made-up fact in a statement's reply: the note inside the owner's message",
        v(Kind.INVENTED, "Ты учитель физики с 2010 года.", claims=("2010",)),
        False,
        (Form.INSIDE, f"{INVENT_NUDGE} {SAY_RU}", False, False),
    ),
    (
        "§8.10 a statement's reply made up and in the other language: the language note, inside",
        v(Kind.WRONG_LANGUAGE, "You teach since 2010.", invented=True),
        False,
        (Form.INSIDE, f"{LANGUAGE_NUDGE.format(language='Russian')} {SAY_RU}", False, True),
    ),
    (
        "§3.1 an echo the owner already saw is not taken back",
        v(Kind.ECHO, STATEMENT, shown=True),
        False,
        None,
    ),
    (
        "§3.1 a repeat the owner already saw is not taken back",
        v(Kind.REPEAT, "Как дела?", shown=True),
        False,
        None,
    ),
]


@pytest.mark.parametrize(
    "case, verdict, question, expected", DECISIONS, ids=[c[0] for c in DECISIONS]
)
def test_the_first_reply_is_asked_again_with_the_note_its_failure_needs(
    case, verdict, question, expected
):
    text = QUESTION if question else STATEMENT
    got = decide(verdict, 1, text, "ru")
    if expected is None:
        assert got is None
        return
    form, note, shows, watches = expected
    assert isinstance(got, Retry) and got.verdict is verdict
    assert (got.form, got.note, got.shows_attempt, got.watches_language) == (
        form,
        note,
        shows,
        watches,
    )


@pytest.mark.parametrize("kind", list(Kind))
def test_only_one_retry_per_turn(kind):
    """§3.1: a retry is asked once; the second reply is never asked again, whatever it was."""
    assert decide(v(kind), 2, STATEMENT, "ru") is None


def test_the_note_is_where_its_form_says():
    prompt = [
        {"role": "system", "content": "persona"},
        {"role": "user", "content": f"recalled\n\n## Message\n{STATEMENT}\n\n{SAY_RU}"},
    ]
    again = decide(v(Kind.EMPTY), 1, STATEMENT, "ru")
    assert again.messages(prompt, STATEMENT) == reframed(prompt, STATEMENT)
    assert REFRAME.format(text=STATEMENT) in again.messages(prompt, STATEMENT)[-1]["content"]
    again = decide(
        v(Kind.INVENTED, "Ты учитель с 2010 года.", claims=("2010",)), 1, STATEMENT, "ru"
    )
    assert again.messages(prompt, STATEMENT) == noted(prompt, again.note)
    again = decide(v(Kind.ECHO, QUESTION, question=True), 1, QUESTION, "ru")
    assert again.messages(prompt, QUESTION) == [
        *prompt,
        {"role": "assistant", "content": QUESTION, "retry": True},
        {"role": "system", "retry": True, "content": again.note},
    ]
    assert prompt[-1]["content"].endswith(SAY_RU)  # the prompt given is left as it was


def retry_after(kind: Kind, **flags) -> Retry:
    first = v(kind, **flags)
    again = decide(first, 1, QUESTION if first.question else STATEMENT, "ru")
    assert again is not None
    return again


# (case, verdict of the last reply, the retry it answered or None, expected outcome)
SETTLED = [
    (
        "§3.1 a reply shown as it streamed stands",
        v(Kind.OK, "Отлично!", shown=True),
        None,
        Outcome.AS_IS,
    ),
    (
        "§3.1 a short reply the judge held is shown at the end",
        v(Kind.OK, "Бублик", held="Бублик"),
        None,
        Outcome.SHOW_HELD,
    ),
    (
        "§3.1 an echo seen as it streamed is left (it cannot be taken back)",
        v(Kind.ECHO, STATEMENT, shown=True),
        None,
        Outcome.AS_IS,
    ),
    (
        "§3.1 a statement echoed twice: Eva acknowledges it",
        v(Kind.ECHO, STATEMENT, held=STATEMENT),
        retry_after(Kind.ECHO, reply=STATEMENT),
        Outcome.ACKNOWLEDGE,
    ),
    (
        "§3.1 a statement left empty twice: Eva acknowledges it",
        v(Kind.EMPTY),
        retry_after(Kind.EMPTY),
        Outcome.ACKNOWLEDGE,
    ),
    (
        "§3.1 a question that is not about the owner, echoed twice: a notice",
        v(Kind.ECHO, "Как дела?", held="Как дела?", question=True),
        retry_after(Kind.ECHO, reply="Как дела?", question=True),
        Outcome.NO_REPLY,
    ),
    (
        "§8.10 a question about the owner, echoed then empty: she does not know",
        v(Kind.EMPTY, question=True, about_owner=True),
        retry_after(Kind.ECHO, reply=QUESTION, question=True, about_owner=True),
        Outcome.DONT_KNOW,
    ),
    (
        "§3.1 a repeat again after the retry, to a statement: acknowledged",
        v(Kind.REPEAT, "Как дела?", held="Как дела?"),
        retry_after(Kind.REPEAT, reply="Как дела?"),
        Outcome.ACKNOWLEDGE,
    ),
    (
        "§8.10 a repeat again after the retry, to a question: she does not know",
        v(Kind.REPEAT, "Ваша жена Alesya.", held="Ваша жена Alesya.", question=True),
        retry_after(Kind.REPEAT, reply="Ваша жена Alesya.", question=True),
        Outcome.DONT_KNOW,
    ),
    (
        "§8.10 a made-up answer to a question: she does not know at once",
        v(
            Kind.INVENTED,
            "Тебе 40 лет.",
            held="Тебе 40 лет.",
            question=True,
            about_owner=True,
            claims=("40",),
        ),
        None,
        Outcome.DONT_KNOW,
    ),
    (
        "§8.10 a question answered with a word nothing shown holds: she does not know at once",
        v(Kind.INVENTED, "Футбол.", held="Футбол.", question=True, about_owner=True),
        None,
        Outcome.DONT_KNOW,
    ),
    (
        "§8.10 a statement's reply made up again after the retry: she does not know",
        v(
            Kind.INVENTED,
            "Ты учитель с 2011 года.",
            held="Ты учитель с 2011 года.",
            claims=("2011",),
        ),
        retry_after(Kind.INVENTED, reply="Ты учитель с 2010 года.", claims=("2010",)),
        Outcome.DONT_KNOW,
    ),
    (
        "§8.10 a statement's retry with only the voice wrong (no made-up fact): it is shown",
        v(Kind.INVENTED, "Я архитектор.", held="Я архитектор."),
        retry_after(Kind.INVENTED, reply="Я архитектор, проектирую школы."),
        Outcome.SHOW_HELD,
    ),
    (
        "§3.1 'I don't know' in the other language twice: said in the owner's",
        v(
            Kind.WRONG_LANGUAGE,
            "I don't know your favorite movie.",
            held="I don't know your favorite movie.",
            question=True,
        ),
        retry_after(Kind.WRONG_LANGUAGE, reply="I don't know.", question=True),
        Outcome.DONT_KNOW,
    ),
    (
        "§3.1 a statement answered in the other language twice: the answer is shown",
        v(Kind.WRONG_LANGUAGE, "That is lovely!", held="That is lovely!"),
        retry_after(Kind.WRONG_LANGUAGE, reply="Nice!"),
        Outcome.SHOW_HELD,
    ),
]


@pytest.mark.parametrize("case, verdict, answered, expected", SETTLED, ids=[c[0] for c in SETTLED])
def test_what_stands_once_no_retry_is_left(case, verdict, answered, expected):
    assert decide(verdict, 1 if answered is None else 2, "x", "ru") is None
    assert settle(verdict, answered) is expected


@pytest.mark.parametrize(
    "verdict, expected",
    [
        (v(Kind.OK, "Hello, I was say", held="ing"), Outcome.SHOW_HELD),
        (v(Kind.ECHO, STATEMENT, held=STATEMENT), Outcome.DROP),
        (v(Kind.OK, "Hello there", shown=True), Outcome.AS_IS),
    ],
)
def test_a_stopped_reply_keeps_what_was_shown_and_never_an_echo(verdict, expected):
    """§3.1: Esc keeps the partial answer as shown; a held echo is dropped, not shown."""
    assert on_stop(verdict) is expected


def test_evas_own_lines_are_in_the_owners_language():
    assert own_line(Outcome.DONT_KNOW, "ru") == DONT_KNOW["ru"]
    assert own_line(Outcome.ACKNOWLEDGE, "en") == ACKNOWLEDGE["en"]
    assert own_line(Outcome.DONT_KNOW, None) == DONT_KNOW["en"]


@pytest.mark.parametrize(
    "message, lang, support, earlier, pieces, kind",
    [
        ("Как дела?", "ru", None, [], ["Хорошо, ", "спасибо! А у тебя как?"], Kind.OK),
        ("Как дела?", "ru", None, [], [], Kind.EMPTY),
        (STATEMENT, "ru", None, [], ["Я учитель физики, ", "работаю в обычной школе."], Kind.ECHO),
        (
            "Я купил новую машину.",
            "ru",
            None,
            ["Здравствуйте, Дима! Как дела у вас сегодня?"],
            ["Здравствуйте, Дима! ", "Как дела у вас сегодня?"],
            Kind.REPEAT,
        ),
        (
            "What's my dog's name?",
            "en",
            None,
            [],
            ["Твою", " собаку", " зовут", " Бублик."],
            Kind.WRONG_LANGUAGE,
        ),
        (
            STATEMENT,
            "ru",
            None,
            [],
            ["Извините, но я не могу ", "продолжать этот диалог."],
            Kind.REFUSAL,
        ),
        (QUESTION, "ru", "Меня зовут Тимур.", [], ["Тебе 12 ", "лет. Верно?"], Kind.INVENTED),
        (
            QUESTION,
            "ru",
            "Мне 34 года.",
            [],
            ["Тебе 34 года, ", "если я правильно помню."],
            Kind.OK,
        ),
    ],
)
def test_the_judge_names_what_a_reply_was(message, lang, support, earlier, pieces, kind):
    """§3.1, §8.10: one verdict per reply — ok, empty, echo, repeat, wrong language, refusal,
    invented — from the reply as it streamed."""
    judge = ReplyJudge(message, lang, earlier=earlier, support=support)
    for p in pieces:
        judge.feed(p)
        if judge.stops:
            break
    reply = "".join(pieces).strip()
    assert judge.verdict(reply).kind is kind


def test_the_record_a_held_answer_drew_on_is_the_one_holding_what_it_added():
    """§8.10 (issue 26): her "not sure" quotes the record whose words the held answer added to
    the question — across scripts, the made-up claim left out — and none when the answer added
    nothing a record holds, when its claim is a role (someone else's line told as the owner's),
    or when nothing was made up (an echo, a copy)."""
    from core.chat.retry import drawn_on

    aunt = "Моя тётя Люба живёт в Твери, а её сосед Гена чинит мне велосипед."
    bike = "My bike is a red Merida, bought in Kazan."
    asked = "What is my aunt's name and where does she live?"

    def held(reply, claims):
        return Verdict(
            Kind.INVENTED, reply, held=reply, question=True, invented=True, claims=claims
        )

    olga = held("Your aunt's name is Olga, and she lives in Tver.", ("olga",))
    assert drawn_on(olga, None, asked, [bike, aunt]) == aunt
    only_made_up = held("Your aunt's name is Olga.", ("olga",))
    assert drawn_on(only_made_up, None, asked, [bike, aunt]) == ""
    husband = held("Your aunt lives in Tver with her husband.", ("husband",))
    assert drawn_on(husband, None, asked, [bike, aunt]) == ""
    echo = Verdict(Kind.ECHO, asked, held=asked, question=True, echoed=True)
    assert drawn_on(echo, None, asked, [aunt]) == ""
    statement = Verdict(Kind.INVENTED, olga.reply, question=False, invented=True, claims=("olga",))
    assert drawn_on(statement, None, "My aunt lives in Tver.", [aunt]) == ""


def test_an_answer_draws_on_the_record_holding_its_number_or_short_name():
    """§8.10 (issue 26, bench.owner_questions dev): right answers made of a number or a short
    name ("9 лет.", "£2,700.", "Your Nan raised you.") drew on no record — numbers and words
    under four letters were no keys — and a "how old" answer drew on the wrong one. A number
    meets its digits however it is written; a name of three letters meets itself."""
    from core.chat.retry import grounding_record

    daughter = "Жена — Гульнара. Дочке Алсу 9 лет, ходит на гимнастику"
    me = "мне 41, живу в Казани, работаю сварщиком"
    assert grounding_record("9 лет.", (), "Сколько лет моей дочке?", [me, daughter]) == daughter
    card = "Between us, there's £2,700 on my credit card and it scares me."
    rent = "Rent is 1,400 a month, which is mad for a one-bed."
    assert grounding_record("£2,700.", (), "How much is on my card?", [rent, card]) == card
    nan = "My Nan raised me, mum wasn't around much."
    assert grounding_record("Your Nan raised you.", (), "Who raised me?", [rent, nan]) == nan
    assert grounding_record("Your aunt raised you.", (), "Who raised me?", [rent]) == ""
