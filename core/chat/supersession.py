"""Does the owner's message change a saved memory? (SPEC §3.1; issue 17 item 2, issue 26 item
2.) Pure arithmetic over the texts, by the sleep's rules (:mod:`core.sleep.candidates`):
:func:`outdated_by` marks a memory shown to the memory step as one the message may change (the
step's hint to update it); :func:`supersedes`, stricter, says that a memory the step saved
replaces a shown one (:class:`core.chat.memory_writer.MemoryWriter` then archives it)."""

from __future__ import annotations

from core import text
from core.chat.owner_message import corrects
from core.sleep import candidates as sleep_candidates


def outdated_by(message: str, content: str) -> str | None:
    """Whether the owner's message seems to change this saved memory (issue 17 item 2: a
    contradiction caught when it is written, not a night later): the same subject — a name in
    common or a fifth of their words — and a changed value (a number, a day, a name) or a
    word saying it changed ("now", "moved", "теперь", "больше не"). Pure arithmetic; the model
    decides whether to update."""
    mine, theirs = text.stem_set(message), text.stem_set(content)
    same_subject = sleep_candidates.shares_name(message, content) or (
        bool(mine and theirs) and text.jaccard(mine, theirs) >= 0.2
    )
    if not same_subject:
        return None
    change = sleep_candidates.text_change(content, message)
    if change:
        return change
    if sleep_candidates.says_change(message) and not sleep_candidates.says_change(content):
        return "the message says something changed"
    return None


def supersedes(new: str, old: str, message: str) -> str | None:
    """Whether a memory saved from the owner's ``message`` (its text ``new``) replaces the shown
    memory ``old`` (issue 26 item 2: "Update: Anna moved again, she now lives in Yerevan." was
    kept beside "My sister Anna moved to Tbilisi last month.", and "Where does my sister live
    now?" got "Tbilisi"). Stricter than :func:`outdated_by`, which only offers the model an
    update: the message says something changed; both speak of the same someone (a name or a
    role in common, not different people); a value changed (a number, a day, a name); and they
    speak of the same thing — a word in common beyond the names, roles and numbers ("moved"),
    so "Anna's birthday is on March 3" or "Anna started at Google" replace nothing. Pure
    arithmetic (the sleep's supersession rules, :mod:`core.sleep.candidates`), or None."""
    if not (corrects(message) or sleep_candidates.says_change(message)):
        return None
    if sleep_candidates.different_people(old, new):
        return None
    # names, a sentence's first word included ("Лена переехала в Казань")
    names_old = sleep_candidates.name_groups("x " + old)
    names_new = sleep_candidates.name_groups("x " + new)
    roles_old, roles_new = sleep_candidates.roles(old), sleep_candidates.roles(new)
    same_name = any(g & h for g in names_old for h in names_new)
    owners = not (
        roles_old
        or roles_new
        or sleep_candidates.name_groups(old)
        or sleep_candidates.name_groups(new)
    )  # both about the owner alone
    if not (same_name or roles_old & roles_new or owners):
        return None
    change = sleep_candidates.text_change(old, new)
    if change is None:
        return None
    subject = {v for g in names_old + names_new for v in g}
    words = {
        w
        for w in text.stem_set(old) & text.stem_set(new)
        if w not in subject and not any(ch.isdigit() for ch in w) and not sleep_candidates.roles(w)
    }
    return change if words else None
