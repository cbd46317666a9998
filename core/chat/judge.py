"""The one judge of a reply (issue 9, SPEC §3.1, §8.10): before the owner sees a word, is the
reply what it should be? :class:`ReplyJudge` holds the start of a streamed reply back while it
could still be one of the failures, and at the end says which it was, as a :class:`Verdict`:

- ``empty`` — nothing came;
- ``echo`` — it repeats the owner's message (or the retry note with the owner's words); an
  answer that repeats the question's words but adds a new one is not an echo;
- ``repeat`` — it copies one of Eva's earlier replies in this chat;
- ``wrong language`` — it is in the other language, however short;
- ``refusal`` — it opens by refusing to go on;
- ``invented`` — asked about the owner's life, it states what nothing the turn was shown holds,
  or tells the owner's life as Eva's own (never invent, §8.10);
- ``ok`` — none of these.

What to do about a verdict is :mod:`core.chat.retry`'s; the filters before the judge are
:mod:`core.chat.filters`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import Enum
from typing import Protocol

from core.language import RUSSIAN, detect, is_question, word_counts
from core.sleep.candidates import ROLES, roles
from core.text import name_stems, numbers, stems, transliterate

ECHO_SIMILARITY = 0.8  # a reply this similar to the owner's message is an echo
COPIED = 0.85  # … and so is one whose characters nearly all come from the message


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _copied(text: str, source: str) -> float:
    """The share of ``text``'s characters found, in order, in ``source`` (both normalised)."""
    m = SequenceMatcher(None, text, source, autojunk=False)
    return sum(b.size for b in m.get_matching_blocks()) / len(text) if text else 0.0


def similarity(a: str, b: str) -> float:
    """0..1, how alike two texts are once case, punctuation and spacing are ignored."""
    a, b = _norm(a), _norm(b)
    if not a or not b:
        return 0.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def brings_news(reply: str, message: str) -> bool:
    """The reply holds a word (a stem, stop words aside) that the message does not: an answer,
    not an echo of the question."""
    return bool(set(stems(_norm(reply))) - set(stems(_norm(message))))


def is_echo(reply: str, message: str) -> bool:
    """The reply repeats the owner's message (≥ 0.8 similar) instead of answering it."""
    return similarity(reply, message) >= ECHO_SIMILARITY


# A refusal opens like this… (measured on the default model: "Извините, но я не могу продолжать
# этот диалог." for "Я учитель физики, работаю в обычной школе.", and the same for a dog's name)
_REFUSAL_START = re.compile(
    r"^\W*(извини|прости|к сожалению|sorry|i'm sorry|i am sorry|i apologi[sz]e|unfortunately|"
    r"i can't|i cannot|i'm unable|i am unable|я не могу|не могу)",
    re.IGNORECASE,
)
# … and says it cannot go on in its first sentence
_REFUSAL = re.compile(
    r"(не могу|не в состоянии|не имею возможности|не буду)\s+(\w+\s+)?(продолж|участв|помоч|"
    r"обсужд|ответ|выполн|говорить|поддерж|предостав|дать|сказать|рассказ)|"
    r"(can't|cannot|can not|won't|unable to|not able to)\s+(\w+\s+)?(help|assist|continue|"
    r"engage|discuss|provide|answer|comply|participate|talk)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?…](\s|$)")
MAX_REFUSAL_HELD = 200  # characters: a first sentence longer than this is not a refusal


def is_refusal(text: str) -> bool:
    """The reply opens with a refusal to go on ("Sorry, I can't continue this conversation")."""
    first = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    return bool(_REFUSAL_START.match(first)) and bool(_REFUSAL.search(first))


# ---------------------------------------------------------------------------- never invent
# SPEC §8.10, issue 26: what Eva says about the owner comes from memory, the summaries or the
# live window. Measured on the default model, for questions nothing remembered answers: "Сколько
# мне лет?" → "Мне 12 лет.", "Какой спорт у моего сына?" → "Спорт у моего сына - футбол.",
# "Which language am I learning these days?" → "I am learning Russian.", "Какая у меня любимая
# книга?" → "Я не люблю никаких книг." Two signs need no word list of facts: the reply names a
# number or a name that nothing the turn was shown holds, or it speaks of the owner's life in
# the first person (Eva's own voice) — the grammar of the answer, not its topic.
_FIRST_TEXT = (
    "я мне меня мной мною мой моя моё мое мои моего моей моему моим моих моею мою моём моем "
    "моими "
    "i i'm i've i'd i'll me my mine myself"
)
_SECOND_TEXT = (
    "ты тебя тебе тобой тобою твой твоя твоё твое твои твоего твоей твоему твоим твоих твою "
    "твоём твоем твоими вашу вашем вашими вы вас "
    "вам вами ваш ваша ваше ваши вашего вашей вашему вашим ваших you you're you've you'd "
    "you'll your yours yourself yourselves u"
)
_FIRST_PERSON = frozenset(_FIRST_TEXT.split())  # closed word classes, not a list of facts
_SECOND_PERSON = frozenset(_SECOND_TEXT.split())
# a reply that says it does not know, or that the owner has not told it (then a question back)
_ADMITS = re.compile(
    r"не знаю|не помню|не уверен|не говорил|не рассказыв|не упомина|нет (информации|данных|"
    r"сведений)|не в курсе|понятия не имею|нет в (моей )?памяти|не сохран|"
    r"don't know|do not know|not sure|no idea|don't remember|do not remember|don't recall|"
    r"can't recall|can't remember|haven't (told|mentioned|shared|said)|"
    r"didn't (tell|mention|share|say)|never (told|mentioned)|not in my memory|"
    r"don't have (that|this|any (information|info|record))|no information",
    re.IGNORECASE,
)
MAX_JUDGED = 200  # characters of a first sentence held for the check (then judged as is)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[\w']+", text.lower().replace("\u2019", "'")))


def asks_about_owner(text: str, support: str = "") -> bool:
    """A question about the owner's own life: "Сколько мне лет?", "Where does my sister
    live?", "What do I do on weekends?" (a question holding the first person singular) — or
    about someone of it the turn was shown by name: "How old is Isla?" when the memory holds
    Isla, the owner's daughter (measured on an unseen scenario: "Isla is 6 years old", an age
    nobody told). A name nothing shown holds (a public figure) leaves the question free."""
    if not is_question(text):
        return False
    if _words(text) & _FIRST_PERSON:
        return True
    rest = support.replace(text, " ") if support else ""  # the question itself holds it
    known = _support_stems(rest) if rest.strip() else set()
    return any(group & known for group in name_stems(text))


def admits_not_knowing(text: str) -> bool:
    """The reply says it does not know, or asks back (it ends with a question mark)."""
    return bool(_ADMITS.search(text.replace("\u2019", "'"))) or text.rstrip(" )»\"'").endswith("?")


# Eva reporting her own memory before what it holds: "I remember that Anna is a doctor in
# Moscow." is her voice about her memory, not the owner's life told as hers (measured on the
# default model, bench.chat: that answer to "What do you remember about my sister?" was judged
# invented, and the retry said "I don't know"). Only the clause goes; a first person after it
# still counts ("I remember that I am learning Russian").
_REPORTS = re.compile(
    r"^\W*(?:as far as i (?:can )?(?:remember|recall|know)|if i (?:remember|recall) (?:correctly|"
    r"right)|i (?:do )?(?:remember|recall|know)|from what i remember|"
    r"насколько я (?:помню|знаю)|если я (?:правильно )?помню|я (?:помню|знаю)|помню)"
    r"(?:,?\s*(?:that|что))?[\s,:]*",
    re.IGNORECASE,
)


def speaks_as_owner(text: str) -> bool:
    """Eva's own voice where the owner's belongs: the text is in the first person singular and
    never addresses the owner ("Мне 12 лет.", "I am learning Russian."). An opening that
    reports Eva's memory ("I remember that …", "Насколько я помню, …") is not counted."""
    w = _words(_REPORTS.sub("", text.strip(), count=1))
    return bool(w & _FIRST_PERSON) and not w & _SECOND_PERSON


def _support_stems(support: str) -> set[str]:
    other = " ".join(transliterate(w) for w in support.lower().split())
    return set(stems(support)) | set(stems(other))


_MONTH_WORDS = (
    r"(january|february|march|april|may|june|july|august|september|october|"
    r"november|december|январ\w*|феврал\w*|март\w*|апрел\w*|ма[йяе]\w*|июн\w*|"
    r"июл\w*|август\w*|сентябр\w*|октябр\w*|ноябр\w*|декабр\w*)"
)
_DAY_OF = re.compile(
    r"\b([0-3]?\d)(?:st|nd|rd|th|-?го|-?е)?\s+(?:of\s+)?"
    + _MONTH_WORDS
    + r"|"
    + _MONTH_WORDS
    + r"\s+([0-3]?\d)(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)


def _days_of_shown_months(text: str, support: str) -> set[str]:
    """Day numbers ``text`` gives with a month the support names ("on 7 May" when a line is
    dated "8 May 2023" and says "yesterday"): a date worked out from a dated memory, not made
    up (measured on LoCoMo: "When did Caroline go to the support group?" was refused)."""
    low = support.lower()
    out = set()
    for m in _DAY_OF.finditer(text):
        day, month = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if month and month.lower()[:3] in low:
            out.add(day)
    return out


# the number of a list item at the start of a line (measured on the default model: "В Грузию
# вы можете взять следующие вещи:\n\n1." — a packing list for "Что мне взять с собой в
# Грузию?" — was judged invented for its "1")
_LIST_MARK = re.compile(r"(?m)^[ \t]*\d{1,2}[.)](?=\s|$)")


def unsupported(text: str, support: str) -> list[str]:
    """The numbers and names ``text`` states that ``support`` (what the turn was shown: memory,
    summaries, the owner's messages) does not hold — a name in either script. A day of a month
    the support names is not counted (:func:`_days_of_shown_months`)."""
    text = _LIST_MARK.sub(" ", text)  # "1." opening a list item states nothing
    days = _days_of_shown_months(text, support)
    out = sorted(n for n in numbers(text) - numbers(support) if re.sub(r"\D", "", n) not in days)
    known = _support_stems(support)
    for group in name_stems(text):
        if not group & known:
            out.append(min(group))
    return out


# A role that covers others: a question about the owner's children is answered by a line about a
# son or a daughter.
_ROLE_COVERS = {"child": frozenset({"son", "daughter"})}
# the owner's own: "my brother", "мою старшую сестру", "у меня дети" (closed word classes)
_MINE = frozenset(
    [
        "my",
        "мой",
        "моя",
        "моё",
        "мое",
        "мои",
        "моего",
        "моей",
        "моему",
        "моим",
        "моих",
        "мою",
        "моём",
        "моем",
        "моими",
    ]
)


def _owners_roles(question: str) -> set[str]:
    """The roles a question names as the owner's own: a role word with "my" (or "у меня")
    among the two words before it. Someone else's ("Melanie's son") is not the owner's: on
    LoCoMo such a role is often missing from the very lines that answer the question."""
    out = set()
    for name, rx in ROLES:
        for m in rx.finditer(question):
            before = [w.strip(".,!?:;«»\"'") for w in question[: m.start()].lower().split()[-3:]]
            pairs = list(zip(before, before[1:], strict=False))
            if _MINE & set(before[-2:]) or ("у", "меня") in pairs:
                out.add(name)
    return out


def missing_roles(question: str, support: str) -> list[str]:
    """The owner's people a question asks about by role ("What is my brother's name?", "Как
    зовут мою маму?") whom nothing else the turn was shown names by that role, in either
    language. Measured on unseen scenarios: with no brother and no mother in memory, the default
    model answered with the husband's and the wife's names — names the support holds, so
    :func:`unsupported` let them pass. Roles and possessives are closed classes of words
    (:data:`core.sleep.candidates.ROLES`), not a list of facts."""
    asked = _owners_roles(question)
    if not asked:
        return []
    shown = set(roles(support.replace(question, " ")))
    shown |= {role for role, parts in _ROLE_COVERS.items() if shown & parts}
    return sorted(asked - shown)


def misattributed(text: str, support: str, question: str) -> list[str]:
    """The names ``text`` gives for one of the owner's people the ``question`` asks about by
    role that every line of the support holding them gives to someone else by role: asked "Как
    зовут мою маму?" with the mother in memory but not her name, the default model answered
    "Ваша мама Alesya." — the wife's name ("My wife Alesya is from Minsk"). A line that names no
    role leaves a name free."""
    asked = _owners_roles(question)
    if not asked:
        return []
    lines = [line for line in support.replace(question, " ").splitlines() if line.strip()]
    out = []
    for group in name_stems(text):
        holding = [line for line in lines if group & _support_stems(line)]
        if holding and all(_others(line, asked) for line in holding):
            out.append(min(group))
    return out


def _others(line: str, asked: set[str]) -> bool:
    """The line names people by role, and none of them is one asked about."""
    named = set(roles(line))
    named |= {role for role, parts in _ROLE_COVERS.items() if named & parts}
    return bool(named) and not named & asked


def invents(text: str, support: str, question: str = "") -> bool:
    """A reply (its first sentence) to a question about the owner invents: it admits nothing
    and states an unsupported number or name, speaks of the owner's life as Eva's own, or
    answers about someone the ``question`` names by role whom nothing shown names
    (:func:`missing_roles`) or with a name the support gives someone else (:func:`misattributed`)."""
    if admits_not_knowing(text):
        return False
    return (
        speaks_as_owner(text)
        or bool(unsupported(text, support))
        or bool(question and missing_roles(question, support))
        or bool(question and misattributed(text, support, question))
    )


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (all of it when none ends)."""
    t = text.strip()
    m = _SENTENCE_END.search(t)
    return t[: m.end()].strip() if m else t


class ReplyJudge:
    """Judges one reply as it streams. Holds its start back while it reads like the owner's own
    message (or an earlier reply of Eva's); releases it the moment it diverges. A reply that
    ends while still held is an echo, never shown.

    With ``lang`` set, a start in the other language is held too (``wrong_language``): the turn
    stops that reply and asks again, before the owner has seen a word of it. So is a start that
    refuses (``refused``) and, for a question about the owner, a first sentence that invents
    (``invented``). :meth:`verdict` ends the hold and says what the whole reply was."""

    MIN_HELD = 30  # characters: an echo often opens with a greeting of its own ("Hello! I'm…")

    def __init__(
        self,
        message: str,
        lang: str | None = None,
        also: list[str] | None = None,
        earlier: list[str] | None = None,
        support: str | None = None,
        admissions_only: bool = False,
    ) -> None:
        self.message = _norm(message)
        # the other language counts only in a start that says it does not know (a retry: its
        # "I don't know" is said in the owner's language instead; an answer is let through)
        self.admissions_only = admissions_only
        # Eva's own earlier replies in this chat: held while copied, and a copy is a repeat
        self.earlier = [e for e in (_norm(x) for x in earlier or ()) if e]
        self.question = is_question(message)
        # texts that must never be read back either (the note of a retry), treated as the
        # owner's own words
        self.also = [_norm(a) for a in also or () if _norm(a)]
        # a note read back with the owner's words after it (or before it), pieced together
        self._pieced = [f"{a} {self.message}" for a in self.also]
        self._said = " ".join([self.message, *self.also])  # every word a reply may repeat
        self.lang = lang
        self._held = ""
        self.released = False
        self.wrong_language = False
        self.refused = False  # the reply opened with a refusal (held, never shown)
        # never invent: for a question about the owner, ``support`` is everything the turn was
        # shown; the first sentence is held until it can be judged (:func:`invents`)
        self.support = (
            support if support is not None and asks_about_owner(message, support) else None
        )
        self._asked = message  # the question as the owner wrote it (roles are read from it)
        self.invented = False
        # the numbers and names an invented reply made up, and the roles nothing shown names
        self.claims: list[str] = []

    def feed(self, piece: str) -> str:
        if self.released:
            return piece
        self._held += piece
        if (
            self._language_undecided()
            or self.wrong_language
            or self._could_refuse()
            or self._could_echo()
            or self._could_invent()
        ):
            return ""
        self.released = True
        out, self._held = self._held, ""
        return out

    def _language_undecided(self) -> bool:
        """True while the start cannot tell its language yet; once it can, ``wrong_language``
        says whether it is the other one. A start is in the other language when most of its
        words are; a tie waits for more words (8 at most, then :func:`detect` judges). Measured
        on the default model: "Аня lives in" (a Russian name, then English) was taken for
        Russian by the whole-message rule (a third Cyrillic), cut there and shown as
        "Аня lives in T". Once judged in the other language, a start stays so."""
        if self.lang is None or self.wrong_language:
            return False
        words = len(self._held.split())
        if words < 3:
            return True
        other = self._mostly_other(self._held)
        if other is None and words < 8:
            return True
        if other is None:
            found = detect(self._held)
            self.wrong_language = found is not None and found != self.lang
        else:
            self.wrong_language = other
        if self.admissions_only and not admits_not_knowing(self._held):
            self.wrong_language = False
        return False

    def _mostly_other(self, text: str) -> bool | None:
        """Most words of ``text`` are in the other language (True), in the owner's (False), or
        as many in each (None)."""
        cyr, lat = word_counts(text)
        own, other = (cyr, lat) if self.lang == RUSSIAN else (lat, cyr)
        return None if own == other else other > own

    def _could_refuse(self) -> bool:
        """The start reads like a refusal whose first sentence has not ended yet (held), or it
        has ended and is one (``refused``: held for good)."""
        if self.refused:
            return True
        held = self._held.strip()
        if not _REFUSAL_START.match(held) or len(held) > MAX_REFUSAL_HELD:
            return False
        if not _SENTENCE_END.search(held):
            return True
        self.refused = is_refusal(held)
        return self.refused

    def _could_invent(self, final: bool = False) -> bool:
        """The first sentence of a reply about the owner is not complete yet (held), or it is
        and it invents (``invented``: held for good)."""
        if self.support is None:
            return False
        if self.invented:
            return True
        held = self._held.strip()
        if not final and len(held) < MAX_JUDGED and not _SENTENCE_END.search(held):
            return True
        first = first_sentence(held)
        self.invented = invents(first, self.support, self._asked)
        self.claims = (
            unsupported(first, self.support)
            + missing_roles(self._asked, self.support)
            + misattributed(first, self.support, self._asked)
            if self.invented
            else []
        )
        return self.invented

    def _could_echo(self) -> bool:
        """The start so far is mostly made of the owner's words (in any order of pieces)."""
        sofar = _norm(self._held)
        if len(sofar) < self.MIN_HELD:
            return True
        for ref in (self.message, *self.also, *self._pieced, *self.earlier):
            if len(sofar) > 1.5 * len(ref) + 4:
                continue  # too long to be ≥ 0.8 similar to it
            if _copied(sofar, ref) >= 0.6:
                return True
        return False

    def echoes(self, reply: str) -> bool:
        """The reply echoes the owner's message: ≥ 0.8 similar, or a few words nearly all taken
        from it ("Какой сегодня погода?" for "Какая сегодня погода, как думаешь?")."""
        if any(is_echo(reply, a) for a in self.also):
            return True
        mine = _norm(reply)
        if (
            len(mine.split()) >= 3
            and not brings_news(reply, self._said)
            and any(
                _copied(mine, p) >= COPIED
                for p in (*self._pieced, *(f"{self.message} {a}" for a in self.also))
            )
        ):
            return True  # the note and the owner's words pieced together (measured: 'The
            # owner wrote in English: "What's my dog's name?"')
        if self.question and brings_news(reply, self._said):
            return False  # it answers: measured, "Я собираюсь поехать осенью в Japan." for
            # "Куда я собираюсь поехать осенью?" was 0.8 similar, dropped, and the retry empty
        if is_echo(reply, self.message):
            return True
        return len(mine.split()) >= 3 and _copied(mine, self.message) >= COPIED

    def repeats(self, reply: str) -> bool:
        """The reply is one Eva already gave in this chat (≥ 0.8 similar to an earlier one)."""
        return any(is_echo(reply, e) for e in self.earlier)

    def finish(self) -> str:
        """What is still held (the caller decides whether it is an echo). A reply that ended
        while held has its language checked too, however short: measured on the default model,
        "What's my dog's name?" got "Бублик", the memory's own word."""
        if not self.released and self._held.strip():
            self._could_invent(final=True)
        out, self._held = self._held, ""
        if not self.released and is_refusal(out):
            self.refused = True
        if (
            not self.released
            and self.lang is not None
            and out.strip()
            and (not self.wrong_language)
            and (not self.admissions_only or admits_not_knowing(out))
        ):  # a start judged in the other language stays so:
            # the turn stopped it there (what arrived after was never generated); a whole
            # reply as much in one language as in the other is let through
            self.wrong_language = bool(self._mostly_other(out))
        return out

    @property
    def stops(self) -> bool:
        """The rest of the reply is not wanted: it is in the other language, a refusal or made
        up, and will be asked again unseen."""
        return self.wrong_language or self.refused or self.invented

    def verdict(self, reply: str) -> Verdict:
        """End the hold (:meth:`finish`) and judge the whole ``reply`` (the turn's text so far,
        stripped)."""
        held = self.finish()
        echoed = bool(reply) and self.echoes(reply)
        repeated = bool(reply) and not echoed and self.repeats(reply)
        return Verdict(
            kind=_kind(
                reply,
                echoed=echoed,
                repeated=repeated,
                wrong_language=self.wrong_language,
                refused=self.refused,
                invented=self.invented,
            ),
            reply=reply,
            held=held,
            shown=self.released,
            question=self.question,
            about_owner=self.support is not None,
            echoed=echoed,
            repeated=repeated,
            wrong_language=self.wrong_language,
            refused=self.refused,
            invented=self.invented,
            claims=tuple(self.claims),
        )


class Kind(Enum):
    """What a whole reply was (:class:`Verdict`)."""

    OK = "ok"
    EMPTY = "empty"
    ECHO = "echo"
    REPEAT = "repeat"
    WRONG_LANGUAGE = "wrong language"
    REFUSAL = "refusal"
    INVENTED = "invented"


@dataclass(frozen=True)
class Verdict:
    """The judge's word on a whole reply. ``kind`` is the one finding a retry answers (the first
    that holds of wrong language, refusal, invented, repeat, echo, empty); the flags are every
    finding, which decide what follows a retry (:func:`core.chat.retry.settle`)."""

    kind: Kind
    reply: str  # the whole reply, stripped
    held: str = ""  # what the judge still held at the end ("" once the reply was shown)
    shown: bool = False  # some of the reply reached the owner: it can no longer be taken back
    question: bool = False  # the owner's message is a question
    about_owner: bool = False  # … about the owner's life: the never-invent check ran (§8.10)
    echoed: bool = False
    repeated: bool = False
    wrong_language: bool = False
    refused: bool = False
    invented: bool = False
    claims: tuple[str, ...] = ()  # the numbers and names an invented reply made up


def _kind(
    reply: str, *, echoed: bool, repeated: bool, wrong_language: bool, refused: bool, invented: bool
) -> Kind:
    if wrong_language:
        return Kind.WRONG_LANGUAGE
    if refused:
        return Kind.REFUSAL
    if invented:
        return Kind.INVENTED
    if repeated:
        return Kind.REPEAT
    if echoed:
        return Kind.ECHO
    return Kind.OK if reply else Kind.EMPTY


MAX_EARLIER = 10  # Eva's last replies in the window that a new reply must not copy


class _Said(Protocol):
    role: str
    content: str


def earlier_replies(window: Sequence[_Said], text: str) -> list[str]:
    """Eva's last replies in the live window, which this reply must not copy — none when the
    owner repeats a message of the window (the same answer is then the right one)."""
    said = [m.content for m in window if m.role == "user"]
    # the same message, not one a word away: "Как зовут мою маму?" after "Как зовут мою
    # жену?" is 0.8 similar, and its answer must not be the wife's again
    if any(is_echo(text, m) and not brings_news(text, m) for m in said):
        return []
    return [m.content for m in window if m.role == "assistant"][-MAX_EARLIER:]
