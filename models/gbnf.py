"""The GBNF grammar a JSON schema constrains decoding with (SPEC §7; §11: malformed model
output must not reach the store, so the grammar admits only valid JSON). Used by
:class:`models.llama.LlamaChatModel` for ``force_tool_call`` and ``generate_json``."""

from __future__ import annotations

import json
from typing import Any

# JSON strings may not hold raw control characters; llama-cpp-python's converter allows them
# (``[^"\\]``), which lets a model write a newline that breaks the JSON. llama.cpp's own rule:
_STRICT_CHAR_RULE = (
    r'char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | '
    r'"u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
)


def schema_grammar(schema: dict[str, Any]) -> str:
    """A GBNF grammar that admits exactly the JSON documents of ``schema``."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(schema))
    lines = [
        (_STRICT_CHAR_RULE if line.startswith("char ::=") else line) for line in gbnf.splitlines()
    ]
    return "\n".join(lines) + "\n"
