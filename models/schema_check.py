"""Check a JSON value against the JSON-schema subset Eva's structured steps use (issue 31).

A server without JSON-schema output (or one that ignores it) may return any JSON: the
OpenAI-compatible backend checks the answer here before anything reads it, so a plan that
does not fit its schema is retried once and then refused — never half applied. Covered:
``type`` (one or a list), ``properties``, ``required``, ``additionalProperties: false``,
``enum``, ``const``, ``items``, ``minItems``/``maxItems``, ``minLength``/``maxLength``,
``minimum``/``maximum``, ``pattern``, ``anyOf``/``oneOf``. Other keywords are not checked.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is(value: Any, tp: str) -> bool:
    if tp == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if tp == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    want = _TYPES.get(tp)
    return True if want is None else isinstance(value, want)


def problem(value: Any, schema: dict[str, Any], where: str = "$") -> str | None:
    """None when ``value`` fits ``schema``; else the first misfit, with its JSON path."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if (
            isinstance(options, list)
            and options
            and all(problem(value, o, where) is not None for o in options)
        ):
            return f"{where}: matches none of the allowed forms"
    tp = schema.get("type")
    if tp is not None:
        types = tp if isinstance(tp, list) else [tp]
        if not any(_is(value, t) for t in types):
            return f"{where}: expected {'/'.join(map(str, types))}, got {type(value).__name__}"
    if "const" in schema and value != schema["const"]:
        return f"{where}: must be {schema['const']!r}"
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of {schema['enum']!r}"
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                return f"{where}: {name!r} is missing"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"{where}: unexpected {extra[0]!r}"
        for name, sub in props.items():
            if name in value:
                p = problem(value[name], sub, f"{where}.{name}")
                if p:
                    return p
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{where}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where}: more than {schema['maxItems']} items"
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                p = problem(v, items, f"{where}[{i}]")
                if p:
                    return p
    elif isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{where}: shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where}: longer than {schema['maxLength']} characters"
        pat = schema.get("pattern")
        if isinstance(pat, str) and re.search(pat, value) is None:
            return f"{where}: does not match {pat!r}"
    elif _is(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where}: below {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where}: above {schema['maximum']}"
    return None
