"""How a key reads to the owner (Textual's key names; the runtime's keymap has no UI)."""

from __future__ import annotations

from textual.keys import format_key


def key_label(key: str) -> str:
    """A key as the owner reads it: "f2" → "F2", "alt+1" → "Alt+1", "ctrl+c" → "Ctrl+C"."""
    *mods, name = key.split("+")
    if (len(name) == 1 and mods) or (name[:1] == "f" and name[1:].isdigit()):
        name = name.upper()
    else:
        name = {"escape": "Esc", "enter": "Enter", "delete": "Delete"}.get(name, format_key(name))
    return "+".join([*(m.capitalize() for m in mods), name])
