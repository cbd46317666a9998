"""Never show markup to the owner (issue 9, SPEC §3.1): what a small model leaks into a reply —
``<tools>``, ``<tool_call>…</tool_call>``, ``<|im_end|>``, a raw JSON call — is cut from the
stream before the owner sees it, and a reply that only repeats the owner's message is held back
so the turn can try again.

Both filters work on a stream of text pieces: :meth:`feed` returns what may be shown now,
:meth:`finish` the rest. They hold back only what may still turn out to be markup (or an echo).
"""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher

from core.language import RUSSIAN, detect, is_question, word_counts
from core.text import CYR2LAT, LAT2CYR, name_stems, numbers, stems, transliterate

# Blocks dropped whole, with what is inside them.
BLOCK_TAGS = ("tool_call", "tools", "tool_response", "function_call", "think")
_OPENERS = tuple(f"<{t}>" for t in BLOCK_TAGS)
_CLOSERS = tuple(f"</{t}>" for t in BLOCK_TAGS)
_SPECIAL = re.compile(r"<\|[a-z_]{1,20}\|>")
_MAX_TAG = max(len(t) for t in _OPENERS + _CLOSERS)
ECHO_SIMILARITY = 0.8  # a reply this similar to the owner's message is an echo
COPIED = 0.85  # … and so is one whose characters nearly all come from the message


def _json_call(text: str) -> bool:
    """A JSON object that is a tool call or a memory plan, not words for the owner."""
    t = text.strip().strip("`").removeprefix("json").strip()
    try:
        value = json.loads(t)
    except ValueError:
        return False
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        value = value[0]
    return isinstance(value, dict) and bool(
        {"name", "arguments"} <= value.keys() or "ops" in value or "tool" in value
        or "function" in value)


class MarkupFilter:
    """Cuts tool/chat-template markup out of a streamed reply."""

    def __init__(self) -> None:
        self._buf = ""
        self._inside: str | None = None  # the closing tag we are dropping text up to
        self._line_start = True  # the next character begins a line (a JSON call may start)

    def feed(self, piece: str) -> str:
        self._buf += piece
        return self._drain(final=False)

    def finish(self) -> str:
        return self._drain(final=True)

    def _drain(self, final: bool) -> str:
        out: list[str] = []
        buf = self._buf
        while buf:
            if self._inside is not None:
                j = buf.find(self._inside)
                if j < 0:  # drop all but a tail that may be the start of the closing tag
                    keep = 0 if final else min(len(buf), len(self._inside) - 1)
                    buf = buf[len(buf) - keep:]
                    break
                buf = buf[j + len(self._inside):]
                self._inside = None
                continue
            if self._line_start:
                stripped = buf.lstrip(" \t")
                if not stripped:
                    if final:
                        out.append(buf)
                        buf = ""
                    break
                if stripped[0] in "{[" or stripped.startswith("```json"):
                    end = json_end(stripped)
                    if end is None and not final:
                        break  # still arriving
                    candidate = stripped if end is None else stripped[:end]
                    if _json_call(candidate):
                        buf = stripped[len(candidate):]
                        continue
                self._line_start = False
            lt = buf.find("<")
            nl = buf.find("\n")
            if lt < 0:
                if nl >= 0:
                    out.append(buf[: nl + 1])
                    buf = buf[nl + 1:]
                    self._line_start = True
                    continue
                out.append(buf)
                buf = ""
                break
            if 0 <= nl < lt:
                out.append(buf[: nl + 1])
                buf = buf[nl + 1:]
                self._line_start = True
                continue
            out.append(buf[:lt])
            buf = buf[lt:]
            tag = self._match_tag(buf)
            if tag is None:  # could still become a tag: wait for more
                if final:  # the reply ended inside it: a cut tag ("</tools") is markup too
                    if len(buf) < 3:
                        out.append(buf)
                    buf = ""
                break
            if tag == "":  # not markup: an ordinary "<"
                out.append("<")
                buf = buf[1:]
                continue
            buf = buf[len(tag):]
            if tag in _OPENERS:
                self._inside = "</" + tag[1:]
        self._buf = buf
        return "".join(out)

    @staticmethod
    def _match_tag(buf: str) -> str | None:
        """The markup tag at the start of ``buf``; "" when it is no tag; None when undecided."""
        m = _SPECIAL.match(buf)
        if m:
            return m.group(0)
        for t in _OPENERS + _CLOSERS:
            if buf.startswith(t):
                return t
        head = buf[: _MAX_TAG + 22]
        if any(t.startswith(head) for t in _OPENERS + _CLOSERS):
            return None
        if head.startswith("<|") and "|>" not in head and len(head) < 24 and re.fullmatch(
                r"<\|[a-z_]*\|?", head):
            return None
        return ""


def json_end(text: str, start: int = 0) -> int | None:
    """Index just past the JSON object/array (or ```json fence) that starts at ``text[start]``
    (string-aware bracket balance), or None while it is still open."""
    if text.startswith("```", start):
        j = text.find("```", start + 3)
        return None if j < 0 else j + 3
    depth = 0
    in_str = esc = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


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
    r"i can't|i cannot|i'm unable|i am unable|я не могу|не могу)", re.IGNORECASE)
# … and says it cannot go on in its first sentence
_REFUSAL = re.compile(
    r"(не могу|не в состоянии|не имею возможности|не буду)\s+(\w+\s+)?(продолж|участв|помоч|"
    r"обсужд|ответ|выполн|говорить|поддерж|предостав|дать|сказать|рассказ)|"
    r"(can't|cannot|can not|won't|unable to|not able to)\s+(\w+\s+)?(help|assist|continue|"
    r"engage|discuss|provide|answer|comply|participate|talk)", re.IGNORECASE)
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
    "i i'm i've i'd i'll me my mine myself")
_SECOND_TEXT = (
    "ты тебя тебе тобой тобою твой твоя твоё твое твои твоего твоей твоему твоим твоих твою "
    "твоём твоем твоими вашу вашем вашими вы вас "
    "вам вами ваш ваша ваше ваши вашего вашей вашему вашим ваших you you're you've you'd "
    "you'll your yours yourself yourselves u")
_FIRST_PERSON = frozenset(_FIRST_TEXT.split())  # closed word classes, not a list of facts
_SECOND_PERSON = frozenset(_SECOND_TEXT.split())
# a reply that says it does not know, or that the owner has not told it (then a question back)
_ADMITS = re.compile(
    r"не знаю|не помню|не уверен|не говорил|не рассказыв|не упомина|нет (информации|данных|"
    r"сведений)|не в курсе|понятия не имею|нет в (моей )?памяти|не сохран|"
    r"don't know|do not know|not sure|no idea|don't remember|do not remember|don't recall|"
    r"can't recall|can't remember|haven't (told|mentioned|shared|said)|"
    r"didn't (tell|mention|share|say)|never (told|mentioned)|not in my memory|"
    r"don't have (that|this|any (information|info|record))|no information", re.IGNORECASE)
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
    return bool(_ADMITS.search(text.replace("\u2019", "'"))) or text.rstrip(
        " )»\"'").endswith("?")


def speaks_as_owner(text: str) -> bool:
    """Eva's own voice where the owner's belongs: the text is in the first person singular and
    never addresses the owner ("Мне 12 лет.", "I am learning Russian.")."""
    w = _words(text)
    return bool(w & _FIRST_PERSON) and not w & _SECOND_PERSON


def _support_stems(support: str) -> set[str]:
    other = " ".join(transliterate(w) for w in support.lower().split())
    return set(stems(support)) | set(stems(other))


_MONTH_WORDS = (r"(january|february|march|april|may|june|july|august|september|october|"
                r"november|december|январ\w*|феврал\w*|март\w*|апрел\w*|ма[йяе]\w*|июн\w*|"
                r"июл\w*|август\w*|сентябр\w*|октябр\w*|ноябр\w*|декабр\w*)")
_DAY_OF = re.compile(r"\b([0-3]?\d)(?:st|nd|rd|th|-?го|-?е)?\s+(?:of\s+)?" + _MONTH_WORDS
                     + r"|" + _MONTH_WORDS + r"\s+([0-3]?\d)(?:st|nd|rd|th)?\b", re.IGNORECASE)


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


def unsupported(text: str, support: str) -> list[str]:
    """The numbers and names ``text`` states that ``support`` (what the turn was shown: memory,
    summaries, the owner's messages) does not hold — a name in either script. A day of a month
    the support names is not counted (:func:`_days_of_shown_months`)."""
    days = _days_of_shown_months(text, support)
    out = sorted(n for n in numbers(text) - numbers(support)
                 if re.sub(r"\D", "", n) not in days)
    known = _support_stems(support)
    for group in name_stems(text):
        if not group & known:
            out.append(min(group))
    return out


def invents(text: str, support: str) -> bool:
    """A reply (its first sentence) to a question about the owner invents: it admits nothing
    and states an unsupported number or name, or speaks of the owner's life as Eva's own."""
    if admits_not_knowing(text):
        return False
    return speaks_as_owner(text) or bool(unsupported(text, support))


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (all of it when none ends)."""
    t = text.strip()
    m = _SENTENCE_END.search(t)
    return t[: m.end()].strip() if m else t


class EchoHold:
    """Holds the start of a reply back while it reads like the owner's own message; releases
    it the moment it diverges. A reply that ends while still held is an echo, never shown.

    With ``lang`` set, a start in the other language is held too (``wrong_language``): the turn
    stops that reply and asks again, before the owner has seen a word of it."""

    MIN_HELD = 30  # characters: an echo often opens with a greeting of its own ("Hello! I'm…")

    def __init__(self, message: str, lang: str | None = None,
                 also: list[str] | None = None, earlier: list[str] | None = None,
                 support: str | None = None) -> None:
        self.message = _norm(message)
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
        self.support = (support if support is not None and asks_about_owner(message, support)
                        else None)
        self.invented = False
        self.claims: list[str] = []  # the numbers and names an invented reply made up

    def feed(self, piece: str) -> str:
        if self.released:
            return piece
        self._held += piece
        if (self._language_undecided() or self.wrong_language or self._could_refuse()
                or self._could_echo() or self._could_invent()):
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
        self.invented = invents(first, self.support)
        self.claims = unsupported(first, self.support) if self.invented else []
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
        if len(mine.split()) >= 3 and not brings_news(reply, self._said) and any(
                _copied(mine, p) >= COPIED
                for p in (*self._pieced, *(f"{self.message} {a}" for a in self.also))):
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
        if not self.released and self.lang is not None and out.strip() and (
                not self.wrong_language):  # a start judged in the other language stays so:
            # the turn stopped it there (what arrived after was never generated); a whole
            # reply as much in one language as in the other is let through
            self.wrong_language = bool(self._mostly_other(out))
        return out


_MIXED_WORD = re.compile(r"\w+", re.UNICODE)


def _is_cyr(ch: str) -> bool:
    return "\u0400" <= ch <= "\u04ff"


def _convert(ch: str, table: dict[str, str]) -> str:
    low = ch.lower()
    if low not in table:
        return ch
    out = table[low]
    return out[:1].upper() + out[1:] if ch != low else out


def fix_mixed_word(word: str) -> str:
    """A word spelled half in Latin, half in Cyrillic ("Bubлик", "Araхис" — the default model
    does this when it answers in one language about a memory in the other) is written in the
    script most of its letters use (Cyrillic on a tie)."""
    cyr = sum(_is_cyr(c) for c in word)
    lat = sum(c.isascii() and c.isalpha() for c in word)
    if not cyr or not lat:
        return word
    if cyr >= lat:
        return "".join(_convert(c, LAT2CYR) if c.isascii() else c for c in word)
    return "".join(_convert(c, CYR2LAT) if _is_cyr(c) else c for c in word)


class ScriptFixer:
    """Streams text through :func:`fix_mixed_word`, holding back only a word still arriving."""

    def __init__(self) -> None:
        self._tail = ""

    def feed(self, piece: str) -> str:
        text = self._tail + piece
        cut = len(text)
        while cut > 0 and (text[cut - 1].isalnum() or text[cut - 1] == "_"):
            cut -= 1
        self._tail = text[cut:]
        return _MIXED_WORD.sub(lambda m: fix_mixed_word(m.group(0)), text[:cut])

    def finish(self) -> str:
        out, self._tail = self._tail, ""
        return _MIXED_WORD.sub(lambda m: fix_mixed_word(m.group(0)), out)


# A reply that announces itself before saying anything: measured on the default model, "Вот
# ответ на ваш вопрос по-русски:\n\nНа что я сейчас коплю деньги?" — the announcement slipped
# past the echo hold, and the owner's own question followed it as the "answer".
# Each head: words in order; "?" marks an optional word; the last word names the answer. A head
# may open with a word of assent (seen as the owner: "Конечно, вот ответ по-русски:\n\n«Вот что
# я слышал: …»" — the assent hid the announcement).
_ASSENT = "?конечно|хорошо|ладно|sure|okay|ok|certainly|alright"
_HEADS_BARE = (
    ("вот", "?мой|наш|и", "ответ"),
    ("мой", "ответ"),
    ("ответ",),
    ("here's|here’s", "?my|the|your", "answer|reply|response"),
    ("here", "is", "?my|the|your", "answer|reply|response"),
    ("my", "answer|reply|response"),
    ("answer|reply|response",),
    # a restatement announced: "Вот что я понял: между нами коплю на квартиру…", "Вот что вы
    # написали: Я учитель физики…" (measured on the default model) — the owner's words follow,
    # and the echo hold must see them bare
    ("вот", "что", "я", "понял|поняла"),
    ("вот", "что", "вы|ты", "написали|написал|написала|сказали|сказал|сказала"),
    ("here's|here’s", "what", "i", "understood|heard"),
    ("here", "is", "what", "i", "understood|heard"),
    ("here's|here’s", "what", "you", "wrote|said|told"),
    ("here", "is", "what", "you", "wrote|said|told"),
)
_HEADS = tuple((_ASSENT, *head) for head in _HEADS_BARE)
MAX_ANNOUNCE = 100  # characters an announcement may take before its colon or line break


def _bare_words(text: str) -> list[str]:
    """The words of ``text``, lower-case, without the punctuation around them."""
    words = (re.sub(r"^[^\w’']+|[^\w’']+$", "", w.lower()) for w in text.split())
    return [w for w in words if w]


def _head_state(words: list[str], partial: bool) -> str:
    """"no" (not an announcement), "maybe" (could still become one) or "head" (the words
    open with a whole head: an announcement if a colon or line break follows soon)."""
    best = "no"
    for head in _HEADS:
        i = 0
        state = "maybe"
        for k, w in enumerate(words):
            last = partial and k == len(words) - 1
            while i < len(head):
                opt = head[i].startswith("?")
                options = head[i].lstrip("?").split("|")
                if any((o.startswith(w) if last else o == w) for o in options):
                    i += 1
                    break
                if not opt:
                    state = "no"
                    break
                i += 1
            else:
                state = "head" if not last else "maybe"  # words beyond a complete head
                break
            if state == "no":
                break
        else:
            if i == len(head) and not partial:
                state = "head"
        if state == "head":
            return "head"
        if state == "maybe":
            best = "maybe"
    return best


class PreambleFilter:
    """Drops an opening that only announces the reply ("Вот ответ на ваш вопрос:", "Here's my
    answer:"), so what follows is judged (and shown) as the reply. Holds the start back only
    while it could still be such an announcement, so other replies stream at once."""

    def __init__(self) -> None:
        self._held = ""
        self._done = False
        self._trim = False  # an announcement was dropped: drop the blank space after it too

    def feed(self, piece: str) -> str:
        if self._done:
            if self._trim:
                piece = piece.lstrip()
                self._trim = not piece
            return piece
        self._held += piece
        return self._decide(final=False)

    def _decide(self, final: bool) -> str:
        text = self._held
        if not _bare_words(text) and not final:
            return ""  # nothing to judge yet
        partial = bool(text) and not text[-1].isspace() and not final
        # judge only the words before the first colon or line break
        cut = re.search(r"[:\n]", text)
        head_words = _bare_words(text[:cut.start()] if cut else text)
        state = _head_state(head_words, partial and cut is None) if head_words else "no"
        if state == "head" and cut is not None and cut.start() <= MAX_ANNOUNCE:
            out, self._held, self._done = text[cut.end():].lstrip(), "", True
            self._trim = not out
            return out
        if not final and cut is None and len(text) <= MAX_ANNOUNCE and state != "no":
            return ""
        out, self._held, self._done = text, "", True
        return out

    def finish(self) -> str:
        if self._done:
            return ""
        return self._decide(final=True)
