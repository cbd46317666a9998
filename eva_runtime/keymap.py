"""The ``[keymap]`` table (issue 16): every binding id Eva has, which key names are keys, and
how a key reads to the owner (:func:`key_label`: "Ctrl+C", "F2", "Alt+1").

A user keymap maps a binding id to keys (``"chat.stop" = "escape,ctrl+g"``). An id Eva does not
have, or a key name no terminal sends ("banana"), would be dropped silently by Textual and leave
the owner without a working key: the config refuses both, naming the key and the reason.
``tests/tui/test_config_save.py`` checks that :data:`BINDING_IDS` is exactly the ids the app and
its screens declare, and :data:`TEXTUAL_KEY_NAMES` Textual's own key names: the check needs no
Textual, so loading the config (``eva sleep``, ``eva serve``) imports no UI."""

from __future__ import annotations

import difflib
import unicodedata

NAV_IDS = ("app.chat", "app.memories", "app.archive", "app.journal", "app.preview", "app.settings")

BINDING_IDS: frozenset[str] = frozenset(
    {
        *NAV_IDS,
        "app.wake",
        "app.dry_run",
        "app.sleep",
        "app.help",
        "app.interrupt",
        "app.quit",
        "help.close",
        "help.toggle",
        "chat.stop",
        "chat.regenerate",
        "chat.copy",
        "chat.open_note",
        "chat.new",
        "chat.chats",
        "chat.summary",
        "chat.search",
        "coming_up.done",
        "coming_up.snooze",
        "coming_up.dismiss",
        "coming_up.open",
        "coming_up.close",
        "search.close",
        "search.results",
        "search.query",
        "import.close",
        "import.check",
        "import.write",
        "review.later",
        "chats.close",
        "chats.open",
        "chats.new",
        "chats.rename",
        "chats.delete",
        "chats.clear",
        "chats.archived",
        "chats.restore",
        "chats.rename_cancel",
        "chats.confirm_cancel",
        "summary.close",
        "summary.edit",
        "summary.rebuild",
        "summary.edit_cancel",
        "summary.edit_save",
        "memories.search",
        "memories.edit",
        "memories.private",
        "memories.pin",
        "memories.forget",
        "memories.copy",
        "memories.open",
        "memories.move",
        "memories.add",
        "record.edit",
        "record.private",
        "record.pin",
        "record.forget",
        "record.copy",
        "record.close",
        "record.done",
        "record.snooze",
        "record.dismiss",
        "edit.save",
        "edit.cancel",
        "forget.cancel",
        "confirm.yes",
        "confirm.no",
        "archive.restore",
        "archive.open",
        "archive.copy",
        "journal.sleep",
        "journal.dry_run",
        "journal.wake",
        "journal.copy",
        "preview.query",
        "preview.copy_trusted",
        "preview.copy_public",
        "settings.save",
        "settings.revert",
        "personas.close",
        "personas.switch",
        "personas.new",
        "personas.edit",
        "personas.delete",
        "persona_form.cancel",
        "persona_form.save",
        "persona_delete.cancel",
        "dialogue.cancel",
        "dialogue.draft",
        "dialogue.save",
        "init.close",
        "init.draft",
        "add.cancel",
        "add.save",
        "move.cancel",
        "clear.cancel",
        "clear_pinned.cancel",
        "message.edit",
        "message.delete",
        "answer.edit",
        "answer.delete",
        "answer.previous",
        "answer.next",
        "message_edit.cancel",
        "message_edit.save",
        "models.close",
        "remote.cancel",
    }
)

MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})


# The key names Textual binds (textual.keys, Textual 8.2.8: the values of ``Keys`` and the keys of
# ``KEY_TO_UNICODE_NAME`` that are one key, not a combination), kept here so that checking a
# config needs no UI (`eva sleep`, `eva doctor` and `eva serve` import no Textual).
# tests/tui/test_config_save.py checks the list against the Textual installed.
TEXTUAL_KEY_NAMES: frozenset[str] = frozenset(
    {
        "<any>",
        "<ignore>",
        "<scroll-down>",
        "<scroll-up>",
        "ctrl-at",
        "backspace",
        "delete",
        "down",
        "end",
        "enter",
        "escape",
        "home",
        "insert",
        "left",
        "pagedown",
        "pageup",
        "return",
        "right",
        "space",
        "tab",
        "up",
        *(f"f{n}" for n in range(1, 25)),
        "circumflex_accent",
        "commercial_at",
        "dollar_sign",
        "equals_sign",
        "exclamation_mark",
        "full_stop",
        "grave_accent",
        "greater_than_sign",
        "hyphen_minus",
        "left_curly_bracket",
        "left_parenthesis",
        "left_square_bracket",
        "less_than_sign",
        "low_line",
        "number_sign",
        "percent_sign",
        "plus_sign",
        "question_mark",
        "quotation_mark",
        "reverse_solidus",
        "right_curly_bracket",
        "right_parenthesis",
        "right_square_bracket",
        "vertical_line",
    }
)
KEY_NAMES = TEXTUAL_KEY_NAMES | {
    "slash",
    "backslash",
    "at",
    "minus",
    "plus",
    "underscore",
    "space",
    "comma",
    "colon",
    "semicolon",
    "apostrophe",
    "asterisk",
    "ampersand",
    "tilde",
}


def key_problem(key: str) -> str | None:
    """Why ``key`` (one key, e.g. ``"ctrl+g"``) is not a key Textual can bind; None if it is."""
    *mods, name = key.split("+")
    bad = [m for m in mods if m not in MODIFIERS]
    if bad:
        return f"{bad[0]!r} is not a modifier (ctrl, shift, alt, meta, super, hyper)"
    if len(name) == 1 and name.isprintable() and not name.isspace():
        return None
    if name in KEY_NAMES:
        return None
    # the character a name stands for, as Textual's key_to_character reads it: one character
    # itself, else its Unicode name ("question_mark", "full_stop", …)
    char: str | None = name if len(name) == 1 else None
    if name and char is None:
        try:
            char = unicodedata.lookup(name.replace("_", " ").upper())
        except KeyError:
            char = None
    if char is not None and char.isascii():
        return None
    return f"{name!r} is not a key name (e.g. f2, ctrl+r, escape, enter, slash, a)"


def binding_problem(binding_id: str, keys: str) -> str | None:
    """Why ``binding_id = keys`` cannot be bound; None when it can."""
    if binding_id not in BINDING_IDS:
        close = difflib.get_close_matches(binding_id, sorted(BINDING_IDS), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "see the Keyboard section of the README"
        return f"unknown binding id ({hint})"
    for key in keys.split(","):
        problem = key_problem(key)
        if problem:
            return problem
    return None
