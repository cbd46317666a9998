"""What a rolling summary must keep (SPEC §8.3, issue 12): the names, numbers and dates of its
source (:func:`salient_terms`, with the one proper-name detector of :func:`core.text.names`),
whether a summary keeps each (:func:`present`), and the extractive fallback that keeps them
all. :class:`core.chat.summarizer.Summarizer` rejects a summary that drops one."""

from __future__ import annotations

import re

from core import text as core_text
from core.chat.summaries import SourceMessage


def salient_terms(source: str) -> set[str]:
    """The names, numbers and dates of a text that a summary must keep: tokens with a digit, and
    the proper names of :func:`core.text.names` (capitalised words in mid-sentence)."""
    terms = set(core_text.numbers(source)) | set(core_text.names(source))
    return {t for t in terms if t}


def present(term: str, summary_text: str) -> bool:
    """Whether a summary keeps ``term``: a number exactly (as a token), a name as a word, as the
    start of a word (a short form: "Mel" in "Melanie") or by its stem (a Russian name wears
    endings: "Лена" → "Лены")."""
    if any(ch.isdigit() for ch in term):
        return term in core_text.numbers(summary_text) or term in summary_text
    low = term.lower()
    hay = summary_text.lower()
    if re.search(r"(?<!\w)" + re.escape(low) + (r"" if len(low) >= 3 else r"(?!\w)"), hay):
        return True
    stem = core_text.stem_token(low)
    return len(stem) >= 3 and stem in set(core_text.stems(summary_text))


def dropped(source: str, summary_text: str) -> list[str]:
    """The names and numbers of ``source`` the summary does not keep (sorted)."""
    return sorted(t for t in salient_terms(source) if not present(t, summary_text))


def fidelity(source: str, summary_text: str) -> float:
    """Share of the source's names, numbers and dates the summary keeps (1.0 with none)."""
    terms = salient_terms(source)
    if not terms:
        return 1.0
    return sum(present(t, summary_text) for t in terms) / len(terms)


def extractive(chunk: list[SourceMessage], per_message: int = 160) -> str:
    """The fallback summary: each message's sentences that carry a name or number (or its
    first sentence), clipped — the source's own words, so nothing is made up."""
    out = []
    for m in chunk:
        who = "The owner" if m.role == "user" else "Eva"
        sentences = [s.strip() for s in re.split(r"(?<=[.!?…])\s+|\n+", m.content) if s.strip()]
        keep = [s for s in sentences if salient_terms(s)] or sentences[:1]
        body = " ".join(keep)
        if len(body) > per_message:
            body = body[: per_message - 1].rstrip() + "…"
        out.append(f"{who}: {body}")
    return " ".join(out)
