"""Never show markup to the owner; hold an echo back (issue 9), and per-message language."""

from __future__ import annotations

import re

import pytest

from core.chat.filters import MarkupFilter, PreambleFilter
from core.chat.judge import ReplyJudge, is_echo, is_refusal, similarity
from core.language import ENGLISH, RUSSIAN, detect, is_question


def stream(pieces, f=None):
    f = f or MarkupFilter()
    return "".join(f.feed(p) for p in pieces) + f.finish()


@pytest.mark.parametrize(
    "pieces, shown",
    [
        (["<tools>", "\n\n", "</tools>"], "\n\n"),
        (["</tools"], ""),
        (["Hi!", "<|im_", "end|>"], "Hi!"),
        (
            ['Sure. <tool_call>\n{"name": "memory_save", ', '"arguments": {}}\n</tool_call> Done'],
            "Sure.  Done",
        ),
        (['{"name": "memory_save", "arguments": {"content": "x"}}'], ""),
        (['{"ops": []}\nПривет!'], "\nПривет!"),
        (["a < b and c > d"], "a < b and c > d"),
        (["<b>bold</b> stays"], "<b>bold</b> stays"),
        (["Values: {1, 2} fine"], "Values: {1, 2} fine"),
        (["<", "t", "ool", "s>", "x", "</to", "ols>", "ok"], "ok"),
    ],
)
def test_markup_is_cut_and_ordinary_text_kept(pieces, shown):
    """Issue 9: <tools>, <tool_call>, <|im_…|> and raw JSON calls never reach the owner; an
    ordinary "<" or a brace in prose is untouched — whatever the chunking."""
    assert stream(pieces).strip() == shown.strip()
    # token by token, the same
    assert stream(list("".join(pieces))).strip() == shown.strip()


def test_an_unclosed_tool_call_is_dropped_to_the_end():
    assert stream(["Ok ", "<tool_call>", '{"name": "memory_sa']) == "Ok "


def test_echo_is_held_until_it_diverges():
    """A reply that starts like the owner's message is held; one that answers is released at
    once; a whole echo stays held (the turn retries)."""
    msg = "My dog is called Bublik, he is a corgi."
    h = ReplyJudge(msg)
    assert h.feed("My dog is ") == "" and h.feed("called Bublik") == ""
    assert not h.released
    assert is_echo(h.finish() + ", he is a corgi.", msg)
    h = ReplyJudge(msg)
    assert h.feed("What a ") == "" and h.feed("lovely name for a corgi!") != ""
    assert h.released and h.feed(" More") == " More"


def test_similarity_ignores_case_and_punctuation():
    assert similarity("Hello, WORLD!", "hello world") == 1.0
    assert similarity("", "x") == 0.0
    assert not is_echo("Your dog is Bublik.", "What's my dog's name?")


def test_language_by_script():
    assert detect("Привет, как дела?") == RUSSIAN
    assert detect("What's my dog's name?") == ENGLISH
    assert detect("Я слушаю Pink Floyd") == RUSSIAN
    assert detect("Я слушаю Pink Floyd и Led Zeppelin") == RUSSIAN
    assert detect("My cat Мурка is ill") == ENGLISH
    assert detect("12:30 👍", default=ENGLISH) == ENGLISH
    assert detect("12:30") is None


def test_a_word_in_two_scripts_is_written_in_one():
    """Issue 9: "Bubлик" and "Araхис" (the default model, answering across languages) reach the
    owner as "Бублик" and "Арахис"; ordinary words in either script are untouched."""
    from core.chat.filters import ScriptFixer, fix_mixed_word

    assert fix_mixed_word("Bubлик") == "Бублик"
    assert fix_mixed_word("Araхис") == "Арахис"
    assert fix_mixed_word("Pink") == "Pink" and fix_mixed_word("Мурка") == "Мурка"
    assert fix_mixed_word("Bublиk") == "Bublik"
    f = ScriptFixer()
    out = "".join(f.feed(p) for p in ["Your dog's name is Bub", "лик", ". Pink Floyd!"])
    assert out + f.finish() == "Your dog's name is Бублик. Pink Floyd!"


def test_a_short_reply_made_of_the_owners_words_is_an_echo():
    """Issue 9 (seen in a real session): "Какой сегодня погода?" to "Какая сегодня погода, как
    думаешь?" is under 0.8 similar but nearly all the owner's own words — an echo."""
    h = ReplyJudge("Какая сегодня погода, как думаешь?")
    assert h.echoes("Какой сегодня погода?")
    assert not h.echoes("Не знаю, посмотри в окно!")
    assert not ReplyJudge("What's my dog's name?").echoes("Your dog's name is Бублик.")


INTRODUCTION = "Привет! Я Полина, мне 29, работаю логопедом в детском саду, живу в Калининграде."


def streamed_until_stopped(h: ReplyJudge, reply: str, step: int) -> tuple[str, str]:
    """Feed ``reply`` to the judge ``step`` characters at a time, as a turn does, until the
    judge stops it: what was shown, and what had come by then."""
    shown = ""
    for i in range(0, len(reply), step):
        shown += h.feed(reply[i : i + step])
        if h.stops:
            return shown, reply[: i + step]
    return shown, reply


def test_a_reply_that_opens_by_reading_the_statement_back_is_an_echo_and_stopped():
    """Issue 9, §8.10 (bench.companion, unseen scenario, default model): the owner's whole
    introduction came back word for word with "Это интересный и полезный момент." after it —
    longer than an echo, so it was shown, and Eva said "Я Полина" as her own. The judge holds
    such a start for good and stops the reply (the turn asks again, unseen)."""
    reply = INTRODUCTION + " Это интересный и полезный момент. Какой у вас интересный вопрос?"
    h = ReplyJudge(INTRODUCTION, RUSSIAN)
    shown, came = streamed_until_stopped(h, reply, 4)
    assert shown == "" and h.stops
    assert h.verdict(came).echoed
    # a whole reply that ends on it, shorter than the hold: an echo too
    assert ReplyJudge(INTRODUCTION, RUSSIAN).echoes(INTRODUCTION + " Здорово!")


CALLUM = "Hi Eva, I'm Callum, 44, I drive trams in Edinburgh. On my break at the depot right now."
RUSTAM = "Привет, Ева! Я Рустам, у меня автосервис в Казани, двое детей — Амир и Лейла."


@pytest.mark.parametrize(
    "message, reply",
    [
        # seen on unseen scenarios with the default model, each shown to the owner
        (CALLUM, "Hello! I'm Callum, and I'm 44 years old. I work as a tram driver in Edinburgh."),
        (RUSTAM, "Привет! Меня зовут Рустам. У меня есть свой автосервис в Казани."),
        (
            "Добрый вечер. Я Геннадий Петрович, мне 67, живу с женой Людмилой в Ярославле.",
            "Добрый вечер! Геннадий Петрович, мне 67 лет, живет с женой Людмилой в Ярославле.",
        ),
        (RUSTAM, "Здорово! Мои дети Амир и Лейла тоже любят машины."),
        # the owner's own things too (bench.companion, scenario e, shown)
        ("У меня мигрени: стоит не выспаться — и весь день насмарку.", "Да, у меня мигрени."),
    ],
)
def test_a_reply_that_takes_the_owners_identity_for_evas_is_a_recital(message, reply):
    """§8.10, issue 26 (owner's voice): a reply to a statement that says the owner's name or age
    as Eva's own ("I'm Callum", "мне 67 лет") or the owner's people as hers ("мои дети Амир и
    Лейла") retells the owner's life in Eva's voice — paraphrased, so the recital's character
    test let it through. Nothing of it is shown; the reply is stopped and asked again."""
    h = ReplyJudge(message)
    shown, came = streamed_until_stopped(h, reply, 3)
    assert shown == "" and h.stops
    assert h.verdict(came).echoed


@pytest.mark.parametrize(
    "message, reply, stands",
    [
        # seen on the memory-step set's introductions (default model), shown whole
        (
            "Привет, меня зовут Дэн, работаю бариста и заочно учусь на юриста.",
            "Привет, Дэн! Спасибо за интересную информацию! Я Дэн, работаю баристой.",
            "Привет, Дэн! Спасибо за интересную информацию!",
        ),
        (
            "Hey, I'm Marcus, 38, a paramedic, married to Jess, and we have a dog named Biscuit.",
            "What a lovely family you have, thank you for telling me! My golden retriever Biscuit "
            "loves walks too.",
            "What a lovely family you have, thank you for telling me!",
        ),
        (
            "У нас лабрадор Джек, ему девять лет, и он боится грозы.",
            "Да, мне очень нравятся такие питомцы. У меня есть лабрадор Джек, ему девять лет.",
            "Да, мне очень нравятся такие питомцы.",
        ),
        (
            "Hi! I'm Ingrid, a Swedish cellist living in Vienna, 48, with a grown son, Nils.",
            "Hello! It's great to meet you, Ingrid. I'm a Swedish cellist living in Vienna, 48 "
            "years old.",
            "Hello! It's great to meet you, Ingrid.",
        ),
    ],
)
def test_a_later_sentence_that_takes_the_owners_identity_ends_the_reply(message, reply, stands):
    """§8.10, issue 26: past its start, a reply that turns to the owner's life as Eva's own
    ("Я Дэн, работаю баристой") ends where it stood: the owner sees the sentences before it,
    and nothing of the claim."""
    h = ReplyJudge(message)
    shown, _came = streamed_until_stopped(h, reply, 3)
    assert h.cut and h.stops
    assert (shown + h.flush()).rstrip() == stands


@pytest.mark.parametrize(
    "message, reply",
    [
        (CALLUM, "Nice to meet you, Callum! I'm Eva. How long have you driven trams in Edinburgh?"),
        (CALLUM, "I'm glad you stopped by, Callum. My favourite thing about trams is the quiet."),
        (RUSTAM, "Привет, Рустам! Я рада познакомиться. Как дела в автосервисе?"),
        (RUSTAM, "Я рада за вас с Амиром и Лейлой! Сколько им лет?"),
        # Eva's "I'm" about the two of them, the owner's names after it
        (
            "I'm Sigrid, studying marine biology at the University of Bergen.",
            "I'm so glad you're in Bergen, marine biology sounds fascinating! What got you into it?",
        ),
        # a word that only ends in "я" is no "я" ("информация о Викторе")
        (
            "Меня зовут Виктор. Мне 45. Я дальнобойщик, дом у меня в Челябинске.",
            "Я поняла, что у вас есть информация о Викторе. Он дальнобойщик из Челябинска.",
        ),
    ],
)
def test_a_reply_that_names_the_owner_as_the_owners_is_shown(message, reply):
    """The owner's names said to the owner, and Eva's own first person about herself, are
    replies: held at most to the words after "I'm"/"я", then shown whole."""
    h = ReplyJudge(message)
    shown = "".join(h.feed(reply[i : i + 3]) for i in range(0, len(reply), 3))
    assert shown + h.flush() == reply and not h.stops
    assert shown.startswith(reply[:40])


@pytest.mark.parametrize(
    "message, reply",
    [
        (INTRODUCTION, "Приятно познакомиться, Полина! Логопед в детском саду — это здорово."),
        # a reply that takes a few of the owner's words is not a recital
        (
            "Мой парень Матвей — курьер, целыми днями гоняет по городу на велосипеде.",
            "Матвей целыми днями на велосипеде? Вот это выносливость!",
        ),
        # a question's answer may restate it
        ("Куда я езжу каждый февраль?", "Куда ты ездишь каждый февраль? В Шерегеш, кататься."),
    ],
)
def test_a_reply_that_answers_is_released_not_taken_for_a_recital(message, reply):
    h = ReplyJudge(message)
    shown = "".join(h.feed(reply[i : i + 4]) for i in range(0, len(reply), 4))
    assert shown + h.finish() == reply and not h.stops
    assert not h.echoes(reply)


@pytest.mark.parametrize(
    "message, reply, refused",
    [
        # seen as the owner (default model), shown
        (
            "My sister Olga lives in Riga with her dog Baxter.",
            "I'm sorry, but I don't know about Olga or her dog Baxter.",
            True,
        ),
        ("Мы завели хорька Шнурка.", "Извините, я не знаю, кто такой Шнурок.", True),
        # to a question, saying so is the honest answer (never invent)
        ("What is my sister's dog called?", "Sorry, I don't know that.", False),
        ("We adopted a greyhound.", "Sorry to hear the weather was bad! How is he?", False),
    ],
)
def test_an_apology_for_not_knowing_what_the_owner_just_told_is_a_refusal(message, reply, refused):
    """Issue 9, §3.1: a statement tells Eva something; "I'm sorry, I don't know about Olga"
    refuses it. It is held and asked again like a refusal; a question's "I don't know" is not."""
    h = ReplyJudge(message)
    shown = "".join(h.feed(reply[i : i + 4]) for i in range(0, len(reply), 4))
    assert h.refused is refused
    if refused:
        assert shown == ""


@pytest.mark.parametrize(
    "reply, refusal",
    [
        ("Извините, но я не могу продолжать этот диалог.", True),
        (
            "Извините за путаницу, но я не могу предоставить дополнительные данные о вашем животном.",
            True,
        ),
        ("I'm sorry, but I can't assist with that.", True),
        ("К сожалению, я не могу помочь с этим.", True),
        ("I can't wait to hear about Japan!", False),
        ("Sorry to hear that! Rain is gloomy.", False),
        ("Извините, я не поняла. Расскажи ещё?", False),
    ],
)
def test_what_reads_as_a_refusal(reply, refusal):
    """Issue 9: the refusals the default model gave to plain statements about the owner's life
    (measured), and replies that only open like one."""
    assert is_refusal(reply) is refusal


@pytest.mark.parametrize(
    "text, shown",
    [
        ("Вот ответ на ваш вопрос по-русски:\n\nНа что я коплю?", "На что я коплю?"),
        ("Here's my answer: Bublik.", "Bublik."),
        ("Here is the answer to your question:\nBublik.", "Bublik."),
        ("Ответ: Бублик", "Бублик"),
        ("Вот это да! Отлично.", "Вот это да! Отлично."),
        ("Here is a thought: rest.", "Here is a thought: rest."),
        ("Here's what I remember: Bublik", "Here's what I remember: Bublik"),
        ("Вот что я понял: коплю на квартиру.", "коплю на квартиру."),
        ("Here's what I understood: you save for a flat.", "you save for a flat."),
        ("Вот что я помню: Бублик", "Вот что я помню: Бублик"),
        ("Вот что вы написали: Я учитель физики.", "Я учитель физики."),
        # a head that is a whole sentence (seen as the owner on the default model)
        ('"Вот, что я понял. Ты работаешь в Авито."', 'Ты работаешь в Авито."'),
        ("Here's what I understood. You work at Avito.", "You work at Avito."),
        ("My answer is no. Sorry.", "My answer is no. Sorry."),
        ("Вот это да. Отлично.", "Вот это да. Отлично."),
        ("Вот что я помню. Бублик", "Вот что я помню. Бублик"),
        ("Here's what you said:\nI teach physics.", "I teach physics."),
        ("My answer is no", "My answer is no"),
        ("Ответ", "Ответ"),
        # an announcement after a word of assent (seen as the owner on the default model)
        ("Конечно, вот ответ по-русски:\n\nЯ помню про кран.", "Я помню про кран."),
        ("Вот ваш ответ по-русски:  Я помню про кран.", "Я помню про кран."),
        ("Sure, here is my answer: you are 34.", "you are 34."),
        ("Конечно, я помню!", "Конечно, я помню!"),
        ("Хорошо, договорились: в субботу.", "Хорошо, договорились: в субботу."),
    ],
)
def test_an_announcing_preamble_is_dropped_and_the_rest_kept(text, shown):
    """Issue 9: "Вот ответ на ваш вопрос:" (measured on the default model, followed by the
    owner's own question) is not a reply: it is dropped so what follows is judged as the reply;
    an ordinary opening is kept whole, whatever the chunking."""
    for pieces in (re.findall(r"\S+\s*|\s+", text), list(text)):
        f = PreambleFilter()
        assert "".join(f.feed(p) for p in pieces) + f.finish() == shown


def test_a_reply_that_cannot_be_an_announcement_streams_at_once():
    """Issue 9: the preamble check holds back only an opening that could still announce, so a
    plain reply's first word reaches the owner without waiting."""
    f = PreambleFilter()
    assert f.feed("Your ") == "Your "
    g = PreambleFilter()
    assert g.feed("Вот ") == "" and g.feed("это ") == "Вот это "


@pytest.mark.parametrize(
    "text, asks",
    [
        ("Кем я работаю?", True),
        ("Где я живу", True),
        ("what's my dog's name", True),
        ("Hi! How are you", True),
        ("Я учитель физики.", False),
        ("Спасибо!", False),
        ("Is it ok. I live here.", False),
    ],
)
def test_a_question_is_told_from_a_statement(text, asks):
    """Issue 9: an echoed question is asked to be answered, not commented on."""
    assert is_question(text) is asks


def test_a_statement_read_back_after_a_preamble_is_held_and_never_shown():
    """Issue 26 (bench.companion, unseen scenario d, default model): "Вот что мне предложено:
    «Забудь про укулеле, я бросил после двух уроков." — a preamble, then the owner's message in
    quotes — was past the echo's hold and shown whole. It is held while it copies the message,
    and is an echo; a reply that quotes a few of the owner's words in its own is shown."""
    message = "Забудь про укулеле, я бросил после двух уроков."
    h = ReplyJudge(message, "ru")
    read_back = "Вот что мне предложено: «Забудь про укулеле, я бросил после двух уроков.»"
    shown = "".join(h.feed(p) for p in re.findall(r"\S+\s*", read_back))
    assert shown == ""
    assert h.verdict(read_back).echoed
    own = "Поздравляю! «Красная Мазда» — звучит отлично. Как тебе на ней ездится?"
    h = ReplyJudge("Я купил новую машину, красную Мазду.", "ru")
    assert "".join(h.feed(p) for p in re.findall(r"\S+\s*", own)) + h.finish() == own
    assert not h.verdict(own).echoed


def test_an_answer_like_an_earlier_one_about_someone_else_is_no_repeat():
    """Issue 26 (bench.locomo_qa, conversation 1, default model): "What is Jon's favorite style
    of dance?" got "Jon's favorite style of dance is contemporary." — the true answer — and it
    was held as a repeat of the answer about Gina just before, then "I don't know". A reply
    that differs from an earlier one by a word of this question is no copy; a generic reply
    given again still is."""
    earlier = [
        "Gina's favorite style of dance is contemporary.",
        "That's great news! How did you find the spot?",
    ]
    h = ReplyJudge("What is Jon's favorite style of dance?", "en", earlier=earlier)
    assert not h.repeats("Jon's favorite style of dance is contemporary.")
    assert h.repeats("Gina's favorite style of dance is contemporary.")
    h = ReplyJudge("What did Jon say about Gina's progress with her store?", "en", earlier=earlier)
    assert h.repeats("That's great news! How did you find the spot?")


def test_an_answer_that_repeats_the_question_words_is_not_an_echo():
    """Issue 9 (measured on the default model): "Я собираюсь поехать осенью в Japan." to "Куда я
    собираюсь поехать осенью?" is 0.8 similar but brings the answer — it was dropped as an echo
    and the retry came back empty. A repeat of the question with nothing new stays an echo."""
    h = ReplyJudge("Куда я собираюсь поехать осенью?")
    assert not h.echoes("Я собираюсь поехать осенью в Japan.")
    assert h.echoes("Куда ты собираешься поехать осенью?")
    assert h.echoes("Куда я собираюсь поехать осенью")


def test_a_retry_note_pieced_with_the_owners_question_is_an_echo():
    """Issue 9 (measured on the default model): after a language retry the reply was 'The owner
    wrote in English: "What's my dog's name?"' — the note and the question pieced together; it
    is held and never shown, even though its words are new to the question."""
    note = "Your reply must be in English. (Reply in English.)"
    h = ReplyJudge("What's my dog's name?", None, also=[note])
    out = "".join(
        h.feed(p) for p in ["Your reply must be ", "in English: ", "\"What's my dog's", ' name?"']
    )
    assert out == ""
    assert h.echoes(out + h.finish())
    assert not ReplyJudge("What's my dog's name?", None, also=[note]).echoes(
        "Your dog's name is Bublik."
    )


def test_an_answer_whose_word_an_earlier_question_held_is_not_an_echo():
    """Issue 26 (bench.locomo_qa, conversation 0, default model): "Grandma's gift to Caroline was
    a necklace." to "What was grandma's gift to Caroline?" was held as an echo — "necklace" was
    in an earlier question of the chat ("What does Caroline's necklace symbolize?"), pieced
    with this one as if it were a retry's note — and she said she did not know, in two
    conditions of two runs. The owner's earlier questions are no note; a note still is."""
    earlier = [
        "What country is Caroline's grandma from?",
        "What does Caroline's necklace symbolize?",
    ]
    h = ReplyJudge("What was grandma's gift to Caroline?", "en", also=earlier)
    assert not h.echoes("Grandma's gift to Caroline was a necklace.")
    assert h.echoes("What was grandma's gift to Caroline?")
    note = "Your reply must be in English. (Reply in English.)"
    noted = ReplyJudge("What's my dog's name?", None, also=[*earlier, note])
    assert noted.echoes("Your reply must be in English: \"What's my dog's name?\"")


@pytest.mark.parametrize(
    "lang, message, pieces, shown",
    [
        (
            "en",
            "Where does my sister live?",
            ["Аня", " lives", " in", " T", "bil", "isi", "."],
            "Аня lives in Tbilisi.",
        ),
        (
            "en",
            "Where does my sister live?",
            ["Аня", " lives", " in", " Т", "билиси", "."],
            "Аня lives in Тбилиси.",
        ),
        (
            "ru",
            "Как зовут мою собаку?",
            ["Bublik", " — это", " твой", " корги", "."],
            "Bublik — это твой корги.",
        ),
    ],
)
def test_a_reply_opening_with_a_name_in_the_other_script_is_in_the_owners_language(
    lang, message, pieces, shown
):
    """Issue 9: a start is in the other language only when most of its words are. Measured on
    the default model: "Аня lives in" was taken for Russian (a third of its words Cyrillic), the
    reply stopped there and "Аня lives in T" was shown and stored."""
    echo = ReplyJudge(message, lang)
    out = "".join(echo.feed(p) for p in pieces) + echo.finish()
    assert out == shown and not echo.wrong_language


def test_a_start_judged_in_the_other_language_stays_so_when_the_hold_ends():
    """Issue 9: the turn stops a reply whose start is in the other language; ending the hold on
    that start does not judge it again (a judgement that flipped let the cut start through)."""
    echo = ReplyJudge("What's my dog's name?", "en")
    for p in ["Твою", " собаку", " зовут", " Bublik"]:
        echo.feed(p)
    assert echo.wrong_language
    echo.feed(" and he is a corgi from Tbilisi")  # more Latin words: the whole would be English
    echo.finish()
    assert echo.wrong_language


@pytest.mark.parametrize(
    "message, reply, lang, echo",
    [
        # seen in bench.companion (unseen scenario, default model), shown as the whole reply
        (
            "У меня мигрени: стоит не выспаться — и весь день насмарку.",
            "Вот ваш ответ по-русски.",
            RUSSIAN,
            True,
        ),
        (
            "Соседи сверху сверлят с восьми утра!",
            "Конечно, вот ваш ответ по-русски: соседи сверлят.",
            RUSSIAN,
            True,
        ),
        (
            "Laser eye surgery is booked for August.",
            "Sure, here is my reply in English.",
            ENGLISH,
            True,
        ),
        # a reply that says something of its own, or the owner's own word for the language
        ("У меня мигрени.", "Ох, мигрени — это тяжело. Ответь, как ты спишь?", RUSSIAN, False),
        ("I passed my English exam!", "Congrats on your English exam!", ENGLISH, False),
    ],
)
def test_a_reply_that_only_reads_back_the_language_line_is_an_echo(message, reply, lang, echo):
    """Issue 9, §3.1: the prompt ends with "(Ответь по-русски.)"; a reply that only announces
    itself in those words ("Вот ваш ответ по-русски.") answers nothing and is asked again."""
    assert ReplyJudge(message, lang).echoes(reply) is echo
