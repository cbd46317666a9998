"""The memory step's grammar (SPEC §3.1): the JSON schema of one exchange's ops, built per
exchange so the grammar itself keeps the model inside the rules
(:mod:`core.chat.memory_writer` says which, and checks every op again when it applies it)."""

from __future__ import annotations

from typing import Any

MAX_OPS = 4


def _op(name: str, **fields: Any) -> dict[str, Any]:
    """One op of the schema: ``{"op": name, **fields}``, every field required."""
    return {
        "type": "object",
        "properties": {"op": {"const": name}, **fields},
        "required": ["op", *fields],
    }


def ops_schema(
    ids: list[int],
    *,
    allow_private: bool,
    allow_forget: bool,
    allow_update: bool = True,
    max_ops: int = MAX_OPS,
) -> dict[str, Any]:
    """The JSON schema of this exchange's ops; the grammar made from it is the first guard.
    When the owner asked to forget, forgetting is the only op; ``update`` is offered only for a
    correction (the default model, offered it always, overwrote unrelated memories)."""
    text_field = {"type": "string", "minLength": 3}
    save = _op(
        "save",
        content=text_field,
        kind={"enum": ["fact", "event"]},
        # 3 first: a small model takes the first option it is shown (measured: every
        # memory got importance 1 with [1..5], which sleep may forget)
        importance={"enum": [3, 4, 2, 5, 1]},
        private={"type": "boolean"} if allow_private else {"const": False},
    )
    update = _op("update", id={"enum": list(ids)}, content=text_field)
    forget = _op("forget", id={"enum": list(ids)}, why={"type": "string", "minLength": 1})
    if allow_forget and ids:
        variants: list[dict[str, Any]] = [forget]
    else:
        variants = [save] + ([update] if ids and allow_update else [])
    item = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {
        "type": "object",
        "properties": {"ops": {"type": "array", "items": item, "minItems": 1, "maxItems": max_ops}},
        "required": ["ops"],
    }
