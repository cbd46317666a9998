"""What the memory step reads in the owner's message (SPEC §3.1), before any model call.

- A request: to forget something, to remember it, a correction of something already known, a
  secret (word stems, at word starts).
- Whether the message may carry a fact at all: a sentence that is not a question, greeting or
  thanks (:func:`fact_sentences`), and a trained classifier over the message's USE vectors
  (:class:`FactGate`, ``fact_gate.json``) — :func:`may_carry_a_fact`.
- :class:`Exchange`: all of it computed once per message, and the owner's own words a memory
  must keep (:meth:`Exchange.grounded`, :meth:`Exchange.span`, :func:`whole_statement`).

Pure: no store, no model. The step itself is :mod:`core.chat.memory_writer`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from core import text
from core.learned import Embed, Thresholded, sentences

# The owner corrects something, asks to forget or to remember, says it is a secret. Stems,
# matched at word starts.
_CORRECTION = re.compile(
    r"\b(now|moved|no longer|not anymore|anymore|actually|instead|changed|switched|turned out|"
    r"теперь|сейчас|переехал|переехала|переехали|больше не|уже не|на самом деле|вместо|"
    r"поменял|сменил|оказалось|перенес|перенёс|передумал)",
    re.IGNORECASE,
)
_FORGET = re.compile(
    r"\b(forget|delete|erase|remove|unlearn|don'?t remember|забуд|удали|сотри|стереть|"
    r"не помни|не запоминай|выкинь из памяти)",
    re.IGNORECASE,
)
_REMEMBER = re.compile(
    r"\b(remember that|remember:|please remember|remember,|запомни|"
    r"запиши|не забудь|note that|keep in mind)",
    re.IGNORECASE,
)
_SECRET = re.compile(
    r"\b(secret|private|between us|between you and me|just between|keep (?:it|this) to yourself|"
    r"don'?t tell|секрет|тайн|между нами|никому не|приватн|личное|только тебе)",
    re.IGNORECASE,
)


def asks_to_forget(text: str) -> bool:
    return bool(_FORGET.search(text))


# where the clause that asks ends: a stop, or a comma that does not go on with "and …"
# ("Забудь про гончарные курсы, и про корги тоже" names both)
_CLAUSE_END = re.compile(
    r"[.;:!?()\n—–]| - |,(?!\s*(?:and|or|as well|и|или|а также)\b)", re.IGNORECASE
)


def forget_object(text: str) -> str:
    """What a request to forget names: its words from the asking word to the end of that
    clause ("Actually forget the bike thing, I returned it to the shop." -> "the bike thing";
    the shop is why, not what). Empty when the clause names nothing after the word ("Forget
    it, …", "Забудь, что …") or nothing asks to forget."""
    m = _FORGET.search(text)
    if m is None:
        return ""
    rest = re.sub(r"^\w*", "", text[m.end() :])  # the rest of the asking word ("забуд|ь")
    end = _CLAUSE_END.search(rest)
    return (rest if end is None else rest[: end.start()]).strip()


def corrects(text: str) -> bool:
    """The message changes something already known ("Lena moved to Yerevan", "теперь я…")."""
    return bool(_CORRECTION.search(text))


def asks_to_remember(text: str) -> bool:
    """ "Запомни…", "remember that…" — a request, not a question ("what do you remember?")."""
    return bool(_REMEMBER.search(text)) and not text.rstrip().endswith("?")


def says_secret(text: str) -> bool:
    return bool(_SECRET.search(text))


# Stage 1, whether the message can carry something to keep, is decided in the core. Measured on
# the default 1.5B model over 37 labelled RU/EN messages: asked for a plan it answered
# {"ops": []} to everything or copied its example into every plan; asked "is it only small
# talk?", its yes/no probabilities for facts and for small talk overlapped. The keyword gate that
# followed (first person, a name or a number; no weather or mood stems) was fitted to one
# scenario: on the labelled set of issue 26 (dev) it let through 0.78 of the messages with a
# fact ("ветеринаром" began with "ветер", "Марк записался…" has no first person). Chosen by the
# set's numbers instead (bench.memory_step --gate-only, bench/train_fact_gate.py): a sentence
# that is not a question, greeting or thanks (says_something), and a classifier over the
# message's USE vector (FactGate). The model then decides what to keep.
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
# words that only greet, thank or laugh (a sentence of these and stop words says nothing)
_CHATTER = re.compile(
    r"(привет\w*|здравствуй\w*|добр\w*|хай|пока|спасибо|благодар\w*|(ха)+|(хе)+|ок|окей|ладно|"
    r"угу|ага|ого|hi|hello|hey|thanks|thank|(ha)+|lol|ok|okay|bye|good|morning|night|evening|"
    r"cool|nice|wow)",
    re.IGNORECASE,
)
EVA_NAMES = frozenset({"ева", "eva", "евочка"})  # her own name, said to her


def _said_words(sentence: str) -> list[str]:
    """The words of ``sentence`` beyond greetings, thanks, laughter and Eva's name."""
    return [
        w
        for w in _WORD.findall(sentence)
        if not _CHATTER.fullmatch(w) and w.lower() not in EVA_NAMES
    ]


def fact_sentences(message: str) -> list[str]:
    """The sentences of a message that may tell something lasting: not a question, with words
    beyond the stop words, greetings, thanks, laughter and Eva's name ("hello, I'm Oleg" does
    tell something)."""
    out = []
    for s in sentences_of(message):
        if s.endswith("?"):
            continue
        said = _said_words(s)
        if any(not text.is_stopword(w.lower()) for w in said) and not _addresses(s, said):
            out.append(s)
    return out


def _addresses(sentence: str, said: list[str]) -> bool:
    """A greeting or a thanks to someone by name ("Hey Gina!", "Thanks, Gina!", "Привет,
    Маша!"): every word but one is chatter, and that one is a name. Counted as a fact sentence,
    it was what a save fell back to when the model's words matched no sentence: LoCoMo
    (conversation 1) kept "Hey Gina!" as a memory. "Hello, I'm Oleg" says more than a name."""
    return len(said) == 1 and said[0][:1].isupper() and len(_WORD.findall(sentence)) > 1


def may_carry_a_fact(message: str, embed: Embed | None = None) -> bool:
    """Whether the memory step should ask the model about this message: some sentence says
    something (fact_sentences), and — given the embedder's USE vectors (``embed``, see
    use_vectors) — the trained classifier lets it through. Without vectors only the first part
    decides (a message the gate drops is lost for good; small talk that passes costs one call)."""
    if not fact_sentences(message):
        return False
    gate = fact_gate() if embed is not None else None
    if gate is None:
        return True
    verdict = gate.passes(message, embed)  # type: ignore[arg-type]
    return True if verdict is None else verdict


def sentences_of(message: str) -> list[str]:
    """A message's sentences, as the gate reads them."""
    return sentences(message)


GATE_FILE = Path(__file__).with_name("fact_gate.json")


class FactGate(Thresholded):
    """ "May this message carry a fact?" — a logistic regression over the message's USE vector,
    whole and sentence by sentence (the highest score counts), trained on the dev split of the
    labelled set (bench/train_fact_gate.py; issue 26: chosen by its numbers, the keyword gate
    above missed a fifth of the facts: "ветеринаром" began with the weather stem "ветер"). A
    message the gate drops is lost for good, so its threshold is set for recall; small talk
    that passes costs one model call, and the model may still keep nothing."""

    def passes(self, message: str, embed: Embed) -> bool | None:
        """The gate's answer, or None when no USE vectors can be had (the caller falls back)."""
        return self.above(message, embed)


@functools.cache
def fact_gate() -> FactGate | None:
    """The trained gate, loaded once (None when its file is missing or broken)."""
    return FactGate.load(GATE_FILE)


GROUNDED = 0.7  # share of an update's stems that must come from the owner's message (saves keep
# the owner's own words; at 0.5 the default model's "Конечно, спешу купить квартиру. Отложил уже
# 400 тысяч." for "коплю на квартиру, отложил уже 400 тысяч" passed: 4 of its 7 stems)
# words any memory about the owner may add without inventing anything ("The owner's corgi is
# named Bublik" for "my corgi is Bublik")
_NEUTRAL = frozenset(
    text.stems("owner owner's user name named called владелец владельца пользователь зовут")
)


@dataclass(frozen=True)
class Exchange:
    """What the step reads from the owner's message, computed once per exchange."""

    text: str
    stems: frozenset[str]
    sentences: tuple[str, ...]  # the fact sentences, or the whole message when there are none
    carries_fact: bool  # some sentence says something (see fact_sentences)
    forget: bool  # the owner asks to forget something
    remember: bool  # … or to remember it
    correction: bool  # the message changes something already known
    secret: bool  # the owner says it is a secret

    @classmethod
    def of(cls, owner_text: str) -> Exchange:
        facts = fact_sentences(owner_text)
        return cls(
            owner_text,
            frozenset(text.stems(owner_text)),
            tuple(facts) or (owner_text.strip(),),
            bool(facts),
            asks_to_forget(owner_text),
            asks_to_remember(owner_text),
            corrects(owner_text),
            says_secret(owner_text),
        )

    def grounded(self, content: str, updating: str = "") -> bool:
        """A memory the step writes must come from the owner's words: measured on the default
        model, it otherwise copied its own reply or an earlier message into the memory
        ("Квартира уже куплена" for "коплю на квартиру"). An update may also keep words of the
        record it rewrites (``updating``), as long as it brings some of the owner's new ones:
        "Meeting with the landlord on Friday at 2pm." for "…is at 2, not 4." over "Meeting with
        the landlord on Friday at 4pm." (measured on the labelled set's dev split: refused, and
        the old time stayed live)."""
        mine = set(text.stems(content)) - _NEUTRAL
        if not mine:
            return False
        if not updating:
            return len(mine & self.stems) >= GROUNDED * len(mine)
        theirs = set(text.stems(updating))
        digits = set(re.findall(r"\d+", content)) - set(re.findall(r"\d+", updating))
        if not (mine & (self.stems - theirs) or digits & set(re.findall(r"\d+", self.text))):
            return False  # nothing of the owner's new words
        return len(mine & (self.stems | theirs)) >= GROUNDED * len(mine)

    def words(self, indices: Iterable[int]) -> str:
        """The fact sentences at ``indices``, in the message's order."""
        return " ".join(self.sentences[k] for k in sorted(set(indices)))

    def span(self, content: str) -> tuple[int, int] | None:
        """The first and the last fact sentence a save's ``content`` stands for, or None when
        it shares no word with any of them: the sentence it shares most with, widened to the
        neighbouring sentences that hold what else it says ("У меня есть пёс. Его зовут
        Бублик."), and a one-word span to the sentence after it. A memory is kept in the
        owner's words (:meth:`words`), never in the model's: measured on the default model, its
        rewrites cut "Моя жена Ольга — пианистка" to "Ольга — пианистка", a name to "Дима", "On
        weekends I play chess" to "I play chess", and copied its own reply ("Конечно, спешу
        купить квартиру"). What else of the message a save keeps: :func:`whole_statement`."""
        mine = set(text.stems(content)) - _NEUTRAL
        theirs = [set(text.stems(s)) for s in self.sentences]
        if not any(mine & t for t in theirs):
            return None
        best = max(range(len(theirs)), key=lambda k: len(mine & theirs[k]))
        lo = hi = best
        left = mine - theirs[best]
        while left:
            grown = False
            if lo > 0 and left & theirs[lo - 1]:
                lo -= 1
                left -= theirs[lo]
                grown = True
            if hi + 1 < len(theirs) and left & theirs[hi + 1]:
                hi += 1
                left -= theirs[hi]
                grown = True
            if not grown:
                break
        while hi + 1 < len(theirs) and len(_said_words(" ".join(self.sentences[lo : hi + 1]))) < 2:
            # one word alone is no memory: "Привет. Ильдар. Работаю авиадиспетчером в
            # аэропорту, Казань." was kept as "Ильдар." when the model's save named only him
            # (bench.companion, unseen scenario c: "Where do I work?" had nothing to answer
            # from); the sentence after it tells what the word is about ("Беременна! 12
            # недель, пока никому не говорим.")
            hi += 1
        return lo, hi


def whole_statement(
    spans: dict[int, tuple[int, int] | None], count: int, says: Callable[[int], bool]
) -> dict[int, list[int]]:
    """The fact sentences each save of one plan keeps, by the save's position: its own span
    (:meth:`Exchange.span`), and the sentences of the message no save covers that still say
    something (``says``: the fact gate's score of the sentence alone), each joined to the
    nearest save (the one before it on a tie). A save that shares no word with the message
    (the model's own wording, an earlier memory copied) keeps those uncovered sentences, or the
    first uncovered one when none says anything.

    The model picks which of the owner's sentences to keep, and on long messages it picked a
    fragment: LoCoMo (conversation 0, dev, never tuned on) kept "Seeing how passionate these
    pros were…" of a four-sentence message and lost "Last Friday, I went to an LGBTQ+
    counseling workshop…" (2 of the 35 questions asked it), and a plan that copied an earlier
    memory kept only the first sentence of "Yeah, I'm really lucky to have them. They've been
    there through everything, I've known these friends for 4 years…". Once the model keeps
    something of a message, the owner's other statements in it are not lost; its greetings,
    thanks and reactions ("It was awesome!", "Sounds great, Mel.") stay out by their score."""
    out = {i: list(range(s[0], s[1] + 1)) for i, s in spans.items() if s is not None}
    covered = {k for ks in out.values() for k in ks}
    free = [k for k in range(count) if k not in covered and says(k)]
    unmatched = [i for i, s in spans.items() if s is None]
    if unmatched:
        rest = [k for k in range(count) if k not in covered]
        taken = free or rest[:1] or [0]
        for i in unmatched:
            out[i] = list(taken)
        free = [k for k in free if k not in taken]
    matched = {i: s for i, s in spans.items() if s is not None}
    for k in free:
        if not matched:
            break
        near = min(
            matched,
            key=lambda i: (
                matched[i][0] - k if k < matched[i][0] else k - matched[i][1],
                k < matched[i][0],  # a tie goes to the save before the sentence
                i,
            ),
        )
        out[near].append(k)
    return {i: sorted(ks) for i, ks in out.items()}
