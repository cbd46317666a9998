"""Searching every chat's messages (SPEC §8.12, issue 28 item 6): the owner's words and Eva's,
in Russian and English, in any case.

The index is SQLite FTS5 over ``messages`` (schema v7, :mod:`core.store.storage`), tokenized by
``unicode61 remove_diacritics 2``: case folds for Cyrillic and Latin alike ("КОТ" = "кот"),
"ё" = "е", "é" = "e". Russian words change their endings ("кот", "кота", "котом"), so a query
word is looked for twice:

- **exact**: the word itself (``"кота"``), and
- **by its stem**: the Snowball stem of the word as a prefix (``"кот"*``): "кот" finds "кота"
  and "котом", "кошки" finds "кошка".

Hits of the exact query come first, then other forms of the words (a marked word has the
query word's stem), then words that only start like them ("который" for "кот"); newest first
within each. A stem
shorter than :data:`MIN_PREFIX` letters is not widened (a prefix of two letters matches half
the language). Measured on bench/chat_search.py: both queries over 10,000 messages stay far
below the 50 ms target.

This module is pure (no store): :class:`core.chat.transcript.Transcript` runs the queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from core import text as txt

MIN_PREFIX = 3  # letters of a stem before it is searched as a prefix
MAX_QUERY = 200  # characters of a query at most
MAX_TERMS = 12  # words of a query at most (the rest are ignored)
LIMIT = 50  # hits one search returns at most
MARK_START = "\x02"  # around the matched words of a snippet (the UI styles them)
MARK_END = "\x03"


@dataclass(frozen=True)
class SearchHit:
    message_id: int
    chat_id: int
    chat_label: str  # the chat's title, or its first words
    persona: str
    role: str  # "user" (the owner) or "assistant" (Eva)
    created_at: float
    snippet: str  # a few words around the match, matches between MARK_START and MARK_END
    exact: bool  # the words themselves matched (not only their stems)

    def snippet_plain(self) -> str:
        return self.snippet.replace(MARK_START, "").replace(MARK_END, "")


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def queries(text: str) -> tuple[str, str] | None:
    """The FTS5 MATCH expressions (exact, by stem) for what the owner typed, or None when it
    has no word to look for. Every word is quoted: nothing the owner types is FTS syntax
    (``AND``, ``*``, ``"``, ``NEAR`` are words like any other)."""
    if not isinstance(text, str):
        return None
    words = txt.tokens(text[:MAX_QUERY])
    if not words:
        return None
    kept = [w for w in words if not txt.is_stopword(w)] or words
    kept = list(dict.fromkeys(kept))[:MAX_TERMS]
    widened = []
    for w in kept:
        stem = txt.stem_token(w)
        if len(stem) >= MIN_PREFIX and not stem.isdigit():
            # the English stemmer may change a letter ("happy" → "happi"): the word itself then
            # still counts
            widened.append(
                _quote(stem) + "*" if w.startswith(stem) else f"({_quote(w)} OR {_quote(stem)}*)"
            )
        else:
            widened.append(_quote(w))
    return " AND ".join(_quote(w) for w in kept), " AND ".join(widened)


def query_stems(text: str) -> frozenset[str]:
    """The stems of a query's words (see :func:`tier`)."""
    words = txt.tokens(text[:MAX_QUERY]) if isinstance(text, str) else []
    kept = [w for w in words if not txt.is_stopword(w)] or words
    return frozenset(txt.stem_token(w) for w in kept)


def tier(content: str, exact: bool, stems: frozenset[str]) -> int:
    """How well a hit matches, for ordering: 0 the words themselves, 1 another form of them
    (a word of the message has the same stem: "котом" for "кот"), 2 only a longer word that
    starts like them ("который" for "кот": kept, for a half-typed word, but last)."""
    if exact:
        return 0
    return 1 if any(txt.stem_token(t) in stems for t in txt.tokens(content)) else 2
