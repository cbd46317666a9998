"""What a turn does about a reply the judge found wanting (SPEC §3.1, §8.10, issue 9, issue 26).

Pure decisions, no model and no store:

- :func:`decide` — a failed reply nothing of which was shown is asked once more, with safer
  sampling and one note (a nudge) chosen by what the reply was; this module owns the notes;
- :func:`settle` — once no retry is left, what the owner gets: the reply as it stands, what the
  judge held back, Eva's own "I don't know" or acknowledgement, or a notice;
- :func:`on_stop` — the owner stopped the reply (Esc): what of it stands.

The judge is :mod:`core.chat.judge`; the turn that asks again is
:class:`core.chat.conversation.Conversation`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from core import language
from core.chat.invention import admits_not_knowing
from core.chat.judge import Kind, Verdict
from core.llm import Message
from core.sleep.candidates import roles
from core.text import roman, stems

# ---------------------------------------------------------------------------- the notes

# After a tool call, an empty reply is asked for once more (small models sometimes fall silent
# after one).
REPLY_NUDGE = "The memory operations are done. Now reply to the owner's message, in their language."
# An empty or echoing reply is tried once more with safer sampling and one of these notes (an
# echoed question is shown back to the model as its own attempt; a statement is quoted instead,
# REFRAME below).
RETRY_NUDGE = "Your reply was empty. Answer the owner's message now, briefly."
# not "The owner wrote in English: …": measured on the default model, that opening came back as
# the reply with the owner's question after it, and the next replies copied the pattern
LANGUAGE_NUDGE = "Your reply must be in {language}."
# for a question "a short warm comment or question" (the note statements had) was itself the
# failure: measured on the default model, an echoed "Куда я собираюсь поехать осенью?" came
# back as "Привет! Как дела?"
QUESTION_ECHO_NUDGE = (
    "You repeated the owner's question instead of answering it. You are Eva, "
    "not the owner. Answer the question now, briefly, from what you remember "
    "about the owner."
)
# measured on the default model: after one generic reply ("Здравствуйте, Дима! Я рад, что у вас
# есть возможность знакомиться. Как дела?") it gave the same words to the next 4 statements, and
# "Как ты?" to 5 more — each copy in the window made the next one likelier
REPEAT_NUDGE = (
    "You already gave that same reply earlier in this chat. Now reply in new "
    "words: a short warm comment or question about what the owner just said."
)
# The retry after an echoed or empty reply to a statement. Measured on the default model, the
# first reply forced to an echo on 16 first messages (8 RU/EN, twice): the echo kept in the
# prompt with a note after it ("You repeated the owner's words as if they were yours … reply in
# your own words: a short warm comment or question") gave 3 echoes or empty replies, and
# answers in the owner's voice ("о моем коте Барсике"); the message quoted as the owner's, 1,
# and most replies addressed the owner by name ("Привет, Оля!", "Hi Tom!").
REFRAME = (
    "The owner just told you: \u00ab{text}\u00bb\n\nThose are the owner's words about "
    "their own life, not yours. Reply to the owner as Eva, in your own words: a short warm "
    "comment or question about what they told you."
)
# a reply to a question about the owner that stated what nothing the turn was shown holds, or
# spoke of the owner's life as Eva's own (core.chat.invention.invents): asked once more, unseen
INVENT_NUDGE = (
    "Your memory does not say that. Answer the owner only from the memory lines "
    'and the conversation, and speak of the owner as "you". If they do not '
    "answer the question, say plainly that you don't know and ask the owner."
)
REFUSAL_NUDGE = (
    "The owner is simply talking with you about their life; there is nothing to "
    "refuse. Reply warmly and briefly to what they said."
)

# ---------------------------------------------------------------------------- Eva's own lines

# … and when the second reply invents too, Eva says she does not know
DONT_KNOW = {
    language.RUSSIAN: "Этого я не знаю: в моей памяти об этом ничего нет. Расскажешь?",
    language.ENGLISH: "I don't know that: there is nothing about it in my memory. Will you "
    "tell me?",
}
CANNED_DONT_KNOW = frozenset(DONT_KNOW.values())
# … unless the held answer drew on a record of the section (:func:`drawn_on`): then she says she
# is not sure and quotes that record as it is kept — the owner's own words, nothing made up.
# Measured (issue 26, default model): a question whose answer the memory held got a made-up name
# beside the right city ("Your aunt's name is Olga, and she lives in Tver." for "Моя тётя Люба
# живёт в Твери…"), and the owner was told there was nothing in her memory.
RECALLED_QUOTE = {
    language.RUSSIAN: "Точно не знаю. Вот что я помню: «{quote}»",
    language.ENGLISH: "I'm not sure. Here is what I remember: “{quote}”",
}
QUOTE_CHARS = 300  # a longer record is quoted up to its last word before this many characters
_QUOTE_LEADS = tuple(line.split("{quote}")[0] for line in RECALLED_QUOTE.values())


def is_dont_know(content: str) -> bool:
    """``content`` is Eva's own "I don't know", plain or with a quoted record."""
    text = content.strip()
    return text in CANNED_DONT_KNOW or text.startswith(_QUOTE_LEADS)


_NUMBER = re.compile(r"\d+(?:[,.\s]\d{3})*(?!\d)")
_NAME = re.compile(r"\b[A-ZА-ЯЁ][a-zа-яё]{2}\b")


def _keys(text: str) -> set[str]:
    """The words of ``text`` as both scripts meet them: stems of four letters or more, by
    their first five Latin letters ("Tver" and "Твери" both give "tver", "Kaliningrad" and
    "Калининграде" "kalin"); names of three letters ("Nan", "Кот"); numbers by their digits
    ("£1,400" and "1400", "20th" and "20 July" meet). Measured on bench.owner_questions (dev,
    default model): 13 of 85 right answers drew on no record without the numbers and short
    names ("9 лет.", "£2,700.", "Your Nan raised you.")."""
    words = {roman(s)[:5] for s in stems(text) if len(s) >= 4 and not any(c.isdigit() for c in s)}
    words |= {roman(w.lower()) for w in _NAME.findall(text)}
    return words | {re.sub(r"\D", "", n) for n in _NUMBER.findall(text)}


def grounding_record(
    held: str, claims: Sequence[str], question: str, records: Sequence[str]
) -> str:
    """The record a held answer to ``question`` drew on: the one sharing most of the words the
    answer added to the question — the made-up ``claims`` left out — or "" when it added none
    that a record holds. Among equals the first (``records`` in recall's order, core last).
    "Your aunt's name is Olga, and she lives in Tver." for "What is my aunt's name and where
    does she live?" added "Olga" (made up) and "Tver": "Моя тётя Люба живёт в Твери…" holds
    Tver. An answer that only restates the question, or adds only what it made up ("Liza's
    husband is Matvay."), drew on nothing: she quotes nothing."""
    added = _keys(held) - _keys(question) - set().union(*(_keys(c) for c in claims))
    best, shared = "", 0
    for record in records:
        n = len(added & _keys(record))
        if n > shared:
            best, shared = record, n
    return best


def drawn_on(verdict: Verdict, asked: Retry | None, question: str, records: Sequence[str]) -> str:
    """The record to quote with her "not sure" (:func:`grounding_record`), or "". Only an answer
    to a question held as made up — a name or number nothing shown holds, or the owner's life in
    Eva's voice ("Radiohead is my favorite band.", "I work as an aviation dispatcher at the
    airport in Kazan.": true, but in her voice and not in the memory's words) — or the memory's
    fact in her voice asked again (``asked``: the retry this reply answered), drew on a record.
    A copy of an earlier reply, an echo, or someone else's line told as the owner's (its claim
    is a role: "husband") drew on none she should quote."""
    made_up = verdict.invented and not roles(" ".join(verdict.claims))
    if not verdict.question or not (made_up or (asked is not None and asked.verdict.voice_only)):
        return ""
    return grounding_record(verdict.reply or verdict.held, verdict.claims, question, records)


def asked_about(verdict: Verdict, question: str, records: Sequence[str]) -> str:
    """The record to quote when a question got no answer at all (its last reply an echo or
    empty, none of it shown): one holding every word of the question (:func:`_keys`: stems,
    names and numbers in either script), or "". Measured on bench.owner_questions (dev, default model):
    "Когда соревнования?" and "Когда выпускной?" were echoed, then echoed or left empty again,
    and the owner got only a notice, while a shown line said "соревнования в Казани 20 апреля".
    A question whose words no shown line holds ("What is the capital of France?") keeps the
    notice (or her plain "I don't know", for one about the owner), and so does one whose words
    a line holds only in part ("Where does Boris live now?" beside "Anna now lives in
    Yerevan."). Among such lines the first (``records`` in recall's order)."""
    v = verdict
    asked = _keys(question)
    if not asked or not v.question or v.shown or not (v.echoed or not v.reply):
        return ""
    return next((r for r in records if asked <= _keys(r)), "")


def quote_line(record: str, lang: str | None) -> str:
    """Eva's "not sure, here is what I remember" with ``record``'s text quoted (one line, cut
    at a word before :data:`QUOTE_CHARS`)."""
    text = " ".join(record.split())
    if len(text) > QUOTE_CHARS:
        text = text[:QUOTE_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:—–-") + "…"
    form = RECALLED_QUOTE.get(lang or "", RECALLED_QUOTE[language.ENGLISH])
    return form.format(quote=text)


# … and when a statement's reply only echoed the owner twice, a short acknowledgement in Eva's
# voice instead of nothing (measured, issue 26: the default model echoed a correction twice on 7
# of 54 labelled statements — "Update: Anna moved again, she now lives in Yerevan." came back
# as "Anna moved again, she now lives in Yerevan." — and the owner saw only a notice)
ACKNOWLEDGE = {
    language.RUSSIAN: "Поняла, спасибо, что рассказываешь мне.",
    language.ENGLISH: "Got it, thank you for telling me.",
}
CANNED_ACKNOWLEDGE = tuple(ACKNOWLEDGE.values())
# … and to an introduction whose reply took the owner's name for Eva's ("Hello! I'm Callum, and
# I'm 44 years old." for "Hi Eva, I'm Callum, 44…"), a greeting by that name at once, not a
# retry. Measured on the memory-step set's test introductions (default model): of 11 first
# replies held so, the retry gave "Привет! Как дела?" 4 times, "Привет, Ева! Как дела?", the
# introduction in the third person or again in Eva's voice 5 times, and a greeting once.
GREETING = {
    language.RUSSIAN: "Приятно познакомиться, {name}! Я всё запомнила.",
    language.ENGLISH: "Nice to meet you, {name}! I'll remember that.",
}
NO_REPLY_NOTICE = (
    "Eva could not find an answer to this message. Try saying it another way, "
    "or press Ctrl+R to regenerate."
)

# ---------------------------------------------------------------------------- asking again


class Form(Enum):
    """Where a retry's note goes in the prompt."""

    # the owner's message quoted as the owner's, inside it (REFRAME): no echo left to copy
    REFRAME = "reframe"
    # the note inside the owner's message, the prompt ending on the owner's turn: measured on
    # companion_b with the default model, after a trailing system note the retry after an
    # invented answer came back empty 5 times in 14 questions
    INSIDE = "inside"
    # a system note after the prompt; an echo or a repeat is shown first as the model's own
    # attempt
    AFTER = "after"


@dataclass(frozen=True)
class Retry:
    """Ask once more: the note the model is given and where it goes."""

    verdict: Verdict  # what the reply asked again was
    note: str
    form: Form

    @property
    def shows_attempt(self) -> bool:
        """The failed reply goes back into the prompt as the model's own attempt."""
        return self.form is Form.AFTER and self.verdict.kind in (Kind.ECHO, Kind.REPEAT)

    @property
    def watches_language(self) -> bool:
        """After a reply in the other language the language is watched again (held while
        wrong), so a second "I don't know" in it is said in the owner's (:func:`settle`)."""
        return self.verdict.wrong_language

    @property
    def watches_admissions(self) -> bool:
        """After a made-up reply only a start saying it does not know is watched for the
        language (seen in bench.companion on an unseen scenario, the default model: "Какой у
        меня любимый фильм?" made up, then "I don't know your favorite movie." shown as is)."""
        return self.verdict.invented and not self.watches_language

    def messages(self, messages: list[Message], text: str) -> list[Message]:
        """The prompt of the retry: ``messages`` (the one the failed reply was written to) with
        the note in its place; ``text`` is the owner's message."""
        if self.form is Form.REFRAME:
            return reframed(messages, text)
        if self.form is Form.INSIDE:
            return noted(messages, self.note)
        out = list(messages)
        if self.shows_attempt:
            out.append({"role": "assistant", "content": self.verdict.reply, "retry": True})
        out.append({"role": "system", "retry": True, "content": self.note})
        return out


def decide(verdict: Verdict, attempt: int, text: str, lang: str | None) -> Retry | None:
    """Whether to ask again after reply number ``attempt`` (1, 2) to the owner's ``text``, and
    with which note. Only the first reply is asked again, only when the owner saw none of it,
    and only when it failed: empty, an echo, a repeat, the other language, a refusal or made up.

    The note answers the first failure of that order. A statement echoed or left unanswered is
    quoted back as the owner's (REFRAME); a question gets RETRY_NUDGE (empty) or
    QUESTION_ECHO_NUDGE (echoed); a made-up reply to a statement is asked again with its note
    inside the owner's message, one to a question is not asked again (settle: she does not know)
    unless its only fault is the voice (:attr:`Verdict.voice_only`)."""
    if verdict.shown or attempt > 1 or verdict.kind is Kind.OK or verdict.addressed:
        return None
    if verdict.greets:
        return None  # she greets the owner by name (settle)
    if verdict.invented and verdict.question and not verdict.voice_only:
        # a question answered with a made-up fact: she says she does not know at once (settle).
        # Asked again, the default model never found the answer: 36 of 36 such retries ended
        # in her "I don't know" (LoCoMo conversations 0 and 1, 4 sessions each, and the unseen
        # scenarios d and e), each a second generation before the owner saw a word. The memory's
        # own fact in Eva's voice is asked again (scenario e: "В каком городе я живу?" got "Я
        # живу в Калининграде." — the right city, and then "I don't know")
        return None
    kind = verdict.kind
    if kind in (Kind.ECHO, Kind.EMPTY) and not verdict.question:
        return Retry(verdict, REFRAME.format(text=text), Form.REFRAME)
    if kind is Kind.WRONG_LANGUAGE:
        nudge = LANGUAGE_NUDGE.format(language=language.NAMES.get(lang or "", ""))
    elif kind is Kind.REFUSAL:
        nudge = REFUSAL_NUDGE
    elif kind is Kind.INVENTED:
        nudge = INVENT_NUDGE
    elif kind is Kind.REPEAT:
        nudge = REPEAT_NUDGE
    else:
        nudge = RETRY_NUDGE if kind is Kind.EMPTY else QUESTION_ECHO_NUDGE
    note = f"{nudge} {language.reply_instruction(lang)}"
    # a made-up start is asked again inside the owner's message, whatever else it was
    return Retry(verdict, note, Form.INSIDE if verdict.invented else Form.AFTER)


# ---------------------------------------------------------------------------- what stands


class Outcome(Enum):
    """What the owner gets once no retry is left."""

    AS_IS = "as is"  # the reply, as it was shown
    ADDRESSED = "addressed"  # the reply's first sentence said to the owner (Verdict.addressed)
    SHOW_HELD = "show held"  # what the judge still held is shown now
    DONT_KNOW = "don't know"  # Eva's own "I don't know" (DONT_KNOW) is the answer
    ACKNOWLEDGE = "acknowledge"  # Eva's own acknowledgement (ACKNOWLEDGE) is the answer
    GREET = "greet"  # Eva's own greeting by the owner's name (GREETING) is the answer
    NO_REPLY = "no reply"  # no answer; the owner is told (NO_REPLY_NOTICE)
    DROP = "drop"  # no answer, nothing said (a stopped reply that was only an echo)


def settle(verdict: Verdict, retry: Retry | None) -> Outcome:
    """What stands of a reply :func:`decide` does not ask again (``retry``: the retry this reply
    answered, if it was one)."""
    v = verdict
    if v.greets:
        return Outcome.GREET
    if v.addressed and not v.shown:
        # the memory's facts in the owner's own words: given back to the owner, not asked again
        return Outcome.ADDRESSED
    if retry is not None and v.repeated and not v.shown:
        # asked again, it copied an earlier reply of the chat again (measured on an unseen
        # scenario: after "Ваша жена Alesya из Минска", the next Russian questions — the dog,
        # the mother, the repairs — got the same line): for a question she says she does not
        # know, for a statement she acknowledges it
        return Outcome.DONT_KNOW if v.question else Outcome.ACKNOWLEDGE
    after_invention = retry is not None and retry.verdict.invented
    if (v.invented and (v.claims or (v.question and not v.shown))) or (
        after_invention and not v.shown and not (v.held and not v.echoed)
    ):
        # asked again, it made a fact up again (or said nothing): she says she does not know
        # (a reply only in the wrong voice is shown: its facts are the memory's, and an answer
        # is not thrown away for grammar)
        return Outcome.DONT_KNOW
    if (
        retry is not None
        and v.wrong_language
        and v.question
        and v.held
        and admits_not_knowing(v.held)
    ):
        # asked again in the owner's language, it said it does not know in the other one again
        # (seen as the owner: "Какой у меня любимый фильм?" got "I don't know what your
        # favorite movie is."): her own words, in hers
        return Outcome.DONT_KNOW
    if v.held and not v.echoed:
        return Outcome.SHOW_HELD
    if (v.held or not v.reply) and retry is not None and (not v.question or v.about_owner):
        # a statement asked twice and still only echoed: she acknowledges it; a question about
        # the owner's life: she says she does not know (measured on the default model: "Сколько
        # мне лет?" echoed, then empty — a notice only)
        return Outcome.DONT_KNOW if v.question else Outcome.ACKNOWLEDGE
    if v.held or not v.reply:
        return Outcome.NO_REPLY
    return Outcome.AS_IS


def on_stop(verdict: Verdict) -> Outcome:
    """The owner stopped the reply: Esc keeps the partial answer, as shown; what the judge held
    is shown too, unless it was an echo (then nothing stands)."""
    if verdict.held and not verdict.echoed:
        return Outcome.SHOW_HELD
    return Outcome.DROP if verdict.held else Outcome.AS_IS


def own_line(outcome: Outcome, lang: str | None, name: str = "", quote: str = "") -> str:
    """Eva's fixed line for ``outcome`` (DONT_KNOW, ACKNOWLEDGE or GREET, by ``name``) in the
    owner's language; DONT_KNOW with the record ``quote`` (:func:`drawn_on`) when there is one."""
    if outcome is Outcome.GREET and name:
        return GREETING.get(lang or "", GREETING[language.ENGLISH]).format(name=name)
    if outcome is Outcome.DONT_KNOW and quote.strip():
        return quote_line(quote, lang)
    lines = DONT_KNOW if outcome is Outcome.DONT_KNOW else ACKNOWLEDGE
    return lines.get(lang or "", lines[language.ENGLISH])


# ---------------------------------------------------------------------------- the retry prompt


def reframed(messages: list[Message], text: str) -> list[Message]:
    """The prompt again with the owner's last message quoted as the owner's (REFRAME; the
    recalled lines and the language line stay): the retry after a statement the reply repeated
    or left unanswered. The message keeps its form under ``original``: the memory step
    continues the prompt as the owner's next turn will carry it."""

    def quote(content: str) -> str:
        head, sep, tail = content.rpartition(text)
        return (
            f"{head}{REFRAME.format(text=text)}{tail}"
            if sep
            else f"{content}\n\n{REFRAME.format(text=text)}"
        )

    return _last_user_rewritten(messages, quote)


def noted(messages: list[Message], note: str) -> list[Message]:
    """The prompt again with ``note`` after the owner's last message, inside it (the message
    keeps its form under ``original``, as :func:`reframed` does)."""
    return _last_user_rewritten(messages, lambda content: f"{content}\n\n{note}")


def _last_user_rewritten(messages: list[Message], rewrite: Callable[[str], str]) -> list[Message]:
    """The prompt with its last user message's content rewritten; the form it had before any
    rewrite is kept under ``original``."""
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i]["role"] == "user":
            content = out[i]["content"]
            out[i] = {
                **out[i],
                "content": rewrite(content),
                "original": out[i].get("original", content),
            }
            break
    return out
