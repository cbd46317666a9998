"""The language of a message (SPEC §3.1, issue 9): Eva answers in the language the owner wrote in.

Detected per message by script: Cyrillic letters mean Russian, Latin letters English. A message
with no letters (a number, an emoji) has no language of its own and keeps the previous one.
"""

from __future__ import annotations

import re
from functools import lru_cache

RUSSIAN = "ru"
ENGLISH = "en"
NAMES = {RUSSIAN: "Russian", ENGLISH: "English"}


@lru_cache(maxsize=256)  # a save's text is asked for by its columns and by its similar records
def word_counts(text: str) -> tuple[int, int]:
    """Words written in Cyrillic and in Latin letters."""
    cyr = lat = 0
    for word in text.split():
        letters = [ch for ch in word if ch.isalpha()]
        if any("\u0400" <= ch <= "\u04ff" for ch in letters):
            cyr += 1
        elif any(ch.isascii() for ch in letters):
            lat += 1
    return cyr, lat


def detect(text: str, default: str | None = None) -> str | None:
    """``"ru"``, ``"en"``, or ``default`` when the text has no Cyrillic or Latin words. Mixed
    text is Russian when at least a third of its words are Cyrillic: a Russian message quoting
    English names ("Я слушаю Pink Floyd") is Russian, an English one naming a Russian cat
    ("My cat Мурка is ill") is English."""
    cyr, lat = word_counts(text)
    if cyr == 0 and lat == 0:
        return default
    return RUSSIAN if cyr * 2 >= lat else ENGLISH


def reply_instruction(lang: str | None) -> str:
    """The line placed right before generation: small models drift into the language of the
    memory lines or of the persona unless told close to where they start writing."""
    if lang == RUSSIAN:
        return "(Ответь по-русски.)"
    if lang == ENGLISH:
        return "(Reply in English.)"
    return ""


_QUESTION_TEXT = (
    "кто что где когда как какой какая какое какие кем чем куда откуда почему зачем сколько "
    "чей чья чьё чьи ли разве неужели "
    "who what where when how which why whose whom do does did is are am was were can could "
    "will would have has should"
)
_QUESTION_WORDS = frozenset(_QUESTION_TEXT.split())


def is_question(text: str) -> bool:
    """The owner asks something: the message ends with "?", or its last sentence opens with a
    question word ("Где я живу", "what's my dog's name")."""
    t = text.strip()
    if t.endswith("?"):
        return True
    last = t.replace("!", ".").split(".")
    words = next((s.split() for s in reversed(last) if s.strip()), [])
    first = words[0].lower().strip(",:;\"'«»").split("'")[0] if words else ""
    return first in _QUESTION_WORDS


# a question that only new words can answer: "what / who / where / how…", and no choice offered
# ("Anna or Maria?"); read in lower case
WH = re.compile(
    r"\b(what|which|who|whom|whose|where|when|how|why|как\w*|что|чем|чего|кто|кого|кем|где|когда|"
    r"куда|откуда|почему|зачем|сколько|чей|чья|чьё|чьи)\b"
)
CHOICE = re.compile(r"\b(or|или|либо)\b", re.IGNORECASE)
_SENTENCE_BREAK = re.compile(r"[.!?…]\s")


def only_asks(text: str) -> bool:
    """The message is one question that asks for what it names and states nothing: one
    sentence, ending with "?", with a question word and no choice ("В каком городе я живу?",
    "What's my dad's job?"). Never invent (§8.10): such a message of the owner's is no support
    for an answer — on an unseen scenario (e, default model) "Какой у меня любимый фильм?" got
    «Город», a word only the owner's earlier "В каком городе я живу?" held."""
    t = text.strip()
    low = t.lower()
    return (
        t.endswith("?")
        and not _SENTENCE_BREAK.search(t[:-1])
        and bool(WH.search(low))
        and not CHOICE.search(low)
    )
