"""The memory step's grammar (SPEC §3.1): the JSON schema of one exchange's ops, built per
exchange so the grammar itself keeps the model inside the rules
(:mod:`core.chat.memory_writer` says which, and checks every op again when it applies it)."""

from __future__ import annotations

import json
import re
from typing import Any

MAX_OPS = 4
# One memory is a sentence or two: the longest owner message of the labelled set (616
# messages) is 203 characters. The grammar closes a content at this length, so a small model
# that runs on inside a string (the 0.5B test model did, in CI: its plan was cut at the
# step's token budget and the whole message was deferred) cannot spend the budget on one op.
MAX_CONTENT_CHARS = 300


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
    text_field = {"type": "string", "minLength": 3, "maxLength": MAX_CONTENT_CHARS}
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
    forget = _op(
        "forget", id={"enum": list(ids)}, why={"type": "string", "minLength": 1, "maxLength": 200}
    )
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


def whole_ops(partial: str, source: str = "") -> list[dict[str, Any]]:
    """The ops a plan cut at its token budget wrote whole (``{"ops": [{…}, {…}, {"op": "sa``
    gives the first two): what the model finished is as good as an uncut plan's; the op it
    was writing when the budget ran out is lost, never half-kept. A content the grammar
    closed at :data:`MAX_CONTENT_CHARS` ran on, and is not whole either."""
    start = partial.find("[", partial.find('"ops"') + 1) if '"ops"' in partial else -1
    if start < 0:
        return []
    decoder = json.JSONDecoder(strict=False)
    out: list[dict[str, Any]] = []
    at = start + 1
    while True:
        while at < len(partial) and partial[at] in " \t\r\n,":
            at += 1
        if at >= len(partial) or partial[at] != "{":
            return out
        try:
            value, at = decoder.raw_decode(partial, at)
        except ValueError:
            return out
        if isinstance(value, dict) and not ran_on(value, source):
            out.append(value)


def ran_on(op: Any, source: str = "") -> bool:
    """An op whose content the grammar closed at :data:`MAX_CONTENT_CHARS`: the model was
    repeating itself, not writing a memory — unless that content is the owner's message
    (``source``) copied, word after word without repeating itself. The cap was set when the
    labelled set's longest message had 203 characters; LoCoMo's owners write up to 400, the
    default model copies such a message whole into one save, and two of conversation 0's
    evidence turns (dev, four sessions) were dropped as run-ons and lost. The step keeps the
    owner's sentences such a save stands for, never the cut copy itself."""
    content = op.get("content") if isinstance(op, dict) else None
    if not (isinstance(content, str) and len(content) >= MAX_CONTENT_CHARS):
        return False
    grams = _trigrams(content)[:-1]  # the last word may be cut
    if not source or len(grams) < 5:
        return True
    theirs = set(_trigrams(source))
    distinct = len(set(grams)) / len(grams)
    copied = sum(g in theirs for g in grams) / len(grams)
    return not (distinct >= COPY_DISTINCT and copied >= COPY_SHARE)


COPY_DISTINCT = 0.9  # a copy repeats few word triples (a loop "I have a corgi. I have…": 0.03)
COPY_SHARE = 0.8  # … and most of its word triples are the message's


def _trigrams(s: str) -> list[tuple[str, ...]]:
    words = re.findall(r"\w+", s.casefold())
    return [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
