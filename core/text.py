"""Text for memory: tokens and stems of mixed Russian/English text (SPEC §3.2, §4).

Every token is stemmed by the stemmer of its own script (Cyrillic → Russian Snowball, Latin →
English Snowball), so "Казань" and "Kazan's" both reduce sensibly inside one sentence. Numbers
are significant tokens and are kept verbatim ("3 pm" ≠ "5 pm"). Stop words are dropped from
the stems used for matching, unless a text has nothing else.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import Stemmer

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]")
_LATIN = re.compile(r"[a-z]")
_DIGIT = re.compile(r"\d")

_EN_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "hers",
        "him",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "me",
        "my",
        "myself",
        "of",
        "on",
        "or",
        "our",
        "ours",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "they",
        "this",
        "those",
        "to",
        "too",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "s",
        "t",
        "about",
        "also",
        "am",
        "can",
        "could",
        "just",
        "not",
        "no",
        "yes",
        "very",
        "there",
        "then",
        "these",
        "how",
        "all",
        "any",
        "some",
        "up",
        "out",
        "over",
        "such",
        "only",
        "own",
        "same",
        "other",
        "more",
        "most",
        "should",
        "now",
    ]
)
_RU_STOP = frozenset(
    [
        "и",
        "в",
        "во",
        "не",
        "что",
        "он",
        "на",
        "я",
        "с",
        "со",
        "как",
        "а",
        "то",
        "все",
        "она",
        "так",
        "его",
        "но",
        "да",
        "ты",
        "к",
        "у",
        "же",
        "вы",
        "за",
        "бы",
        "по",
        "только",
        "ее",
        "её",
        "мне",
        "было",
        "вот",
        "от",
        "меня",
        "еще",
        "ещё",
        "нет",
        "о",
        "из",
        "ему",
        "теперь",
        "когда",
        "даже",
        "ну",
        "вдруг",
        "ли",
        "если",
        "уже",
        "или",
        "ни",
        "быть",
        "был",
        "него",
        "до",
        "вас",
        "нибудь",
        "опять",
        "уж",
        "вам",
        "ведь",
        "там",
        "потом",
        "себя",
        "ничего",
        "ей",
        "может",
        "они",
        "тут",
        "где",
        "есть",
        "надо",
        "ней",
        "для",
        "мы",
        "тебя",
        "их",
        "чем",
        "была",
        "сам",
        "чтоб",
        "без",
        "будто",
        "чего",
        "раз",
        "тоже",
        "себе",
        "под",
        "будет",
        "ж",
        "тогда",
        "кто",
        "этот",
        "того",
        "потому",
        "этого",
        "какой",
        "совсем",
        "ним",
        "здесь",
        "этом",
        "один",
        "почти",
        "мой",
        "тем",
        "чтобы",
        "нее",
        "были",
        "куда",
        "зачем",
        "всех",
        "никогда",
        "можно",
        "при",
        "наконец",
        "два",
        "об",
        "другой",
        "хоть",
        "после",
        "над",
        "больше",
        "тот",
        "через",
        "эти",
        "нас",
        "про",
        "всего",
        "них",
        "какая",
        "много",
        "разве",
        "три",
        "эту",
        "моя",
        "впрочем",
        "хорошо",
        "свою",
        "этой",
        "перед",
        "иногда",
        "лучше",
        "чуть",
        "том",
        "нельзя",
        "такой",
        "им",
        "более",
        "всегда",
        "конечно",
        "всю",
        "между",
        "это",
    ]
)

_en = Stemmer.Stemmer("english")
_ru = Stemmer.Stemmer("russian")


def nfc(text: str) -> str:
    """Composed Unicode (issue 15): "й" typed as и + U+0306, or "é" as e + U+0301, is one letter,
    so the same word matches however a keyboard or a paste encoded it."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def tokens(text: str) -> list[str]:
    """Lower-cased word and number tokens, in order (NFC-composed, ё folded to е)."""
    return _TOKEN.findall(nfc(text).lower().replace("ё", "е"))


@lru_cache(maxsize=200_000)
def stem_token(tok: str) -> str:
    """Stem one lower-cased token with the stemmer of its script; numbers stay as they are."""
    if _DIGIT.search(tok) and not (_CYRILLIC.search(tok) or _LATIN.search(tok)):
        return tok
    tok = tok.replace("’", "'")
    if _CYRILLIC.search(tok):
        return _ru.stemWord(tok)
    if _LATIN.search(tok):
        if tok.endswith("'s"):
            tok = tok[:-2]
        return _en.stemWord(tok.replace("'", ""))
    return tok


def is_stopword(tok: str) -> bool:
    return tok in _EN_STOP or tok in _RU_STOP


def stems(text: str) -> list[str]:
    """Stems of the meaningful tokens of ``text`` in order, with repeats (for BM25).

    Stop words are dropped; if that leaves nothing, all tokens are kept, so a text made only of
    common words still matches itself."""
    return list(_stems(text))


@lru_cache(maxsize=256)
def _stems(text: str) -> tuple[str, ...]:
    # the last texts' stems: one save stems its text once, though dedup, the insert, the index
    # and its similar records all ask for them
    toks = tokens(text)
    kept = [t for t in toks if not is_stopword(t)] or toks
    return tuple(stem_token(t) for t in kept)


def stem_set(text: str) -> frozenset[str]:
    return frozenset(stems(text))


def numbers(text: str) -> frozenset[str]:
    """The numeric tokens of a text (significant: they make "3 pm" and "5 pm" different)."""
    return frozenset(t for t in tokens(text) if _DIGIT.search(t))


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def numbers_compatible(a: str | Iterable[str], b: str | Iterable[str]) -> bool:
    """Two wordings can be the same memory only if one's numbers include the other's.

    "meeting at 3 pm" and "meeting on Friday at 3 pm" are compatible; "at 3 pm" and "at 5 pm"
    are not, however similar the rest. Each side is a text, or its tokens or stems (dedup
    compares the stem sets the lexical index holds)."""
    na, nb = _numeric(a), _numeric(b)
    return na <= nb or nb <= na


def _numeric(x: str | Iterable[str]) -> frozenset[str]:
    if isinstance(x, str):
        return numbers(x)
    return frozenset(t for t in x if _DIGIT.search(t))


# Letter by letter between the scripts — enough to meet a name written in the other one
# ("Lena" ↔ "Лена", "Kazan" ↔ "Казань"); also the reply guard's fix for mixed-script words.
LAT2CYR = dict(zip("abcdefghijklmnopqrstuvwyz", "абцдефгхийклмнопкрстуввыз", strict=True))
CYR2LAT = {
    "а": "a",
    "б": "b",
    "в": "v",
    "г": "g",
    "д": "d",
    "е": "e",
    "ё": "yo",
    "ж": "zh",
    "з": "z",
    "и": "i",
    "й": "y",
    "к": "k",
    "л": "l",
    "м": "m",
    "н": "n",
    "о": "o",
    "п": "p",
    "р": "r",
    "с": "s",
    "т": "t",
    "у": "u",
    "ф": "f",
    "х": "kh",
    "ц": "ts",
    "ч": "ch",
    "ш": "sh",
    "щ": "shch",
    "ъ": "",
    "ы": "y",
    "ь": "",
    "э": "e",
    "ю": "yu",
    "я": "ya",
}
# A word that starts with a capital: letters and digits ("Boris2"), joined by an apostrophe
# inside ("O'Brien", "Kazan's"); a hyphen parts two ("Anna-Maria"). Quotes around it are no
# part of it.
_CAPITALISED = re.compile(r"(?<!\w)(?<!\w['’])[A-ZА-ЯЁ][^\W_]*(?:['’][^\W_]+)*(?!\w)(?!['’]\w)")
_APOSTROPHE = re.compile(r"['’]")
# Any word is capitalised where a sentence opens: at the start of the text or a line, or after
# . ! ? … — spaces and opening marks between (a quote, a bracket, a dialogue dash, a list's
# bullet: «"Пойдём!"», "- Yes"). A mark in mid-sentence opens nothing: «бассейн «Лужники»»,
# "my sister — Vika", "a beagle (Fantik)" and "Дети: Соня и Марк" name someone.
_SENTENCE_ENDS = frozenset(".!?…\n")
_OPENING_MARKS = frozenset(" \t\"'«“„‘([-–—*•")
NOT_NAMES = frozenset(
    {
        "eva",
        "ева",
        "i",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "ok",
        "okay",
        "oh",
        "yes",
        "no",
        "hi",
        "hey",
        "hello",
        "thanks",
        "привет",
        "да",
        "нет",
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "jr",
        "sr",
    }
)  # titles name no one


def transliterate(word: str) -> str:
    """``word`` (lower case) in the other script, letter by letter."""
    if _CYRILLIC.search(word):
        return "".join(CYR2LAT.get(ch, ch) for ch in word)
    return "".join(LAT2CYR.get(ch, ch) for ch in word)


def roman(stem: str) -> str:
    """A stem in Latin letters, "y" read as "i" ("итальянск" → "italiansk", as "italian")."""
    latin = transliterate(stem) if _CYRILLIC.search(stem) else stem
    return latin.replace("y", "i").replace("'", "")


def script_keys(stems: Iterable[str]) -> frozenset[str]:
    """Stems as both scripts can meet them: stems five letters long at least by their first
    five Latin letters ("бариста" and "barista" meet as "baris"), shorter ones as they are."""
    return frozenset(roman(s)[:5] if len(s) >= 5 else s for s in stems)


def sound_key(word: str) -> str:
    """How a name sounds, for meeting it across scripts: its first four letters in Latin
    letters, with the spellings the two scripts disagree on made one ("w" and "v", "x" and "ks",
    "c" and "k", "h" left out): "Norway" and "Норвегии" both give "norv", "Chicago" and
    "Чикаго" give "kika". Measured on the memory-step set's names: of 43,939 pairs of different
    names in the two scripts 15 share a key, and 5 of those are one name ("Макс", "Max")."""
    latin = roman(word.lower().replace("ё", "е"))
    # an opening "Е" is written "Ye" in English ("Ереван" and "Yerevan", "Егор" and "Yegor":
    # "ierev" against "erev" had kept them apart — an answer naming the owner's city in English
    # was held as made up)
    latin = re.sub(r"^ie", "e", latin)
    latin = latin.replace("w", "v").replace("x", "ks").replace("c", "k").replace("h", "")
    return re.sub(r"[^a-z]", "", latin)[:4]


def names(text: str) -> list[str]:
    """The proper names of ``text``, in order — the one detector that recall's name links
    (:func:`name_stems`) and a summary's salient terms (:mod:`core.chat.summary_fidelity`) share:
    capitalised words of at least two letters, one lower-case (not an acronym: "DVDs"; "McLeod"
    and "LeBron" are names), that do not open a sentence and are no greeting, title, pronoun or
    stop word. A possessive's 's is left off ("Kazan's" → "Kazan")."""
    out: list[str] = []
    for m in _CAPITALISED.finditer(text):
        word = m.group()
        if word[-2:] in ("'s", "’s"):
            word = word[:-2]
        rest = "".join(part[1:] for part in _APOSTROPHE.split(word))
        if rest.endswith("s"):
            rest = rest[:-1]  # a plural's s: "DVDs" is no name
        if (
            not any(ch.islower() for ch in rest)
            or word.lower() in NOT_NAMES
            or is_stopword(word.lower())
        ):
            continue  # one letter, an acronym, or a word anyone may capitalise
        k = m.start() - 1
        while k >= 0 and text[k] in _OPENING_MARKS:
            k -= 1
        if k < 0 or text[k] in _SENTENCE_ENDS:
            continue
        out.append(word)
    return out


def name_stems(content: str) -> list[frozenset[str]]:
    """For each name in ``content`` (:func:`names`), its stem in both scripts: {"lena", "лен"}
    for "Lena"."""
    return [group for _, group in name_words(content)]


def name_words(content: str) -> list[tuple[str, frozenset[str]]]:
    """Each name of ``content`` (:func:`names`) once, as written, with its stem group
    (:func:`name_group`)."""
    out: list[tuple[str, frozenset[str]]] = []
    seen: set[frozenset[str]] = set()
    for word in names(nfc(content).strip()):
        group = name_group(word)
        if group not in seen:
            seen.add(group)
            out.append((word, group))
    return out


def name_group(word: str) -> frozenset[str]:
    """A name's stem in both scripts (see :func:`name_stems`)."""
    low = word.lower().replace("ё", "е")
    other = transliterate(low)
    if _CYRILLIC.search(low):  # "Казани": its stem "казан" is "kazan" in Latin letters
        variants = {low, other, transliterate(stem_token(low))}
    else:  # "Kazan": a Russian name wears endings ("Казани", "Лены") that its stem drops
        variants = {low, other, other + "а", other + "ь"}
    return frozenset(stem_token(v) for v in variants)
