"""Arguments of memory operations (SPEC §2, §3.2), checked the same way for the model's tools,
the owner's screens, imports and sleep. Each check returns the clean value or raises
:class:`core.errors.MemoryOpError` with a message the model can act on."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from core.errors import MemoryOpError
from core.store.records import GLOBAL_SCOPE, Kind


def content(value: object, max_chars: int) -> str:
    if not isinstance(value, str):
        raise MemoryOpError("content must be text")
    value = value.strip()
    if not value:
        raise MemoryOpError("content is empty")
    if len(value) > max_chars:
        raise MemoryOpError(
            f"content is {len(value)} characters; the limit is {max_chars} — "
            "keep one topic per record and split or shorten it"
        )
    return value


def kind(value: object) -> Kind:
    try:
        return Kind(str(value).strip().lower())
    except ValueError:
        raise MemoryOpError(f"kind must be one of core, fact, event (got {value!r})") from None


def importance(value: object) -> int:
    if isinstance(value, bool):
        raise MemoryOpError("importance must be a whole number from 1 to 5")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or not 1 <= value <= 5:
        raise MemoryOpError(f"importance must be a whole number from 1 to 5 (got {value!r})")
    return value


def flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise MemoryOpError(f"{name} must be true or false (got {value!r})")


def record_id(value: object) -> int:
    if isinstance(value, bool):
        raise MemoryOpError("id must be a memory number")
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        value = int(value.strip().lstrip("#"))
    if not isinstance(value, int) or value < 1:
        raise MemoryOpError(f"id must be a memory number (got {value!r})")
    return value


def scope(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        raise MemoryOpError("scope must be 'global' or a persona id")
    return value.strip()


def why(value: object) -> str:
    """The reason a memory is forgotten: required, at most 500 characters."""
    if not isinstance(value, str) or not value.strip():
        raise MemoryOpError("say why the memory is forgotten")
    return value.strip()[:500]


def item(it: Mapping, max_chars: int, now: Callable[[], float]) -> dict[str, Any]:
    """An import item — ``content`` and optionally kind, importance, private, pinned, scope,
    created_at (default: now) — as the fields of a new record."""
    return {
        "content": content(it.get("content"), max_chars),
        "kind": kind(it.get("kind", "fact")),
        "importance": importance(it.get("importance", 3)),
        "private": flag(it.get("private", False), "private"),
        "pinned": flag(it.get("pinned", False), "pinned"),
        "scope": scope(it.get("scope", GLOBAL_SCOPE)),
        "created_at": moment(it.get("created_at", None), now),
    }


def moment(value: object, now: Callable[[], float]) -> float:
    """A record's time: seconds since the epoch (finite, not negative); None means now."""
    if value is None:
        return float(now())
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryOpError(f"created_at must be seconds since the epoch (got {value!r})")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise MemoryOpError(f"created_at must be seconds since the epoch (got {value!r})")
    return value
