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

from core.chat.invention import (
    PERSONAL,
    addressed,
    admits_not_knowing,
    asks_about_owner,
    asks_about_owners_people,
    bare_kin,
    claim_pending,
    in_first_person,
    last_clause,
    made_up,
    missing_roles,
    only_shown_words,
    owners_marks,
    says_not_knowing,
    self_name,
    takes_owners_life,
)
from core.language import (
    CHOICE,
    RUSSIAN,
    WH,
    detect,
    is_question,
    only_asks,
    reply_instruction,
    word_counts,
)
from core.text import stems

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


# a start that announces a quote: a colon or an opening quotation mark
_QUOTE_OPENED = re.compile(r"[:«“„\"]")

# the words a reply announces itself with ("Вот ваш ответ…", "Here is your reply…")
_ANNOUNCING = frozenset(
    stems(
        "вот ваш твой мой наш ответ ответь конечно хорошо here is your my the answer reply "
        "response sure okay certainly"
    )
)


# a pronoun turned to the other person ("мою маму" → "Ваша мама") is no news
_PERSONAL_STEMS = frozenset(stems(" ".join(PERSONAL)))


def brings_news(reply: str, message: str, *, pronouns: bool = True) -> bool:
    """The reply holds a word (a stem, stop words aside) that the message does not: an answer,
    not an echo of the question. ``pronouns=False``: personal pronouns are no news either
    (measured on an unseen scenario (d) with the default model: "Как зовут мою маму?" got
    "Ваша мама." and it was shown)."""
    new = set(stems(_norm(reply))) - set(stems(_norm(message)))
    return bool(new if pronouns else new - _PERSONAL_STEMS)


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


# a message this long read back at a reply's start is an echo (ReplyJudge.recites)
RECITED_WORDS = 4
MAX_JUDGED = 200  # characters of a first sentence held for the check (then judged as is)


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (all of it when none ends)."""
    t = text.strip()
    m = _SENTENCE_END.search(t)
    return t[: m.end()].strip() if m else t


SHORT_ANSWER = 3  # words: a first sentence shorter than this ("Yes.", "Да.") says little alone


def answer_part(text: str) -> tuple[str, bool]:
    """The part of an answer about the owner that its check reads and shows: the first
    sentence, or the first two when the first is shorter than :data:`SHORT_ANSWER` words ("Yes.
    You are allergic to penicillin."); and whether that part has ended."""
    t = text.strip()
    ends = list(_SENTENCE_END.finditer(t))
    if not ends:
        return t, False
    first = t[: ends[0].end()].strip()
    if len(first.split()) >= SHORT_ANSWER:
        return first, True
    if len(ends) < 2:
        return t, False
    return t[: ends[1].end()].strip(), True


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
        whose: str = "",
        checks_answer: bool = False,
    ) -> None:
        self.message = _norm(message)
        # the other language counts only in a start that says it does not know (a retry: its
        # "I don't know" is said in the owner's language instead; an answer is let through)
        self.admissions_only = admissions_only
        # Eva's own earlier replies in this chat: held while copied, and a copy is a repeat
        self.earlier = [e for e in (_norm(x) for x in earlier or ()) if e]
        # as written, with the live records that say who the support's people are: read only
        # for whose a name is (:func:`core.chat.invention.misattributed`)
        self._said_before = "\n".join([*(earlier or ()), whose])
        self.question = is_question(message)
        # texts that must never be read back either (the note of a retry), treated as the
        # owner's own words
        self.also = [_norm(a) for a in also or () if _norm(a)]
        # the owner's earlier questions that only ask: no support (core.chat.prompt.support),
        # but whom they name by role exists (invention.missing_roles)
        self._presupposed = "\n".join(a for a in also or () if only_asks(a))
        # a note read back with the owner's words after it (or before it), pieced together; the
        # owner's earlier questions are no note: pieced with this one, they made an answer an
        # echo when its one new word was in an earlier question (bench.locomo_qa, default model:
        # "Grandma's gift to Caroline was a necklace." after "What does Caroline's necklace
        # symbolize?", held in two conditions of two runs, then "I don't know")
        self._notes = [_norm(a) for a in also or () if _norm(a) and not only_asks(a)]
        self._pieced = [f"{a} {self.message}" for a in self._notes]
        self._said = " ".join([self.message, *self.also])  # every word a reply may repeat
        # a question only new words can answer: one that asks "what / who / where / how…"
        # and offers no choice ("Anna or Maria?")
        self.asks_what = (
            self.question and bool(WH.search(self.message)) and not CHOICE.search(self.message)
        )
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
        # never invent: the first sentence of an answer about the owner that made up nothing
        # is held until the record it drew on is checked (core.chat.answerable)
        # — only the owner's questions about themself, in the first person, or about one of their
        # people by a name a shown line gives a role (invention.asks_about_owners_people): on
        # LoCoMo (questions about a speaker by name, over narrative lines) the check turned right
        # answers into "I don't know" (conversation 1: memory F1 0.222 -> 0.095, oracle 0.311 ->
        # 0.219)
        self.checks_answer = (
            checks_answer
            and self.support is not None
            and self.question
            and (
                in_first_person(message)
                or bool(bare_kin(message))
                or asks_about_owners_people(message, self.support)
            )
        )
        self.to_check = False
        self.admitted = False  # … or said it does not know: held to its end for the same reason
        # the numbers and names an invented reply made up, and the roles nothing shown names
        self.claims: list[str] = []
        self.recited = False  # a statement's reply opened by reading it back (held for good)
        # a later sentence took the owner's identity for Eva's: the reply ends before it
        self.cut = False
        self._tail = ""  # after the release, words held while a claim may be starting
        self._shown = ""  # what was released of the reply
        # a statement's own names and numbers, which a reply may not claim as Eva's
        self._owners = None if self.question else owners_marks(message)
        # the start took the owner's identity for Eva's (a recital too), and the name the owner
        # gave themself, if any: Eva greets them by it instead (core.chat.retry)
        self.claimed = False
        self.name = None if self.question else self_name(message)

    @property
    def unanswerable(self) -> bool:
        """The question asks about one of the owner's people by a role that nothing the turn
        was shown names (:func:`core.chat.invention.missing_roles`: "What's my dad's job?" with
        no father in memory). Whatever a reply says of them is made up — the judge would hold
        any answer that does not admit it — so no reply is asked for."""
        return self.support is not None and bool(
            missing_roles(self._asked, f"{self.support}\n{self._presupposed}")
        )

    def feed(self, piece: str) -> str:
        if self.released:
            return piece if self._owners is None else self._after_release(piece)
        self._held += piece
        if (
            self.recited
            or self._language_undecided()
            or self.wrong_language
            or self._could_refuse()
            or self._could_take_life()
            or self._could_echo()
            or self._could_recite()
            or self._could_invent()
        ):
            return ""
        if self.recites(self._held):
            self.recited = True
            return ""
        self.released = True
        out, self._held = self._held, ""
        self._shown = out
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
        # an apology for not knowing what the owner has just told her is a refusal too (seen as
        # the owner, default model: "My sister Olga lives in Riga with her dog Baxter." got "I'm
        # sorry, but I don't know about Olga or her dog Baxter.")
        first = _SENTENCE_END.split(held, maxsplit=1)[0]
        self.refused = is_refusal(held) or (not self.question and says_not_knowing(first))
        return self.refused

    def _could_invent(self, final: bool = False) -> bool:
        """The first sentence of a reply about the owner is not complete yet (held), or it is
        and it invents (``invented``: held for good)."""
        if self.support is None:
            return False
        if self.invented or self.to_check or self.admitted:
            return True
        held = self._held.strip()
        if not final and len(held) < MAX_JUDGED and not _SENTENCE_END.search(held):
            return True
        first = first_sentence(held)
        found = made_up(first, self.support, self._asked, self._said_before, self._presupposed)
        self.invented = found is not None
        self.claims = found or []
        # an admission of not knowing is held whole, to its end (it is short): the line recall
        # put first may answer the question, and then Eva quotes it instead
        # (core.chat.answerable.rescue)
        if self.checks_answer and not self.invented and admits_not_knowing(first):
            self.admitted = True
            return True
        # an answer that made up nothing waits for the check of the record it drew on (a short
        # first sentence, with the next one)
        if self.checks_answer and not self.invented:
            ended = answer_part(held)[1]
            if not final and not ended and len(held) < MAX_JUDGED:
                return True
            self.to_check = True
        return self.invented or self.to_check

    def recites(self, reply: str) -> bool:
        """A statement's reply opens by reading the whole message back (nearly all its
        characters, in order, within the reply's first 1.5 lengths of it), whatever follows:
        the owner's life told as Eva's own. Seen in bench.companion on an unseen scenario
        (default model): "Привет! Я Полина, мне 29, работаю логопедом…" came back word for word
        with "Это интересный и полезный момент." after it — past the echo's length, so it was
        shown. A question is not held for it: an answer may restate what it answers."""
        if self.question or len(self.message.split()) < RECITED_WORDS:
            return False
        head = _norm(reply)[: int(1.5 * len(self.message)) + 4]
        return _copied(self.message, head) >= COPIED

    def _could_recite(self) -> bool:
        """A statement's reply whose start, after a few words of its own, goes on copying the
        message from its first words: held while it could still be a recital (:meth:`recites`).
        Seen in bench.companion (unseen scenario d, default model): "Вот что мне предложено:
        «Забудь про укулеле, я бросил после двух уроков." — a preamble of 24 characters, then the
        message read back — was past the echo's hold and shown whole."""
        if self.question or len(self.message.split()) < RECITED_WORDS:
            return False
        sofar = _norm(self._held)
        if len(sofar) > 1.5 * len(self.message) + 4:
            return False
        opening = " ".join(self.message.split()[:3])
        at = sofar.find(opening)
        if at < 0:
            # a start that opened a quote may bring the message next
            return len(sofar) < self.MIN_HELD + 10 + len(opening) and bool(
                _QUOTE_OPENED.search(self._held[: self.MIN_HELD + 10])
            )
        return at <= self.MIN_HELD + 10 and _copied(sofar[at:], self.message) >= COPIED

    def _could_take_life(self) -> bool:
        """A statement's reply that takes the owner's identity for Eva's ("Hello! I'm Callum",
        "мне 67 лет": :func:`core.chat.invention.takes_owners_life`) is a recital, held for
        good; a start that could still become one ("Hello! I'm") waits for the next words."""
        if self._owners is None:
            return False
        if takes_owners_life(self._held, self._owners):
            self.recited = self.claimed = True
            return True
        return len(self._held) < MAX_JUDGED and claim_pending(self._held)

    def _after_release(self, piece: str) -> str:
        """Past the start, a statement's reply is shown as it comes, except the few words after
        an "I'm"/"я"/"my" that may take the owner's identity for Eva's: held until they do not.
        Seen on the memory-step set's introductions (default model): "Привет, Дэн! Спасибо за
        интересную информацию! Я Дэн, работаю баристой…" and "I'm glad you're here, Marcus!
        I'm happy to help you out. I'm a paramedic, 38, married to Jess…" — shown. When they
        do, the reply ends where it stood (``cut``): the rest is not shown."""
        if self.cut:
            return ""
        self._tail += piece
        # read from the start of the clause the shown text ends in (a piece may end mid-word)
        clause = self._shown[last_clause(self._shown) :] + self._tail
        if self._owners is not None and takes_owners_life(clause, self._owners):
            self.cut = True
            self._tail = ""
            return ""
        if len(self._tail) < MAX_JUDGED and claim_pending(clause):
            # only the clause that may be one stays held
            at = last_clause(self._tail)
            out, self._tail = self._tail[:at], self._tail[at:]
        else:
            out, self._tail = self._tail, ""
        self._shown += out
        return out

    def flush(self) -> str:
        """At the end of a shown reply, the words still held after an "I'm" (nothing when the
        reply was cut there)."""
        out, self._tail = ("" if self.cut or not self.released else self._tail), ""
        return out

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

    def reads_instruction(self, reply: str) -> bool:
        """The reply only announces itself in the words of the prompt's language line ("Вот
        ваш ответ по-русски." for "(Ответь по-русски.)"), with nothing of its own besides the
        owner's words: seen twice in one run of bench.companion (unseen scenario, default
        model), shown as the whole reply to "У меня мигрени…" and "Только между нами…"."""
        if self.lang is None:
            return False
        mine = set(stems(_norm(reply)))
        said = set(stems(self.message))
        line = set(stems(reply_instruction(self.lang))) - said
        return bool(line) and line <= mine and mine <= line | said | _ANNOUNCING

    def echoes(self, reply: str) -> bool:
        """The reply echoes the owner's message: ≥ 0.8 similar, or a few words nearly all taken
        from it ("Какой сегодня погода?" for "Какая сегодня погода, как думаешь?"), or it reads
        back the prompt's language line (:meth:`reads_instruction`)."""
        if (
            any(is_echo(reply, a) for a in self.also)
            or self.recited
            or self.recites(reply)
            or self.reads_instruction(reply)
        ):
            return True
        mine = _norm(reply)
        if (
            len(mine.split()) >= 3
            and not brings_news(reply, self._said)
            and any(
                _copied(mine, p) >= COPIED
                for p in (*self._pieced, *(f"{self.message} {a}" for a in self._notes))
            )
        ):
            return True  # the note and the owner's words pieced together (measured: 'The
            # owner wrote in English: "What's my dog's name?"')
        if (
            self.asks_what
            and self.support is not None  # about the owner's life: "Как ты?" → "Привет!" stands
            and stems(mine)
            and not brings_news(
                reply, self.message, pronouns=False
            )  # (an earlier question may hold it)
            and not admits_not_knowing(reply)
        ):
            return True  # a "what / who / how" question given back, the person turned ("Ваша
            # мама." for "Как зовут мою маму?"): it names nothing the question did not
        if self.question and brings_news(reply, self._said):
            return False  # it answers: measured, "Я собираюсь поехать осенью в Japan." for
            # "Куда я собираюсь поехать осенью?" was 0.8 similar, dropped, and the retry empty
        if is_echo(reply, self.message):
            return True
        return len(mine.split()) >= 3 and _copied(mine, self.message) >= COPIED

    def repeats(self, reply: str) -> bool:
        """The reply is one Eva already gave in this chat (≥ 0.8 similar to an earlier one). An
        answer to a question that differs from the earlier reply by a word of this question is
        no copy: "Jon's favorite style of dance is contemporary." after "Gina's favorite style
        of dance is contemporary." (bench.locomo_qa, conversation 1, default model: held as a
        repeat, then "I don't know", though memory held it)."""
        asked = set(stems(self.message)) if self.question else set()
        return any(
            is_echo(reply, e) and not (set(stems(_norm(reply))) - set(stems(e))) & asked
            for e in self.earlier
        )

    def finish(self) -> str:
        """What is still held (the caller decides whether it is an echo). A reply that ended
        while held has its language checked too, however short: measured on the default model,
        "What's my dog's name?" got "Бублик", the memory's own word."""
        if self.released:
            return ""
        if self._held.strip():
            self._could_invent(final=True)
        out, self._held = self._held, ""
        if is_refusal(out):
            self.refused = True
        if (
            self.lang is not None
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
        """The rest of the reply is not wanted: it is in the other language, a refusal, made
        up or a recital of the owner's message, and will be asked again unseen — or it is an
        answer about the owner whose first sentence waits for its check."""
        return (
            self.wrong_language
            or self.refused
            or self.invented
            or self.recited
            or self.cut
            or self.to_check
        )

    def verdict(self, reply: str) -> Verdict:
        """End the hold (:meth:`finish`) and judge the whole ``reply`` (the turn's text so far,
        stripped)."""
        held = self.finish()
        echoed = bool(reply) and self.echoes(reply)
        said_to_owner = ""
        own_voice_only = False
        if self.invented and not self.claims and self.support is not None:
            # only the voice was wrong, and the first sentence is made of the words the turn
            # was shown: that sentence said to the owner (core.chat.invention.addressed), if
            # that way it invents nothing
            first = first_sentence(held or reply)
            own_voice_only = only_shown_words(first, self.support)
            turned = addressed(first)
            if (
                turned
                and own_voice_only
                and made_up(turned, self.support, self._asked, self._said_before, self._presupposed)
                is None
            ):
                said_to_owner = turned
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
            addressed=said_to_owner,
            voice_only=own_voice_only and not said_to_owner,
            claimed=self.claimed,
            name=self.name or "",
            to_check=self.to_check,
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
    # an invented reply whose only fault was the voice, its first sentence said to the owner
    # ("my team" → "your team"): what stands instead of a retry
    addressed: str = ""
    # … and one that could not be said to the owner that way ("Я живу в Калининграде." — the
    # verb's second person would be a guess): the memory's fact in Eva's voice, asked again
    voice_only: bool = False
    # a statement's reply that took the owner's identity for Eva's ("I'm Callum"), and the name
    # the owner gave themself ("" when none)
    claimed: bool = False
    name: str = ""
    # an answer about the owner held until the record it drew on is checked
    # (core.chat.answerable): ``held`` is shown only if the check lets it stand
    to_check: bool = False

    @property
    def greets(self) -> bool:
        """An introduction retold in Eva's voice, unseen: she greets the owner by name."""
        return self.claimed and bool(self.name) and not self.shown


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


def questions_before(window: Sequence[_Said], text: str) -> list[str]:
    """The owner's earlier questions in the live window (other than this message): a reply that
    reads one back is an echo, never an answer — seen in bench.companion on an unseen scenario
    (default model): "Что мы сейчас ремонтируем дома?" got "Как зовут мою жену и откуда она?",
    the owner's question of four turns before, and it was shown. Statements are left out: an
    answer may say again what the owner once told ("Я живу в Казани." → "Ты живёшь в Казани.")."""
    return [
        m.content
        for m in window
        if m.role == "user" and is_question(m.content) and not is_echo(text, m.content)
    ][-MAX_EARLIER:]
