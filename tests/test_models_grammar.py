"""Schema → grammar for constrained decoding (models/gbnf.py), without loading a model.

SPEC §7: sleep's plan is forced with JSON-schema constrained decoding; SPEC §11: malformed model
output must not reach the store — so the grammar may only admit valid JSON."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")

from models.gbnf import _STRICT_CHAR_RULE, schema_grammar  # noqa: E402


def test_strings_cannot_hold_raw_control_characters():
    """SPEC §11: llama-cpp-python's converter lets a string hold a raw newline (invalid JSON);
    our grammar uses llama.cpp's strict character rule instead."""
    g = schema_grammar(
        {"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]}
    )
    char_rules = [line for line in g.splitlines() if line.startswith("char ::=")]
    assert char_rules == [_STRICT_CHAR_RULE]
    assert r"\x00-\x1F" in _STRICT_CHAR_RULE


def test_every_property_and_enum_is_in_the_grammar():
    """SPEC §7: the plan's shape (ops enum, integer ids) is enforced by the grammar itself."""
    g = schema_grammar(
        {
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": ["merge", "forget"]},
                "ids": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["op", "ids"],
        }
    )
    assert '"\\"merge\\""' in g and '"\\"forget\\""' in g
    assert "integer ::=" in g and "root ::=" in g
