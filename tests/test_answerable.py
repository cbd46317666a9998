"""Never invent (SPEC §8.10, issue 26): an answer about the owner stands only when the memory
line it drew on answers the question (core.chat.answerable). The scripted replies are the ones
the default model gave on unseen scenarios; the check's probability is scripted too (its real
model path: tests/test_companion_real.py)."""

from __future__ import annotations

from core import OWNER_TRUSTED, PUBLIC
from core.chat import answerable
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import Token, TurnDone
from core.chat.retry import DONT_KNOW
from tests.fake_llm import ScriptedLLM


class CheckingLLM(ScriptedLLM):
    """A scripted model that can score a closed choice: ``yes`` is its probability of "yes" for
    a line holding the key's text, ``no_yes`` for any other line."""

    def __init__(self, replies, yes_for: str, yes: float = 0.9, other: float = 0.1) -> None:
        super().__init__(replies, plans=[])
        self.yes_for, self.yes, self.other = yes_for, yes, other
        self.checked: list[str] = []

    def choice_probabilities(self, messages, key, options, timeout=None, cancel=None):
        text = messages[-1]["content"]
        self.checked.append(text)
        line = text.split("\u00bb")[0]  # "Memory line: «…»"
        p = self.yes if self.yes_for in line else self.other
        return {"yes": p, "no": 1 - p}


def ask(conv, text):
    events = list(conv.turn(text, OWNER_TRUSTED))
    assert isinstance(events[-1], TurnDone), events
    return "".join(e.text for e in events if isinstance(e, Token)), events[-1]


def test_an_answer_from_a_line_that_does_not_say_it_is_not_shown(mem):
    """Issue 26 (unseen scenario d): "What car do I drive?" got "You drive trams in Edinburgh."
    from "I drive trams in Edinburgh." — nothing made up, and nothing that answers. The line it
    drew on is put to the model; below the threshold Eva says she does not know. The owner
    never sees the made-up answer, not even its first word."""
    mem.save("Hi Eva, I'm Callum, 44, I drive trams in Edinburgh.", OWNER_TRUSTED)
    llm = CheckingLLM([["You drive trams in Edinburgh. ", "Nice job!"]], yes_for="car")
    reply, done = ask(Conversation(mem, llm), "What car do I drive?")
    assert reply == DONT_KNOW["en"]
    assert "trams in Edinburgh" in llm.checked[0] and "What car do I drive?" in llm.checked[0]
    assert [c.purpose for c in done.calls] == ["reply", "check"]


def test_an_answer_from_the_line_that_says_it_stands(mem):
    """The same check lets a right answer through: its first sentence, as the model wrote it."""
    mem.save("Hi Eva, I'm Callum, 44, I drive trams in Edinburgh.", OWNER_TRUSTED, kind="core")
    llm = CheckingLLM([["You drive trams in Edinburgh. ", "Long shifts!"]], yes_for="trams")
    reply, _ = ask(Conversation(mem, llm), "What do I do for work?")
    assert reply == "You drive trams in Edinburgh."


def test_a_what_question_answered_from_no_line_does_not_stand():
    """An answer adding words no line holds drew on nothing: to a "what / who / where"
    question it is no answer, and no check is asked; to a yes/no question ("No, you don't.")
    it may stand."""
    llm = CheckingLLM([], yes_for="never")
    records = ["My wife Alesya is from Minsk."]
    what = answerable.check(llm, "You drive a hatchback.", "What car do I drive?", records, True)
    assert (what.record, what.p_yes, what.stands) == ("", None, False)
    yes_no = answerable.check(llm, "No, you don't.", "Do I have a drone?", records, False)
    assert yes_no.stands and llm.checked == []


def test_an_admission_and_a_statement_are_not_checked(mem):
    """Only an answer about the owner is checked: "I don't know" is shown as it is, and a
    statement's reply is never held for a check."""
    mem.save("My wife Alesya is from Minsk.", OWNER_TRUSTED)
    llm = CheckingLLM(
        [["I don't know, you haven't told me. ", "Will you tell me?"], ["Minsk is lovely!"]],
        yes_for="never",
    )
    conv = Conversation(mem, llm)
    assert (
        ask(conv, "What car do I drive?")[0]
        == "I don't know, you haven't told me. Will you tell me?"
    )
    assert ask(conv, "We went to Minsk last summer.")[0] == "Minsk is lovely!"
    assert llm.checked == []


def test_the_check_is_off_when_the_owner_turns_it_off(mem):
    """``answer_check = false``: the judge's other checks alone, the whole reply shown."""
    mem.save("Hi Eva, I'm Callum, 44, I drive trams in Edinburgh.", OWNER_TRUSTED)
    llm = CheckingLLM([["You drive trams in Edinburgh. ", "Nice job!"]], yes_for="never")
    conv = Conversation(mem, llm, config=ConversationConfig(answer_check=False))
    assert ask(conv, "What car do I drive?")[0] == "You drive trams in Edinburgh. Nice job!"
    assert llm.checked == []


def test_the_check_reads_the_record_the_answer_drew_on():
    """The record put to the model is the one holding most of the words the answer added."""
    records = ["My wife Alesya is from Minsk.", "I drive trams in Edinburgh."]
    llm = CheckingLLM([], yes_for="trams")
    found = answerable.check(llm, "You drive trams.", "What do I do?", records, True)
    assert found.record == "I drive trams in Edinburgh." and found.stands
    assert found.p_yes == 0.9


def test_a_question_about_someone_by_name_is_not_checked(mem):
    """Only the owner's questions about themself, in the first person, or about one of their
    people (below) are checked: on LoCoMo (questions about a speaker by name over narrative
    lines: "When did Jon lose his job?") the check turned right answers into "I don't know"
    (conversation 1, memory F1 0.222 -> 0.095). None of LoCoMo dev's 999 questions is in the
    first person."""
    mem.save("Jonno lost his job at the bank yesterday.", OWNER_TRUSTED)
    llm = CheckingLLM([["Jonno lost his job at the bank. ", "Poor him."]], yes_for="never")
    reply, done = ask(Conversation(mem, llm), "When did Jonno lose his job?")
    assert reply == "Jonno lost his job at the bank. Poor him."
    assert llm.checked == [] and [c.purpose for c in done.calls] == ["reply"]


def test_a_question_about_one_of_the_owners_people_by_name_is_checked(mem):
    """Issue 26, measured on bench.owner_questions (test split, default model): 11 of the 15
    answers made up for unknown questions were about the owner's people by name, unchecked —
    "How old is Tyler?" → "Tyler is 29 years old." beside "Our daughter Kelly lives in Reading
    with her boyfriend Tyler". A name a shown line gives a role is one of the owner's people:
    the answer is checked as one about the owner is."""
    mem.save("Our daughter Kelly lives in Reading with her boyfriend Tyler.", OWNER_TRUSTED)
    llm = CheckingLLM([["Tyler works in Reading. ", "Nice lad."]], yes_for="never")
    reply, done = ask(Conversation(mem, llm), "What does Tyler do?")
    assert reply == DONT_KNOW["en"]
    assert [c.purpose for c in done.calls] == ["reply", "check"]


def test_whose_people_a_name_is_read_from_the_lines_that_give_it_a_role():
    """A role word within two words of the name, in its sentence, makes them the owner's
    ("Wife is Sunita", "сын Олег", "her boyfriend Tyler"); not a line naming them the owner, a
    name said to someone ("Yeah Maria! Friends like you…", "It isn't, Maria. My kids…" —
    LoCoMo's owner lines talk to the other speaker by name), a role another person has ("Mel,
    your kids…") or a word that only starts like one ("moments"). Measured on LoCoMo dev: 5 of
    762 questions with evidence, the owner's every turn as the support."""
    from core.chat.invention import asks_about_owners_people as owners

    assert owners("How old is Sunita?", "30 May 2026 Wife is Sunita, kids are Arjun (16).")
    assert owners("Сколько лет Олегу?", "Сын Олег в Норильске, на комбинате.")
    assert owners("How old is Tyler?", "Kelly lives in Reading with her boyfriend Tyler.")
    assert owners("Who is Jonno?", "My partner Jonno is a sous chef.")
    assert not owners(
        "What did Caroline research?", "The owner's name is Caroline.\nCaroline, my friend."
    )
    assert not owners("When did Maria donate her car?", "Yeah Maria! Friends like you matter.")
    assert not owners("Who did Maria meet?", "It isn't, Maria. My kids have so much.")
    assert not owners("What did Mel paint?", "Mel, your kids are lovely.")
    assert not owners("What did John say?", "Wow, John! Moments like that make us love sports.")
    assert not owners("How old is Zoe?", "My sister Anna lives in Tbilisi.")


def test_her_i_dont_know_gives_way_to_the_recalled_line_that_answers(mem):
    """Issue 26, measured on bench.owner_questions (dev, default model): "Сколько лет моей
    дочке?" got "Этого я не знаю…" with "Дочке Алсу 9 лет" recalled first, and 37 more known
    questions got "I don't know". When the line recall put first answers the question (the
    check's yes at answerable.RESCUE_THRESHOLD) she is not sure and quotes it; when it does
    not, her admission is shown whole."""
    mem.save("Жена — Гульнара, бухгалтер. Дочке Алсу 9 лет, ходит на гимнастику.", OWNER_TRUSTED)
    llm = CheckingLLM([["Этого я не знаю. ", "Расскажешь?"]], yes_for="Алсу")
    reply, done = ask(Conversation(mem, llm), "Сколько лет моей дочке?")
    assert reply.startswith("Точно не знаю") and "Дочке Алсу 9 лет" in reply
    assert [c.purpose for c in done.calls] == ["reply", "check"]
    # the line does not answer: her own admission, whole
    llm = CheckingLLM([["Этого я не знаю. ", "Расскажешь?"]], yes_for="never")
    reply, done = ask(Conversation(mem, llm, channel="b"), "Сколько лет моей дочке?")
    assert reply == "Этого я не знаю. Расскажешь?"
    assert [c.purpose for c in done.calls] == ["reply", "check"]
    # … and a line the check puts just under the bar is not quoted
    llm = CheckingLLM(
        [["Этого я не знаю."]], yes_for="Алсу", yes=answerable.RESCUE_THRESHOLD - 0.01
    )
    reply, _ = ask(Conversation(mem, llm, channel="c"), "Сколько лет моей дочке?")
    assert reply == "Этого я не знаю."


def test_an_answer_that_did_not_stand_gives_way_to_the_recalled_line_that_answers(mem):
    """An answer drawn on a line that does not say it (here a core line) does not stand; when
    the line recall put first is another one, and it answers, she quotes that one. The same
    line is never asked twice."""
    mem.save("My partner Jonno runs a lot, five marathons.", OWNER_TRUSTED, kind="core")
    mem.save("I stopped running after my knee op in January, switched to swimming.", OWNER_TRUSTED)
    question = "Do I still go running?"
    recalled = mem.prompt_section(question, OWNER_TRUSTED).recalled_contents
    assert recalled[0].startswith("I stopped running")  # Jonno's line is core
    llm = CheckingLLM([["You run marathons with Jonno. ", "Great!"]], yes_for="knee")
    reply, done = ask(Conversation(mem, llm), question)
    assert reply.startswith("I'm not sure") and "knee op" in reply
    assert [c.purpose for c in done.calls] == ["reply", "check", "check"]
    assert "Jonno" in llm.checked[0] and "knee" in llm.checked[1]
    # the answer drew on the first recalled line itself: it is not asked again (the core line
    # is, and does not answer)
    llm = CheckingLLM([["You stopped running in January. ", "Swim!"]], yes_for="never")
    reply, done = ask(Conversation(mem, llm, channel="b"), question)
    assert reply == DONT_KNOW["en"]
    assert [c.purpose for c in done.calls] == ["reply", "check", "check"]
    assert "knee" in llm.checked[0] and "Jonno" in llm.checked[1]


def test_her_i_dont_know_gives_way_to_the_core_line_that_answers(mem):
    """Owner session (default model): "What's my job?" got "I don't know that: there is
    nothing about it in my memory" while her introduction, kept as core, said "Я Марина,
    работаю фармацевтом в Туле." Recall never brings a core line, so the rescue asks the core
    lines too, after the line recall put first; a core line under the bar is not quoted."""
    mem.save("Я Марина, работаю фармацевтом в Туле.", OWNER_TRUSTED, kind="core")
    mem.save("My daughter Sasha is 7 and does ballet on Saturdays.", OWNER_TRUSTED)
    question = "What's my job?"
    assert mem.prompt_section(question, OWNER_TRUSTED).recalled_contents == ()
    llm = CheckingLLM([["I don't know. ", "Will you tell me?"]], yes_for="фармацевтом")
    reply, done = ask(Conversation(mem, llm), question)
    assert reply.startswith("I'm not sure") and "фармацевтом в Туле" in reply
    assert [c.purpose for c in done.calls] == ["reply", "check"]
    assert "фармацевтом" in llm.checked[0]
    llm = CheckingLLM(
        [["I don't know. ", "Will you tell me?"]],
        yes_for="фармацевтом",
        yes=answerable.RESCUE_THRESHOLD - 0.01,
    )
    reply, done = ask(Conversation(mem, llm, channel="b"), question)
    assert reply == "I don't know. Will you tell me?"
    assert [c.purpose for c in done.calls] == ["reply", "check"]


def test_the_core_line_she_quotes_is_never_a_private_one_to_another_audience(mem):
    """§2 privacy with the rescue's core lines: they come from the memory section the turn's
    audience was given, so a private core line is never asked about or quoted in a public turn,
    while the owner, in a trusted turn, gets it."""
    mem.save("Я Марина, работаю фармацевтом в Туле.", OWNER_TRUSTED, kind="core", private=True)
    question = "What's my job?"
    llm = CheckingLLM([["I don't know. ", "Will you tell me?"]], yes_for="фармацевтом")
    events = list(Conversation(mem, llm, channel="pub").turn(question, PUBLIC))
    shown = "".join(e.text for e in events if isinstance(e, Token))
    assert "фармацевт" not in shown and "Марина" not in shown
    assert not any("фармацевтом" in c for c in llm.checked)
    llm = CheckingLLM([["I don't know. ", "Will you tell me?"]], yes_for="фармацевтом")
    reply, _ = ask(Conversation(mem, llm), question)
    assert "фармацевтом в Туле" in reply
