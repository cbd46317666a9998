"""Never invent (SPEC §8.10, issue 26): asked about their own life, the owner gets what Eva's
memory holds, or an honest "I don't know" — never a made-up fact, never the owner's life told
as Eva's own. The scripted replies are the ones the default model gave (issue 26)."""

from __future__ import annotations

import re
import time

import pytest

from core import OWNER_TRUSTED, PUBLIC, Memory, MemoryConfig
from core.chat.conversation import Conversation
from core.chat.events import Token, TurnDone
from core.chat.invention import (
    admits_not_knowing,
    asks_about_owner,
    bare_kin,
    invents,
    made_up,
    misattributed,
    missing_roles,
    speaks_as_owner,
    unsupported,
)
from core.chat.judge import ReplyJudge
from core.chat.prompt import user_prompt
from core.chat.retry import DONT_KNOW, QUESTION_ECHO_NUDGE, RECALLED_QUOTE
from core.instructions import ANSWER_FROM_MEMORY, NEVER_INVENT, NOTHING_RECALLED
from core.language import only_asks
from core.sleep.candidates import roles
from tests.fake_llm import ScriptedLLM

HONEST_RU = ["Не знаю — ты мне об этом не говорил. ", "Расскажешь?"]
HONEST_EN = ["I don't know, you haven't told me. ", "Will you tell me?"]

# (what the owner asked, what the default model answered: issue 26, what the store held)
MADE_UP = [
    ("Сколько мне лет?", "Мне 12 лет.", "Меня зовут Тимур, я ветеринар."),
    ("Какой спорт у моего сына?", "Спорт у моего сына - футбол.", "У меня сын Марк."),
    (
        "Which language am I learning these days?",
        "I am learning Russian.",
        "My sister Anna lives in Yerevan.",
    ),
    ("How many children do I have?", "I don't have any children.", "My husband is Igor."),
    ("Какая у меня любимая книга?", "Я не люблю никаких книг.", "Я люблю грибной суп."),
]
# someone asked about by role whom memory never names: the answer borrowed a name it holds
MISSING_ROLE = [
    ("What is my brother's name?", "Your brother's name is Igor.", "My husband Igor is a pilot."),
    ("Как зовут мою маму?", "Вашу маму зовут Алеся.", "Мою жену зовут Алеся, она из Минска."),
]


def run(conv, text):
    events = list(conv.turn(text, OWNER_TRUSTED))
    assert isinstance(events[-1], TurnDone), events
    return "".join(e.text for e in events if isinstance(e, Token))


@pytest.mark.parametrize(("question", "made_up", "fact"), MADE_UP)
def test_a_made_up_answer_about_the_owner_is_never_shown_and_she_does_not_know_at_once(
    mem, question, made_up, fact
):
    """§8.10: a made-up answer is not shown, and it is not asked again: with the default model
    36 of 36 such retries (LoCoMo conversations 0 and 1, scenarios d and e) ended in her "I
    don't know" anyway, a second generation later."""
    mem.save(fact, OWNER_TRUSTED)
    lang = "ru" if re.search("[а-яё]", question, re.IGNORECASE) else "en"
    llm = ScriptedLLM([[made_up[:6], made_up[6:]], HONEST_EN], plans=[])
    shown = run(Conversation(mem, llm), question)
    # she is not sure, and says what she does remember (the one record, recalled) word for word
    assert shown in (DONT_KNOW[lang], RECALLED_QUOTE[lang].format(quote=fact))
    assert made_up not in shown
    assert len(llm.calls) == 1


def test_not_sure_she_quotes_the_record_recall_found_and_nothing_made_up(mem, tmp_path, clock):
    """§8.10, issue 26 (owner session, default model): "What is my aunt's name and where does
    she live?" got "Your aunt's name is Olga, and she lives in Tver." — the memory said "Моя
    тётя Люба живёт в Твери", the name was made up — and the owner was told there was nothing
    in her memory. The made-up answer is still never shown; she says she is not sure and quotes
    the record recall ranked first, as kept. With nothing recalled she says she does not know,
    and her quote is not shown to the model again (nor the question it answered)."""
    aunt = "Моя тётя Люба живёт в Твери, а её сосед Гена чинит мне велосипед."
    mem.save(aunt, OWNER_TRUSTED)
    llm = ScriptedLLM([["Твою тётю зовут Ольга, она живёт в Твери."]], plans=[])
    conv = Conversation(mem, llm)
    shown = run(conv, "Как зовут мою тётю и где она живёт?")
    assert shown == RECALLED_QUOTE["ru"].format(quote=aunt)
    assert "Ольга" not in shown and len(llm.calls) == 1
    llm.replies.append(["Велосипед тебе чинит Гена."])
    assert run(conv, "Кто чинит мне велосипед?") == "Велосипед тебе чинит Гена."
    later = llm.calls[-1]["messages"]
    assert not any("Ольга" in m["content"] or "Точно не знаю" in m["content"] for m in later)
    assert not any("Как зовут мою тётю" in m["content"] for m in later)
    # nothing recalled (the owner's name is all the store holds, as core): "I don't know"
    empty = Memory.open(tmp_path / "other.db", MemoryConfig(), clock)
    try:
        empty.save("Меня зовут Олег.", OWNER_TRUSTED, kind="core")
        llm = ScriptedLLM([["Your aunt's name is Olga, and she lives in Tver."]], plans=[])
        shown = run(Conversation(empty, llm), "Where does my aunt Olga live?")
        assert shown == DONT_KNOW["en"]
    finally:
        empty.close()


def test_her_quote_never_shows_a_private_record_to_another_audience(mem):
    """§2 privacy with §8.10's quote: what she quotes when she is not sure comes from the memory
    section the turn's audience was given, so a private record — which a public turn is never
    shown — is never quoted to it, even when the held answer names its words. The owner, in a
    trusted turn, gets the quote."""
    aunt = "Моя тётя Люба живёт в Твери, а её сосед Гена чинит мне велосипед."
    mem.save(aunt, OWNER_TRUSTED, private=True)
    made_up = "Твою тётю зовут Ольга, она живёт в Твери."
    asked = "Как зовут мою тётю и где она живёт?"
    llm = ScriptedLLM([[made_up]], plans=[])
    shown = "".join(
        e.text
        for e in Conversation(mem, llm, channel="pub").turn(asked, PUBLIC)
        if isinstance(e, Token)
    )
    assert "Люба" not in shown and "Гена" not in shown and "Ольга" not in shown
    llm = ScriptedLLM([[made_up]], plans=[])
    assert run(Conversation(mem, llm), asked) == RECALLED_QUOTE["ru"].format(quote=aunt)


def test_the_memorys_own_fact_in_evas_voice_is_asked_again_and_said_to_the_owner(mem):
    """§8.10, issue 26 (bench.companion, unseen scenario e, default model): "В каком городе я
    живу?" got "Я живу в Калининграде." — the memory's own city in Eva's voice, whose verb the
    judge cannot turn ("живу" → "живёшь" would be a guess) — and she said she did not know at
    once. A reply whose only fault is the voice, every word of it shown, is asked again; a
    made-up city is not."""
    mem.save("Я Полина, живу в Калининграде.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Я живу в Калининграде."], ["Ты живёшь в Калининграде."]], plans=[])
    assert run(Conversation(mem, llm), "В каком городе я живу?") == "Ты живёшь в Калининграде."
    assert len(llm.calls) == 2
    llm = ScriptedLLM([["Я живу в Самаре."], ["Ты живёшь в Самаре."]], plans=[])
    assert run(Conversation(mem, llm, channel="b"), "В каком городе я живу?") == DONT_KNOW["ru"]
    assert len(llm.calls) == 1


def test_made_up_twice_she_says_she_does_not_know(mem):
    mem.save("My sister Anna lives in Yerevan.", OWNER_TRUSTED)
    llm = ScriptedLLM([["I am learning Russian."], ["You are learning Russian."]], plans=[])
    shown = run(Conversation(mem, llm), "Which language am I learning these days?")
    assert shown == DONT_KNOW["en"]
    llm = ScriptedLLM([["Мне 12 лет."], ["Тебе 12 лет."]], plans=[])
    assert run(Conversation(mem, llm, channel="b"), "Сколько мне лет?") == DONT_KNOW["ru"]


def test_an_answer_the_memory_holds_is_shown_at_once(mem):
    # core: always in the prompt (no embedder here to recall it across languages)
    mem.save("My corgi is called Bublik, he is 3 years old.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Your corgi is ", "Bublik, he is 3."]], plans=[])
    assert run(Conversation(mem, llm), "What's my dog's name and age?") == (
        "Your corgi is Bublik, he is 3."
    )
    assert len(llm.calls) == 1
    llm = ScriptedLLM([["Твоего корги зовут Бублик."]], plans=[])  # the name in the other script
    assert run(Conversation(mem, llm, channel="b"), "Как зовут мою собаку?") == (
        "Твоего корги зовут Бублик."
    )
    assert len(llm.calls) == 1


def test_small_talk_and_questions_about_eva_are_not_judged(mem):
    llm = ScriptedLLM([["I'm great, thanks! I spent the day reading."]], plans=[])
    assert run(Conversation(mem, llm), "How are you today?").startswith("I'm great")
    assert len(llm.calls) == 1


def test_the_prompt_says_plainly_what_memory_holds_for_a_question_about_the_owner(mem):
    """The system prompt carries the rule in every turn; a question about the owner gets its
    recalled lines, or plainly "nothing in memory matches — answer only from memory"."""
    llm = ScriptedLLM([HONEST_RU], plans=[])
    run(Conversation(mem, llm), "Сколько мне лет?")
    system, last = llm.calls[0]["messages"][0]["content"], llm.calls[0]["messages"][-1]["content"]
    assert NEVER_INVENT in system
    assert NOTHING_RECALLED in last and ANSWER_FROM_MEMORY in last
    assert last.rstrip().endswith("(Ответь по-русски.)")
    mem.save("My husband Igor is a pilot.", OWNER_TRUSTED)
    section = mem.prompt_section("What is my husband's job?", OWNER_TRUSTED)
    prompt = user_prompt("What is my husband's job?", section, "en")
    assert "Igor" in prompt and NOTHING_RECALLED not in prompt
    assert ANSWER_FROM_MEMORY not in user_prompt("I like tea.", section, "en")


def test_the_guard_helpers():
    assert asks_about_owner("Сколько мне лет?") and asks_about_owner("Where does my sister live?")
    assert asks_about_owner("What do I do on weekends?")
    assert not asks_about_owner("How are you?") and not asks_about_owner("My dog is Bublik.")
    # someone the turn was shown by name is the owner's life; a name nothing holds is not
    shown = "4 | event | 2d | 3 | Isla got her yellow belt in judo on Saturday!"
    assert asks_about_owner("How old is Isla?", f"{shown}\nHow old is Isla?")
    assert not asks_about_owner("How old is Isla?", "How old is Isla?")
    assert not asks_about_owner("When was Pushkin born?", f"{shown}\nWhen was Pushkin born?")
    assert speaks_as_owner("Мне 12 лет.") and speaks_as_owner("I am learning Russian.")
    assert not speaks_as_owner("I remember: you work at the radio.")
    assert admits_not_knowing("Не знаю. Сколько тебе лет?")
    assert admits_not_knowing("You haven't told me that.")
    assert not admits_not_knowing("I don't have any children.")
    assert unsupported("You are 34, in Samara.", "Мне 34, живу в Самаре.") == []
    assert unsupported("You are 12, in Kazan.", "Мне 34, живу в Самаре.") == ["12", "kazan"]
    assert invents("Your brother is Oleg.", "Nothing.") and not invents("Your brother?", "")
    hold = ReplyJudge("Сколько мне лет?", "ru", support="Меня зовут Тимур.")
    assert hold.feed("Тебе ") == "" and hold.feed("12 лет") == ""  # held until judged
    assert hold.feed(". Верно?") == "" and hold.finish() and hold.invented
    hold = ReplyJudge("Сколько мне лет?", "ru", support="Мне 34 года.")
    assert hold.feed("Тебе 34 года, если я правильно помню. ") and not hold.invented


def test_asked_again_a_reply_only_in_the_wrong_voice_is_shown_not_thrown_away(mem):
    """An answer whose facts are the memory's is not replaced by "I don't know" for its voice
    alone ("Я архитектор." to "Кем я работаю?": said to the owner, not lost)."""
    mem.save("Я Марина, по профессии архитектор.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Я архитектор."]], plans=[])
    assert run(Conversation(mem, llm), "Кем я работаю?") == "Ты архитектор."
    assert len(llm.calls) == 1


def test_asked_again_after_an_invention_and_silent_she_says_she_does_not_know(mem):
    """Measured on companion_a: the retry after a made-up reply came back empty, and the owner
    got no answer at all."""
    mem.save("My sister Anna lives in Yerevan.", OWNER_TRUSTED)
    llm = ScriptedLLM([["I am learning Russian."], [""]], plans=[])
    shown = run(Conversation(mem, llm), "Which language am I learning these days?")
    assert shown == DONT_KNOW["en"]


def test_her_fixed_i_dont_know_is_not_shown_to_the_model_again(mem):
    """§8.10, measured on an unseen scenario (companion_d) with the default model: after one
    "I don't know that…", the model copied it word for word as the answer to every later
    question (0 of 10 known questions answered in that run). The owner still sees it in the
    chat, but the next prompts carry neither it nor the question it answered."""
    mem.save("My corgi is called Bublik, he is 3 years old.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM(
        [["I am learning Russian."], ["Your corgi is Bublik."]],
        plans=[],
    )
    conv = Conversation(mem, llm)
    assert run(conv, "Which language am I learning these days?") == DONT_KNOW["en"]
    assert run(conv, "What's my dog's name?") == "Your corgi is Bublik."
    later = str(llm.calls[1]["messages"])
    assert DONT_KNOW["en"] not in later and "Which language am I learning" not in later
    assert [m.content for m in conv.history()][-3] == DONT_KNOW["en"]  # the chat keeps it


def test_an_age_nobody_told_about_someone_the_memory_names_is_not_shown(mem):
    """§8.10, measured on an unseen scenario (companion_d): "How old is Isla?" — Isla, the
    owner's daughter, is in memory, her age is not — got "Isla is 6 years old." A question
    naming someone the memory holds is judged like one about the owner."""
    mem.save("Isla got her yellow belt in judo on Saturday!", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Isla is 6 years old."], ["Isla is 7 years old."]], plans=[])
    assert run(Conversation(mem, llm), "How old is Isla?") == DONT_KNOW["en"]


def test_a_reply_copied_from_earlier_twice_is_not_shown_as_an_answer(mem):
    """§8.10, measured on an unseen scenario (companion_d) with the default model: after one
    answer ("Ваша жена Alesya из Минска."), the next questions — the dog's name, the mother's
    name — got the same line, again after the retry. A question whose reply copies an earlier
    one twice gets "I don't know" instead of a wrong answer."""
    mem.save("Моя жена Алеся из Минска.", OWNER_TRUSTED, kind="core")
    wife = "Ваша жена Алеся из Минска."
    llm = ScriptedLLM([[wife], [wife], ["Ваша жена — Алеся, из Минска."]], plans=[])
    conv = Conversation(mem, llm)
    assert run(conv, "Как зовут мою жену?") == wife
    assert run(conv, "Как зовут мою собаку?") == DONT_KNOW["ru"]
    assert len(llm.calls) == 3  # the answer, the copy, the retry that copied again


def test_a_day_worked_out_from_a_dated_memory_is_not_an_invention():
    """§8.10 and issue 26 item 6: a recalled line dated "8 May 2023" that says "yesterday"
    answers "When did I go?" with 7 May — measured on LoCoMo, that answer was refused as made up
    and the owner got "I don't know". A day with a month the turn was shown is not counted; an
    age nobody told still is, and so is a day of a month nothing shows."""
    from core.chat.invention import unsupported

    shown = "1 | event | 1mo, 8 May 2023 | 3 | I went to the LGBTQ support group yesterday."
    assert unsupported("You went to the support group on May 7, 2023.", shown) == []
    assert unsupported("On the 7th of May.", shown) == []
    assert unsupported("Isla is 6 years old.", shown) == ["6"]
    assert "7" in unsupported("It was on 7 June.", shown)


def test_the_day_a_line_was_said_is_no_age(mem, clock):
    """§8.10, measured on bench.owner_questions (default model): "How old is Sunita?" — the
    owner's wife, her age never said — got "Sunita is 30 years old." and it was shown, because a
    recalled line said on 30 May reads "30 May 2026 Wife is Sunita…" to the judge. That day
    supports a date ("on 30 May"), not any number."""
    from core.chat.invention import unsupported

    shown = "30 May 2026 Wife is Sunita, kids are Arjun (16) and Meera (12).\n"
    assert unsupported("Sunita is 30 years old.", shown) == ["30"]
    assert unsupported("You told me on 30 May 2026.", shown) == []
    assert unsupported("Arjun is 16.", shown) == []
    # end to end: a line said on the 30th of a month, then the question
    clock.set(1_780_000_000.0)  # 28 May 2026 (UTC)
    clock.advance(2 * 86_400)
    said = mem.save("Wife is Sunita, kids are Arjun (16) and Meera who is 12.", OWNER_TRUSTED)
    clock.advance(3 * 86_400)
    day = time.strftime("%d", time.localtime(mem.get(said.id, OWNER_TRUSTED).updated_at)).lstrip(
        "0"
    )
    llm = ScriptedLLM([[f"Sunita is {day} years old."], [f"She is {day}."]], plans=[])
    assert run(Conversation(mem, llm), "How old is Sunita?") == DONT_KNOW["en"]


@pytest.mark.parametrize(
    ("reply", "owner_voice"),
    [
        # Eva reporting her memory is her own voice about it (issue 26, bench.chat on the
        # default model: this answer was retried and became "I don't know")
        ("I remember that Anna is a doctor in Moscow.", False),
        ("Насколько я помню, Анна работает врачом в Москве.", False),
        ("As far as I remember, Anna lives in Moscow.", False),
        # … but the owner's life after the clause still counts
        ("I remember that I am learning Russian.", True),
        ("Я помню, что я работаю учителем.", True),
        ("Я люблю зелёный чай без сахара.", True),
    ],
)
def test_a_reply_reporting_evas_memory_is_not_the_owners_voice(reply, owner_voice):
    """§8.10: the owner's life told in the first person is invented; Eva saying what she
    remembers is not."""
    assert speaks_as_owner(reply) is owner_voice


def test_a_list_items_number_is_not_a_made_up_number():
    """§8.10: "1." opening a list item states nothing about the owner (measured on the default
    model: a packing list for "Что мне взять с собой в Грузию?" was judged invented)."""
    asked = "Что мне взять с собой в Грузию?"
    assert not invents("В Грузию вы можете взять следующие вещи:\n\n1.", asked)
    assert unsupported("Тебе 12 лет.\n1. Работа", asked) == ["12"]  # a number said still counts


def test_after_a_made_up_answer_i_dont_know_in_the_other_language_is_said_in_the_owners(mem):
    """§8.10 and the owner's language (§3.1): asked again after an invented answer, the model's
    "I don't know" in the other language becomes Eva's own line in the owner's (seen on an
    unseen scenario with the default model: "Какой у меня любимый фильм?" → "I don't know
    your favorite movie.")."""
    mem.save("Я работаю ветеринаром в Самаре.", OWNER_TRUSTED)
    llm = ScriptedLLM(
        [["Твой любимый фильм — ", "«Титаник»."], ["I don't know ", "your favorite movie."]],
        plans=[],
    )
    assert run(Conversation(mem, llm), "Какой у меня любимый фильм?") == DONT_KNOW["ru"]


@pytest.mark.parametrize(
    ("question", "fact", "answer"),
    [
        ("Where does my sister live?", "Моя сестра Аня живёт в Ереване.", "В Ереване."),
        (
            "Сколько у меня детей?",
            "My son Mark is 7, my daughter Lisa is 4.",
            "Two: Mark and Lisa.",
        ),
        ("What's my mum's name?", "Маму зовут Галина.", "Your mum is Galina."),
    ],
)
def test_someone_memory_names_by_role_in_either_language_is_answered(question, fact, answer):
    """Issue 26: the role rule holds a reply only when nothing shown names the person asked
    about; a role in the other language, or a son for "children", counts."""
    support = f"{fact}\n{question}"
    assert missing_roles(question, support) == []
    assert not invents(answer, support, question)


def test_the_role_asked_about_is_read_from_the_question_not_from_its_copy_in_the_support():
    support = "My husband Igor is a pilot.\nWhat is my brother's name?"
    assert missing_roles("What is my brother's name?", support) == ["brother"]
    assert invents("Igor.", support, "What is my brother's name?")
    assert not invents(
        "You haven't told me about a brother.", support, "What is my brother's name?"
    )


def test_a_name_memory_gives_someone_else_is_not_the_answer_about_the_owners_mother(mem):
    """Issue 26, seen on an unseen scenario: the mother is in memory, her name is not, and the
    default model answered with the wife's. It is not shown: she does not know."""
    mem.save("My wife Alesya is from Minsk, she translates for the courts.", OWNER_TRUSTED)
    mem.save("We're throwing Mum a party for her 70th in September.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Ваша мама ", "Alesya."], HONEST_RU], plans=[])
    shown = run(Conversation(mem, llm), "Как зовут мою маму?")
    assert shown == DONT_KNOW["ru"]
    assert len(llm.calls) == 1


def test_a_name_is_misattributed_when_a_line_gives_it_to_another_role_and_none_to_the_asked():
    q = "Как зовут мою жену?"
    support = f"- My wife Alesya is from Minsk.\n- Mum turns 70 in September.\n{q}"
    assert misattributed("Вашу жену зовут Alesya.", support, q) == []
    assert misattributed("Её зовут Alesya.", "- Alesya is from Minsk.", "Как зовут мою маму?") == []
    assert misattributed("Её зовут Alesya.", support.replace(q, "Мою маму?"), "Мою маму?") == [
        "alesya"
    ]
    # a line that holds the name with no role says nothing either way: it no longer frees a
    # name another line gives someone else
    mum = "Как зовут мою маму?"
    with_free_line = f"- My wife Alesya is from Minsk.\n- Alesya translates for the courts.\n{mum}"
    assert misattributed("Ваша мама зовут Alesya.", with_free_line, mum) == ["alesya"]
    assert invents("Ваша мама зовут Alesya.", with_free_line, mum)
    # a line that gives the name to the role asked about frees it
    colleague = "Who is my colleague?"
    both = f"- My wife Anna is from Minsk.\n- Anna is also my colleague at the clinic.\n{colleague}"
    assert missing_roles(colleague, "- My wife Anna is from Minsk.") == ["colleague"]  # read
    assert misattributed("Anna.", both, colleague) == []


def test_someone_elses_partner_is_not_the_owners_boyfriend():
    """§8.10, issue 26 (bench.companion, unseen scenario e, default model): "What's Liza's
    husband called?" with no husband in memory got "Liza's husband is Matvey." — the owner's
    boyfriend. A partner is a role ("парень", "girlfriend", "fiancée"), and a role asked about
    someone else's circle is read as well as the owner's."""
    q = "What's Liza's husband called?"
    support = (
        "- Мой парень Матвей — курьер, целыми днями гоняет по городу на велосипеде.\n"
        "- Liza had twins last night! She's been my best friend since school.\n"
        "- Новость: Матвей ушёл из курьеров, теперь он сварщик на судоверфи."
    )
    assert roles("Мой парень Матвей — курьер") == {"partner"}
    assert roles("My girlfriend Ann is a nurse.") == {"partner"}
    assert misattributed("Liza's husband is Matvey.", support, q) == ["matvey"]
    assert invents("Liza's husband is Matvey.", support, q)
    # spelled as it sounds, not as it transliterates (the same scenario, a later run)
    assert misattributed("Liza's husband is Matvay.", support, q) == ["matvay"]
    # a bare answer names him too (scenario e, a later run: "Matvey.")
    assert misattributed("Matvey.", support, q) == ["matvey"]
    assert misattributed("Liza's husband is Anna Matvey.", support, q) == ["matvey"]
    # the owner's own partner, asked for by that role, is the answer
    assert not invents("Your boyfriend is Matvey.", support, "Как зовут моего парня?")
    assert not invents("Matvey is a welder now.", support, "What does Matvey do now?")


def test_who_someone_is_is_read_from_memory_though_not_recalled(mem):
    """§8.10, issue 26 (unseen scenario e, default model): with the courier record retired by
    the correction, no recalled line said who Matvey is ("Никто не знает, даже Матвей."), and
    "Liza's husband is Matvey." was shown. The turn reads the live records that say who the
    support's people are ("Матвей — мой парень."), for whose a name is, never as support."""
    mem.save("Матвей — мой парень.", OWNER_TRUSTED)
    mem.save("Liza had twins last night! She's been my best friend since school.", OWNER_TRUSTED)
    mem.save("My sister Olga is a nurse in Omsk.", OWNER_TRUSTED, private=True)
    q = "What's Liza's husband called?"
    support = (
        "- Только между нами: я пишу роман. Никто не знает, даже Матвей, и даже Olga.\n"
        "- Liza had twins last night! She's been my best friend since school.\n" + q
    )
    conv = Conversation(mem, ScriptedLLM([]))
    whose = conv._whose(q, support, OWNER_TRUSTED)
    assert "Матвей — мой парень." in whose.splitlines()
    assert "My sister Olga is a nurse in Omsk." in whose.splitlines()
    # a private record is read only where private memory may be seen (SPEC §5)
    assert "Olga" not in conv._whose(q, support, PUBLIC)
    assert misattributed("Liza's husband is Matvey.", support, q) == []  # the support alone
    judge = ReplyJudge(q, "en", support=support, whose=whose)
    assert judge.feed("Liza's husband is Matvey.") == ""  # held, never shown
    judge.finish()
    assert judge.invented and judge.claims == ["matvey"]
    # a statement is not judged: nothing is looked up
    assert conv._whose("Матвей сегодня дома.", support, OWNER_TRUSTED) == ""


@pytest.mark.parametrize(("question", "made_up", "fact"), MISSING_ROLE)
def test_a_question_about_someone_memory_never_names_gets_i_dont_know_without_a_call(
    mem, question, made_up, fact
):
    """§8.10, issue 26: asked about one of the owner's people by a role nothing shown names,
    any answer is made up (the default model borrowed a name memory gives someone else), and
    the judge would hold it — so Eva says she does not know at once, with no reply asked for
    (bench.companion: two calls, 3.4-4.4 s, before the same line)."""
    mem.save(fact, OWNER_TRUSTED)
    lang = "ru" if re.search("[а-яё]", question, re.IGNORECASE) else "en"
    llm = ScriptedLLM([[made_up]], plans=[])
    events = list(Conversation(mem, llm).turn(question, OWNER_TRUSTED))
    shown = "".join(e.text for e in events if isinstance(e, Token))
    assert shown == DONT_KNOW[lang]
    assert llm.calls == [] and made_up not in shown
    done = events[-1]
    assert (
        isinstance(done, TurnDone)
        and done.first_token_seconds is not None
        and done.model_calls == 0
    )
    # the memory names the role: the model answers
    mem.save(
        fact + (" My brother is Oleg." if lang == "en" else " Маму зовут Лида."), OWNER_TRUSTED
    )
    llm = ScriptedLLM([["Oleg." if lang == "en" else "Лида."]], plans=[])
    assert run(Conversation(mem, llm), question) in ("Oleg.", "Лида.") and len(llm.calls) == 1


def test_a_reply_that_reads_back_an_earlier_question_of_the_owner_is_asked_again(mem):
    """§3.1 (issue 9, issue 26; bench.companion on an unseen scenario, default model): "Что мы
    сейчас ремонтируем дома?" got "Как зовут мою жену и откуда она?" — the owner's question of
    four turns before, shown as the answer. It is an echo: asked again, unseen."""
    mem.save("Моя жена Алеся из Минска.", OWNER_TRUSTED, kind="core")
    mem.save("Мы сейчас ремонтируем ванную, кладём плитку.", OWNER_TRUSTED, kind="core")
    earlier = "Как зовут мою жену и откуда она?"
    llm = ScriptedLLM([["Алеся, из Минска."], [earlier], ["Ванную: кладёте плитку."]], plans=[])
    conv = Conversation(mem, llm)
    assert run(conv, earlier) == "Алеся, из Минска."
    assert run(conv, "Что мы сейчас ремонтируем дома?") == "Ванную: кладёте плитку."
    assert len(llm.calls) == 3
    assert QUESTION_ECHO_NUDGE in str(llm.calls[2]["messages"])


def test_a_bare_number_answer_is_not_a_list_item():
    """Issue 26: "Сколько мне лет?" got "25." on the default model (seen in make test under
    load) and it was shown: the list-item rule took the reply's own number for a marker."""
    support = "Меня зовут Тимур, я работаю ветеринаром в Самаре.\nСколько мне лет?"
    assert unsupported("25.", support) == ["25"]
    assert invents("25.", support, "Сколько мне лет?")
    assert unsupported("Вот что взять:\n\n1.", support) == []


@pytest.mark.parametrize(
    "question",
    [
        "Что мы сейчас ремонтируем дома?",
        "Как зовут нашу собаку?",
        "When is our trip to Sochi?",
        "Where are we moving, and when?",
    ],
)
def test_the_first_person_plural_asks_about_the_owners_household(question):
    """Issue 26, seen on an unseen scenario: "Что мы сейчас ремонтируем дома?" was not taken for
    a question about the owner, and "Моя жена Alesya… переводит для судей здесь." — the owner's
    life in Eva's voice — was shown. Eva has no household: "мы", "наш", "our" are the owner's."""
    assert asks_about_owner(question)
    support = f"My wife Alesya is from Minsk, she translates for the courts.\n{question}"
    assert invents("Моя жена Alesya переводит для судей здесь.", support, question)


def test_an_acronym_the_memory_holds_may_be_spelled_out():
    """Seen in an owner session: the owner's "We are planning a trip to the US in May." and
    "Where are we going in May?" — the model's "the United States" was judged two names nothing
    shown holds, and Eva said she did not know."""
    q = "Where are we going in May?"
    support = f"- We are planning a trip to the US in May.\n{q}"
    assert unsupported("You are going to the United States in May.", support) == []
    assert unsupported("The United States of America, in May.", f"- A trip to the USA.\n{q}") == []
    assert not invents("You are going to the United States in May.", support, q)
    # initials no acronym of the support spells stay names nothing shown holds
    assert set(unsupported("You are going to United Kingdom.", support)) == {"kingdom", "unit"}
    assert set(unsupported("You are going to the United States.", f"- A trip in May.\n{q}")) == {
        "state",
        "unit",
    }


def test_the_us_is_not_us():
    """ "US" in capitals is the country: LoCoMo's four dev questions holding "us" all meant it."""
    assert not asks_about_owner("Around which US holiday did Maria get into a car accident?")
    assert asks_about_owner("Where did Maria take us last summer?")
    assert asks_about_owner("We went to the US in May, didn't we?")


def test_the_owners_people_asked_about_with_our_are_the_owners():
    q = "How old is our son?"
    support = f"My wife Alesya is from Minsk.\n{q}"
    assert missing_roles(q, support) == ["son"]
    assert missing_roles("Как зовут нашего сына?", "Нашему сыну Марку 7 лет.") == []
    assert missing_roles("Где учится наша дочь?", "My wife Alesya is from Minsk.") == ["daughter"]


def test_we_in_a_reply_to_a_question_about_a_shared_talk_is_not_the_owners_voice():
    """The plural is the owner's household, not Eva's: a reply that speaks of "we" with "you"
    is not judged as Eva's own voice."""
    q = "What did we talk about yesterday?"
    support = f"The owner is planning a trip to Sochi in May.\n{q}"
    assert asks_about_owner(q)
    assert not invents("We talked about your trip to Sochi in May.", support, q)


def test_a_name_evas_earlier_reply_gave_another_role_is_not_the_answer():
    """Issue 26, seen on companion_d: the wife's record was not recalled for "Как зовут мою
    маму?", but Eva's own earlier "Ваша жена Alesya…" was in the window, and the model answered
    "Ваша мама зовут Alesya.". Her earlier replies are no support for a claim, but a role they
    gave a name says whose it is."""
    q = "Как зовут мою маму?"
    support = (
        "- I've had asthma since I was a kid.\nWhen is Mum's 70th birthday party?\n"
        f"What does Alesya do for a living?\n{q}"
    )
    said = "Ваша жена Alesya, которая родилась в Минске."
    assert missing_roles(q, support) == []  # the owner named Mum earlier in the window
    assert misattributed("Ваша мама зовут Alesya.", support, q) == []  # the support alone
    assert misattributed("Ваша мама зовут Alesya.", support, q, said) == ["alesya"]
    assert made_up("Ваша мама зовут Alesya.", support, q, said) == ["alesya"]
    # what Eva said is never support: a name only her earlier reply holds is still unsupported
    assert unsupported("Её зовут Alesya.", "- I've had asthma since I was a kid.") == ["alesya"]
    judge = ReplyJudge(q, "ru", earlier=[said], support=support)
    assert judge.feed("Ваша мама зовут Alesya.") == ""  # held, never shown
    judge.finish()
    assert judge.invented and judge.claims == ["alesya"]


def test_a_memory_copied_in_the_owners_voice_is_said_to_the_owner_not_asked_again(mem):
    """§8.10, issue 26 owner_voice (seen on an unseen scenario, default model): "Which football
    team do I support?" was answered with the memory itself, "Hibs are my team, I've had a season
    ticket at Easter Road for fifteen years." Every fact was the memory's, only the voice Eva's:
    it was held as invented, the retry said "I don't know", and the owner got "I don't know".
    Now the owner gets the memory said to them, and no second call is made."""
    mem.save(
        "Hibs are my team, I've had a season ticket at Easter Road for fifteen years.",
        OWNER_TRUSTED,
    )
    llm = ScriptedLLM(
        [["Hibs are my team, I've had a season ticket at Easter Road for fifteen years."]],
        plans=[],
    )
    shown = run(Conversation(mem, llm), "Which football team do I support?")
    assert (
        shown == "Hibs are your team, you've had a season ticket at Easter Road for fifteen years."
    )
    assert len(llm.calls) == 1


def test_a_made_up_fact_in_the_owners_voice_is_not_turned_to_the_owner(mem):
    """The voice is turned only when that is the whole fault: "I am learning Russian." names a
    language nothing shown holds, so it is made up (and a Russian reply in the owner's voice
    too: its verbs change with the person, it is not rewritten)."""
    mem.save("My sister Anna lives in Yerevan.", OWNER_TRUSTED)
    llm = ScriptedLLM([["I am learning Russian."], HONEST_EN], plans=[])
    shown = run(Conversation(mem, llm), "Which language am I learning these days?")
    assert shown == DONT_KNOW["en"] and len(llm.calls) == 1
    marina = "Я Марина, по профессии архитектор."
    mem.save(marina, OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Я архитектор, проектирую школы."], ["Ты архитектор."]], plans=[])
    # the made-up schools are never shown: she is not sure, and quotes the record it drew on
    assert run(Conversation(mem, llm), "Кем я работаю?") == RECALLED_QUOTE["ru"].format(
        quote=marina
    )
    assert len(llm.calls) == 1


def test_a_true_answer_in_evas_voice_in_other_words_is_quoted_from_the_record(mem):
    """§8.10, issue 26 (bench.companion scenario b, default model): "Which band do I love?" got
    "Radiohead is my favorite band." — true, in Eva's voice, and "favorite" is not the memory's
    "favourite", so it could not be said to the owner — and she said there was nothing in her
    memory. She now quotes the record the answer drew on; a made-up band adds nothing a record
    holds, and she does not know."""
    band = "Radiohead is my favourite band, I've seen them live twice."
    mem.save(band, OWNER_TRUSTED)
    llm = ScriptedLLM([["Radiohead is my favorite band."]], plans=[])
    assert run(Conversation(mem, llm), "Which band do I love?") == RECALLED_QUOTE["en"].format(
        quote=band
    )
    llm = ScriptedLLM([["I love the Beatles."]], plans=[])
    assert run(Conversation(mem, llm, channel="b"), "Which band do I love?") == DONT_KNOW["en"]


@pytest.mark.parametrize(
    "reply, said_to_owner",
    [
        (
            "I am a tram driver. I was born in Leith.",
            "You are a tram driver. You were born in Leith.",
        ),
        ("My wife Alesya is from Minsk.", "Your wife Alesya is from Minsk."),
        ("I’m 44 and I drive trams.", "You’re 44 and you drive trams."),
        ("I remember that I am learning Dutch.", "I remember that you are learning Dutch."),
        # Russian: pronouns, and a regular present tense verb right after "я" (scenario e,
        # default model: "Кем я работаю?" got "Я работаю логопедом в детском саду.")
        ("Я работаю логопедом в детском саду.", "Ты работаешь логопедом в детском саду."),
        ("Мне 29 лет, у меня аллергия на арахис.", "Тебе 29 лет, у тебя аллергия на арахис."),
        (
            "Я занимаюсь дзюдо, моя жена Alesya тоже.",
            "Ты занимаешься дзюдо, твоя жена Alesya тоже.",
        ),
        ("Я работала в банке.", "Ты работала в банке."),
        # a verb whose form would be a guess leaves the text unturned
        ("Я живу в Калининграде.", None),
        ("Я очень люблю маму.", None),
        ("Я новую машину купила.", None),
        ("Я не ем свинину.", None),
        ("Я учитель, живу в Туле.", None),
        ("Your dog is Rocket.", None),
    ],
)
def test_the_owners_voice_turned_to_the_owner(reply, said_to_owner):
    """core.chat.invention.addressed: the first person singular's closed word class, in English
    only; Eva's report of her memory stays hers."""
    from core.chat.invention import addressed

    assert addressed(reply) == said_to_owner


def test_the_owners_own_name_is_found_in_the_labelled_introductions_and_nowhere_else():
    """Issue 26 (the introduction kept as core, the greeting by name): over the memory-step
    set, both splits, self_name finds the owner's name in at least 45 of the 51 introductions
    and in at most 2 of the 565 other messages; someone else's name ("Her name's Coco") is
    never the owner's."""
    from bench.memory_step import load_items
    from core.chat.invention import self_name

    items = load_items()
    intros = [it["say"] for it in items if it["category"] == "introduction"]
    rest = [it["say"] for it in items if it["category"] != "introduction"]
    assert len(intros) == 51 and len(rest) == 565
    assert sum(self_name(t) is not None for t in intros) >= 45
    assert sum(self_name(t) is not None for t in rest) <= 2
    assert self_name("меня Катя зовут, я фармацевт") == "Катя"
    assert self_name("name's priya, i'm a nurse") == "Priya"
    assert self_name("I got a puppy! Her name's Coco.") is None
    assert self_name("My dog's name is Rex.") is None


def test_a_number_of_the_owners_line_is_not_someone_elses_age():
    """§8.10, issue 26 (bench.companion, unseen scenario e, default model, the introduction core
    and in every prompt): "Сколько лет Матвею?" with no age of Matvey's in memory got "Матвей 29
    лет." — 29 is the owner's age. A number given about someone the question names must come
    from a line about them (their name, a longer form of it, their role)."""
    from core.chat.invention import misnumbered

    q = "Сколько лет Матвею?"
    support = f"Я Полина, мне 29, работаю логопедом.\n- Мой парень Матвей — курьер.\n{q}"
    assert misnumbered("Матвей 29 лет.", support, q) == ["29"]
    assert made_up("Матвей 29 лет.", support, q) == ["29"]
    told = support.replace("курьер.", "курьер, ему 31.")
    assert made_up("Матвею 31 год.", told, q) is None
    # by role: the son's line, or a line giving the son's name
    son = "- Марк — мой сын.\n- У сына день рождения 12 мая.\n- Мне 41 год."
    assert misnumbered("Марку 41 год.", son, "Сколько лет Марку?") == ["41"]
    assert misnumbered("Your son is 41.", son, "How old is my son?") == ["41"]
    assert misnumbered("У Марка день рождения 12 мая.", son, "Когда день рождения у Марка?") == []
    # LoCoMo (dev): "Mel" is Melanie; a day worked out from a dated line is no one's number
    mel = "How long have Mel and her husband been married?"
    lines = "- Melanie: 5 years already! Time flies.\n- Caroline: I ran 5 km and 10 more."
    assert misnumbered("For 5 years.", f"{lines}\n{mel}", mel) == []
    jon = "When did Jon go to the networking event?"
    dated = (
        "- 1 | fact | 21 June 2023 | 3 | Jon: went to a networking event yesterday\n- Gina: 20 bags"
    )
    assert misnumbered("On 20 June 2023.", dated, jon) == []


def test_the_owners_own_lines_are_about_the_owner_asked_by_name():
    """§8.10, issue 26 (bench.locomo_qa, conversation 0, default model): the owner is named in
    the third person ("How long ago was Caroline's 18th birthday?"), the memory holds the
    owner's own words in the first person and a core line says who the owner is. "Caroline's
    18th birthday was ten years ago." was held as made up — its "18th" is on no line naming
    Caroline — and she said she did not know. The owner's first-person lines are about the
    owner; someone else's first person is not (LoCoMo dev, gold answers as replies: 8 numbers
    held so, 3 after)."""
    from core.chat.invention import misnumbered

    q = "How long ago was Caroline's 18th birthday?"
    own = "A friend made my bowl for my 18th birthday ten years ago."
    support = f"The owner's name is Caroline.\n{own}\n{q}"
    assert made_up("Caroline's 18th birthday was ten years ago.", support, q) is None
    # the owner's own introduction says who the owner is as well
    intro = "Я Полина, работаю логопедом.\n- Мне 29.\nСколько лет Полине?"
    assert misnumbered("Полине 29 лет.", intro, "Сколько лет Полине?") == []
    # a line that only mentions the owner does not make every first person the person's
    friend = "Я Полина, мне 29.\n- Хозяйка дружит с Матвеем.\nСколько лет Матвею?"
    assert misnumbered("Матвей 29 лет.", friend, "Сколько лет Матвею?") == ["29"]
    # someone else's words in the first person, under their name, stay theirs
    other = (
        "The owner's name is Melanie.\nCaroline: I am 32 and I love concerts.\nHow old is Melanie?"
    )
    assert misnumbered("Melanie is 32.", other, "How old is Melanie?") == ["32"]


def test_a_month_written_in_full_from_a_dated_line_is_not_made_up():
    """§8.10, issue 26: a recalled line carries the day it was said, short ("27 Aug 2023",
    prompt_section.said_on); "When did Melanie go to the park?" answered "on 27 August 2023"
    was held as made up for its "August" (LoCoMo dev, gold answers as replies: 33 of 760 held
    so). A month nothing shown names is still a made-up name."""
    q = "When did Melanie go to the park?"
    support = f"The owner's name is Melanie.\n27 Aug 2023 I went to the park with the kids.\n{q}"
    assert made_up("Melanie went to the park on 27 August 2023.", support, q) is None
    assert made_up("Melanie went to the park in September.", support, q) == ["septemb"]


def test_a_month_or_weekday_the_memory_names_in_the_other_language_is_not_made_up():
    """§8.10, issue 26: the owner told Eva in Russian "Свадьбу перенесли: теперь она в октябре",
    and "When is my wedding?" answered "Your wedding is in October." was held as made up for
    "October" — the owner heard there was nothing in her memory (bench.companion, unseen
    scenario c). A month or weekday the memory names in either language is one it holds; one it
    names in neither is still made up."""
    q = "When is my wedding?"
    support = "10 | event | 3d | 4 | Свадьбу перенесли: теперь она в октябре.\n" + q
    assert made_up("Your wedding is in October.", support, q) is None
    assert made_up("Your wedding is in November.", support, q) == ["novemb"]
    party = "When is Mum's party?"
    told = "12 | event | 2d | 4 | Вечеринка у мамы в пятницу, 5 сентября.\n" + party
    assert made_up("It is on Friday, the 5th of September.", told, party) is None
    assert made_up("It is on Saturday, the 5th of September.", told, party) == ["saturday"]
    assert made_up("It is on Friday, the 5th of October.", told, party) == ["5th", "octob"]


def test_a_number_the_memory_says_in_words_or_as_last_year_is_not_made_up():
    """§8.10, issue 26 (bench.never_invent, LoCoMo dev's true answers as replies): "10 years ago"
    for a line saying "ten years ago", and "2022" for a line of 2023 saying "last year", were
    held as made up (148 -> 132 of 1520 held with the two). A number nothing shown says, in
    digits or words, is still held."""
    q = "How long ago was Caroline's 18th birthday?"
    support = f"The owner's name is Caroline.\nMy 18th birthday was ten years ago.\n{q}"
    assert made_up("10 years ago.", support, q) is None
    assert made_up("12 years ago.", support, q) == ["12"]
    painted = "When did Melanie paint a sunrise?"
    dated = f"Melanie: 15 May 2023 I painted that lake sunrise last year!\n{painted}"
    assert made_up("In 2022.", dated, painted) is None
    assert made_up("In 2021.", dated, painted) == ["2021"]
    assert made_up("In 2024.", dated, painted) == ["2024"]


def test_a_hyphenated_word_holding_me_is_not_evas_own_voice():
    """§8.10, issue 26 (LoCoMo dev, a gold answer as the reply): "by carving out some me-time
    each day" was read as Eva speaking of herself ("me"), and held as made up."""
    assert not speaks_as_owner(
        "Melanie prioritizes self-care by carving out some me-time each day."
    )
    assert speaks_as_owner("I carve out some me-time each day.")


def test_numbers_of_the_owners_introduction_are_not_given_to_the_people_of_the_labelled_set():
    """Issue 26, over the memory-step set (both splits): each introduction holding a number
    (the owner's age), six other messages of its language that name someone, then "How old is
    <name>?" answered with the owner's number. At least 95 of the 105 such replies are judged
    made up (101 measured; the misses name the person in the introduction itself)."""
    import random

    from bench.memory_step import load_items
    from core.text import names, numbers

    items = load_items()
    rng = random.Random(1)
    intros = [i for i in items if i["category"] == "introduction" and numbers(i["say"])]
    named = [i for i in items if i["category"] != "introduction" and names(i["say"])]
    named = [i for i in named if not numbers(i["say"])]
    caught = total = 0
    for it in intros:
        facts = rng.sample([o for o in named if o["lang"] == it["lang"]], 6)
        support = "\n".join([it["say"]] + [f["say"] for f in facts])
        age = sorted(numbers(it["say"]))[0]
        for f in facts[:3]:
            name = names(f["say"])[0]
            ru = it["lang"] == "ru"
            q = f"Сколько лет {name}?" if ru else f"How old is {name}?"
            reply = f"{name} {age} лет." if ru else f"{name} is {age}."
            total += 1
            caught += made_up(reply, f"{support}\n{q}", q) is not None
    assert total == 105 and caught >= 95


def test_a_bare_name_nothing_shown_holds_is_made_up():
    """§8.10, issue 26 (bench.companion, unseen scenario d, default model): "Как зовут мою жену
    и откуда она?" with no wife in memory got "Алексей" — a one-word reply, whose only word opens
    the sentence and so was never read as a name. Over 46 replies of earlier runs to questions
    asking a name, that was the one such reply naming what nothing shown held."""
    q = "Как зовут мою жену и откуда она?"
    support = f"- У меня сын Марк.\n- Наш хорёк Шнурок.\n{q}"
    assert made_up("Алексей", support, q) is not None
    assert "alek" in (made_up("Алексей.", support, q) or [])
    dog = "Как зовут нашего хорька?"
    assert made_up("Шнурок.", f"- Наш хорёк Шнурок.\n{dog}", dog) is None
    assert made_up("Shnurok.", f"- Наш хорёк Шнурок.\n{dog}", dog) is None
    # a question that asks no name: a capitalised first word is any word
    assert made_up("Минск.", "- Моя жена из Минска.\nОткуда моя жена?", "Откуда моя жена?") is None
    # the question's own word given back names no one (scenario d: "Как зовут мою маму?" with
    # "Mum turns 70" in memory got "Мама")
    mum = "Как зовут мою маму?"
    assert made_up("Мама", f"- Mum turns 70 in September.\n{mum}", mum) is not None
    ferret = "Как зовут нашего хорька?"
    shown = f"- We have a ferret called Shnurok.\n{ferret}"
    assert made_up("Хорька Shnurok.", shown, ferret) is None


def test_a_place_the_memory_holds_in_the_other_script_is_no_invention():
    """SPEC §8.10 (issue 26): a name the memory holds in the other script is no invention, even
    where its stems do not meet letter by letter ("Норвегии" and "Norway"); a place it does not
    hold still is."""
    shown = "Я живу в Норвегии с 2019 года. Сестра Анна живёт в Чикаго."
    assert unsupported("You have lived in Norway since 2019.", shown) == []
    assert unsupported("Your sister Anna lives in Chicago.", shown) == []
    assert unsupported("You have lived in Sweden since 2019.", shown) == ["sweden"]
    assert unsupported("Ты живёшь в Осло.", "I live in Oslo.") == []
    assert unsupported("Ты живёшь в Берлине.", "I live in Oslo.") == ["berlin"]
    # an opening "Е" is "Ye" in English
    moved = "Сестра Аня переехала в Ереван, а Егор остался в Екатеринбурге."
    assert unsupported("Your sister lives in Yerevan, Yegor stayed in Yekaterinburg.", moved) == []
    assert unsupported("Your sister lives in Yalta.", moved) == ["yalta"]


def test_a_memory_lines_age_and_id_are_no_fact_about_the_owner(mem, clock):
    """§8.10: what the memory section says about its records (id, kind, how long ago, importance)
    is no support for a number about the owner. Measured on the default model: "How old am I?"
    with no age in memory got "You are 3 days old." from a line said 3 days before, and it was
    shown. The day a line was said stays a support (a date worked out from it)."""
    mem.save("I moved to Kazan and work as a vet.", OWNER_TRUSTED, kind="core", importance=3)
    clock.advance(3 * 86_400 + 60)
    llm = ScriptedLLM([["You are 3 days old."], ["You are 3 years old."]], plans=[])
    assert run(Conversation(mem, llm), "How old am I?") == DONT_KNOW["en"]


def test_a_line_about_the_owners_husband_is_not_the_owners_own_life(mem):
    """§8.10, measured on bench.owner_profile dev with the default model: "Кем я работаю?" with
    the owner's job nowhere in memory got "Ты работаешь на севере вахтами…" — the husband's
    line, "Муж у меня работает на севере вахтами…", told as the owner's. It is not shown."""
    mem.save(
        "Муж у меня работает на севере вахтами, месяц там месяц дома.", OWNER_TRUSTED, kind="core"
    )
    llm = ScriptedLLM(
        [["Ты работаешь на севере вахтами, месяц там месяц дома."], HONEST_RU], plans=[]
    )
    assert run(Conversation(mem, llm), "Кем я работаю?") == DONT_KNOW["ru"]
    assert len(llm.calls) == 1


@pytest.mark.parametrize(
    ("reply", "support", "question"),
    [
        # the husband's line told of the husband is no claim about the owner
        ("Муж у тебя работает на севере.", "Муж у меня работает на севере.", "Кем я работаю?"),
        # a line about the owner as well as someone else
        ("You study at uni.", "My son studies at school, and I study at uni.", "What do I study?"),
        # a question about the husband himself
        ("Он работает на севере.", "Муж у меня работает на севере.", "Где работает мой муж?"),
        # a line that opens on a role with another verb
        ("Тебе подарили машину.", "Мама с папой подарили мне машину.", "Что мне подарили?"),
        ("You live in Riga.", "I live in Riga. My sister works in Oslo.", "Where do I live?"),
    ],
)
def test_the_owners_own_life_and_others_lines_told_of_them_stand(reply, support, question):
    """§8.10: only a line whose subject is someone else, retold with "you" and its own verb,
    is someone else's life told as the owner's."""
    from core.chat.invention import someone_elses_life

    assert someone_elses_life(reply, support, question) == []
    assert someone_elses_life(
        "You work in Oslo.", support + "\nMy sister works in Oslo.", "What do I do?"
    ) == ["sister"]


def test_a_question_given_back_with_the_person_turned_is_asked_again(mem):
    """§8.10, measured on an unseen scenario (d) with the default model: "Как зовут мою маму?"
    (memory holds the mother's party, not her name) got "Ваша мама." — the question given back,
    which names no one — and it was shown. It is an echo: not shown, and asked again."""
    mem.save("Mum's 70th birthday party is on the 5th of September.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Ваша мама."], HONEST_RU], plans=[])
    assert run(Conversation(mem, llm), "Как зовут мою маму?") == "".join(HONEST_RU)
    assert len(llm.calls) == 2
    # an answer names something; an admission, and a choice the question offered, stand
    judge = ReplyJudge("Как зовут мою маму?", "ru")
    assert not judge.echoes("Твою маму зовут Анна.") and not judge.echoes("Я не знаю.")
    assert not ReplyJudge("Who is older, Anna or Maria?", "en").echoes("Anna.")


def test_an_age_said_in_words_that_nobody_told_is_made_up(mem):
    """§8.10, measured on an unseen scenario (e) with the default model: "Сколько лет Матвею?"
    (nobody said) got "Два года." and it was shown — the number checks read digits only. An
    age said in words is read as a number; one the memory holds, in words or digits, stands."""
    from core.chat.invention import worded_numbers

    mem.save("Мой парень Матвей — курьер, целыми днями на велосипеде.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["Два года."], HONEST_RU], plans=[])
    assert run(Conversation(mem, llm), "Сколько лет Матвею?") == DONT_KNOW["ru"]
    assert worded_numbers("Тебе двадцать девять.", "Я Полина, мне 29.", "Сколько мне лет?") == []
    assert worded_numbers("Isla is six.", "Isla turned six in May.", "How old is Isla?") == []
    assert worded_numbers("Isla is six.", "Isla got a yellow belt.", "How old is Isla?") == ["6"]
    # a count worked out over several lines is not judged by its words (LoCoMo: "Four" hikes)
    assert (
        worded_numbers("Four.", "Joanna went hiking.", "How many hikes has Joanna been on?") == []
    )


def test_what_a_memory_says_is_support_even_when_it_reads_like_the_sections_notice():
    """§8.10: the judge reads each memory line's content (prompt_section.said_text); only the
    section's own column line and its notice of records left out go. A record that opens with
    "Note:" is the owner's words, and its number supports an answer."""
    from core.memory.prompt_section import COLUMNS, dropped_notice, said_text

    section = "\n".join(
        [
            "# Memory",
            COLUMNS,
            "12 | core | 27 Nov 2026 | 5 | Note: my passport number ends in 4471.",
            dropped_notice(2),
            "7 | fact | 3d, 29 Nov 2026 | 3 | Anna lives in Kazan.",
        ]
    )
    shown = said_text(section)
    assert shown.splitlines() == [
        "# Memory",
        "27 Nov 2026 Note: my passport number ends in 4471.",
        "29 Nov 2026 Anna lives in Kazan.",
    ]
    assert unsupported("It ends in 4471.", shown) == []


def test_a_common_word_nothing_shown_holds_is_made_up(mem):
    """§8.10, measured on an unseen scenario (d) with the default model: "What instrument am I
    learning?" (the ukulele was forgotten) got "piano", and "Какой спорт у моего сына?" got
    "футбол" — common words, past the checks of names and numbers. A what / which / who / where
    answer that names nothing the turn was shown is made up, and not shown."""
    from core.chat.invention import nothing_shown

    mem.save("Hi Eva, I'm Callum, 44, I drive trams in Edinburgh.", OWNER_TRUSTED, kind="core")
    llm = ScriptedLLM([["You are learning the piano."], HONEST_EN], plans=[])
    assert run(Conversation(mem, llm), "What instrument am I learning?") == DONT_KNOW["en"]
    assert len(llm.calls) == 1
    q = "Какой спорт у моего сына?"
    assert nothing_shown("Спорт у моего сына - футбол.", "У меня сын Марк.", q) == ["футбол"]
    # a sentence that says nothing of what was asked, or only of the talk itself, is not judged
    assert nothing_shown("Hello there", "Anna plays chess.", "What does Anna play?") == []
    assert (
        nothing_shown("Noted, I keep your diagnosis in mind.", "Asthma.", "What's my diagnosis?")
        == []
    )
    # one word of the memory in the answer, and it stands
    support = "I've taken up the ukulele, Fraser gives me lessons."
    assert nothing_shown("You're learning the ukulele.", support, "What am I learning?") == []
    # where the words cannot be compared, nothing is judged: a Russian memory in English words,
    # a date (unsupported's), a choice the question offered
    assert nothing_shown("He is a welder.", "Матвей теперь сварщик.", "What does Matvey do?") == []
    assert nothing_shown("Next Sunday.", "Ski trip soon.", "When do I go skiing?") == []
    assert nothing_shown("Tea.", "Likes warm drinks.", "What do I drink, tea or coffee?") == []


def test_the_owners_earlier_question_supports_no_answer(mem):
    """§8.10 (unseen scenario e, default model): "Какой у меня любимый фильм?" got «Город», a
    word only the owner's earlier "В каком городе я живу?" held — the window's questions were
    support. A question that only asks states nothing; a message that tells something and then
    asks stays support."""
    from core.chat.prompt import support

    mem.save("Я Полина, работаю логопедом.", OWNER_TRUSTED)
    llm = ScriptedLLM(
        [HONEST_RU, ["У тебя любимый фильм — «Город»."], ["Твой любимый фильм — «Город»."]],
        plans=[],
    )
    conv = Conversation(mem, llm)
    run(conv, "В каком городе я живу?")
    assert run(conv, "Какой у меня любимый фильм?") == DONT_KNOW["ru"]
    window = conv.window(OWNER_TRUSTED).messages
    assert "В каком городе я живу?" in [m.content for m in window]
    assert "городе" not in support("Какой у меня любимый фильм?", None, "", None, window)
    # told, then asked: what it tells is support
    told = "Я переехала в Казань. Где тут лучше жить?"
    assert only_asks("В каком городе я живу?") and not only_asks(told)
    assert not only_asks("Anna or Maria, who is older?")


def test_whom_an_earlier_question_names_by_role_exists_though_it_supports_nothing():
    """§8.10: the owner's earlier question that only asks is no support, but whom it names by
    role exists — "When is Mum's 70th birthday party?" before "Как зовут мою маму?" — so the
    question is not answered "I don't know" before the model is asked (missing_roles); the name
    the answer gives must still be shown elsewhere."""
    q = "Как зовут мою маму?"
    earlier = "When is Mum's 70th birthday party?"
    judge = ReplyJudge(q, "ru", also=[earlier], support=f"- I've had asthma.\n{q}")
    assert not judge.unanswerable
    assert ReplyJudge(q, "ru", support=f"- I've had asthma.\n{q}").unanswerable
    shown = f"- I've had asthma.\n{q}"
    assert missing_roles(q, shown) == ["mother"]
    assert "mother" not in made_up("Твою маму зовут Мария.", shown, q, asked=earlier)
    assert made_up("Твою маму зовут Мария.", shown, q, asked=earlier)  # the name: made up


@pytest.mark.parametrize(
    "question, role",
    [
        ("Сколько лет сыну?", "son"),
        ("Где живёт сестра?", "sister"),
        ("Какая машина у папы?", "father"),
        ("Как зовут хомяка брата?", "brother"),
        ("Кем работает мать?", "mother"),
        ("Сколько лет исполняется бабушке?", "grandparent"),
    ],
)
def test_a_russian_question_about_family_without_my_asks_about_the_owners(question, role):
    """Issue 26 (never invent, §8.10): Russian names one's own family without "мой" — "Сколько
    лет сыну?" is the owner's son. Such questions were outside the answer check: nothing stood
    between the model and an age nobody told. With no son in memory it is a role nothing shown
    names, so no answer is asked for; with him named, the question is the owner's to check."""
    assert bare_kin(question) == {role}
    assert asks_about_owner(question)
    assert missing_roles(question, f"Моя жена Алеся из Минска.\n{question}") == [role]


@pytest.mark.parametrize(
    "question",
    [
        "Как зовут жену Андрея?",  # Andrey's wife
        "Как зовут твою маму?",  # Eva's, asked of her
        "Что подарить маме?",  # advice: what to do, not a fact of memory
        "Как помочь сестре?",
        "Что подарить другу?",  # friends and children in general are no family of hers
        "Почему дети любят сладкое?",
        "Что сказал Пушкин о жене?",  # someone named may be whose
        "How old is the son?",  # English says "my"
        "Сын вчера пришёл поздно.",  # no question
    ],
)
def test_a_question_naming_family_that_is_not_the_owners_is_left_free(question):
    assert bare_kin(question) == set()
    assert missing_roles(question, "Моя жена Алеся из Минска.") == []


def test_asked_about_a_son_memory_never_names_she_does_not_know_without_a_call(mem):
    """The whole turn: "Сколько лет сыну?" with a wife and no son in memory gets "I don't know"
    at once, no reply asked for; with the son named the model answers."""
    mem.save("Моя жена Алеся из Минска, переводчица.", OWNER_TRUSTED)
    llm = ScriptedLLM([["Сыну 12 лет."]], plans=[])
    assert run(Conversation(mem, llm), "Сколько лет сыну?") == DONT_KNOW["ru"]
    assert llm.calls == []
    mem.save("Сыну Марку 7 лет, он ходит во второй класс.", OWNER_TRUSTED)
    llm = ScriptedLLM([["Марку 7 лет."]], plans=[])
    assert run(Conversation(mem, llm), "Сколько лет сыну?") == "Марку 7 лет."
