"""The one memory search of the TUI (issue 16): the memories screen's `/` and the command
palette both use :func:`search_records`.

By meaning first (``Memory.recall``: pure, it reinforces nothing), then by words: a substring
match, for the records recall never returns (core ones) and for exact words. SQLite's ``LIKE``
folds only ASCII case, so "анна" would miss "Анна": the words are matched in each of their
usual casings (as typed, lower, upper, capitalized, title) and the results are checked with
Python's ``casefold`` — the same answer for any script."""

from __future__ import annotations

from core.errors import NotFound
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.store.records import Record


def casings(text: str) -> list[str]:
    """``text`` as typed and in its usual casings, each once."""
    out: list[str] = []
    for v in (text, text.lower(), text.upper(), text.capitalize(), text.title()):
        if v not in out:
            out.append(v)
    return out


def search_records(memory: Memory, text: str, limit: int = 500) -> list[Record]:
    """Live records for ``text``, best first: recalled ones, then the ones whose content holds
    the text in any letter case. Pure reads."""
    text = " ".join(text.split())
    if not text:
        return []
    ids = [h.id for h in memory.recall(text, OWNER_TRUSTED, top_k=min(200, limit))]
    seen = set(ids)
    folded = text.casefold()
    by_words: list[Record] = []
    for variant in casings(text):
        for r in memory.list(OWNER_TRUSTED, contains=variant, limit=limit):
            if r.id not in seen and folded in " ".join(r.content.split()).casefold():
                seen.add(r.id)
                by_words.append(r)
    out: list[Record] = []
    for rid in ids:
        try:
            out.append(memory.get(rid, OWNER_TRUSTED))
        except NotFound:  # removed meanwhile
            continue
    out += sorted(by_words, key=lambda r: -r.updated_at)
    return out[:limit]
