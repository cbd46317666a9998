"""The messages a chat template renders (pure: no model library is imported).

Eva's messages made template-ready — string contents, a tool call as ``{"name", "arguments"}``
— and, when tools are offered, the Qwen2.5 tool block written into the (first) system message by
us: a ``<tools>`` block of one JSON signature per line and the ``<tool_call>`` answer format,
which keeps the tools in the stable, cached prefix and works the same for templates that know no
tools. The in-process llama.cpp model (:mod:`models.llama`) renders these with the GGUF's own
template (ChatML when it has none); the OpenAI-compatible backend writes the same block.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from core.llm import Message, ToolCall
from models.toolcalls import tool_function

DEFAULT_SYSTEM = "You are a helpful assistant."
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tools_system_block(tools: list[dict[str, Any]]) -> str:
    """The Qwen2.5 tool block appended to the system message (the format these models were
    trained on: one JSON signature per line in ``<tools>``, answers in ``<tool_call>``)."""
    lines = []
    for t in tools:
        fn = tool_function(t)
        lines.append(json.dumps({"type": "function", "function": fn}, ensure_ascii=False))
    return (
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        + "\n".join(lines)
        + "\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def _call_dict(tc: Any) -> dict[str, Any]:
    if isinstance(tc, ToolCall):
        name, args = tc.name, tc.arguments
    else:
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
        name, args = fn.get("name", ""), fn.get("arguments", {})
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return {"name": name, "arguments": args}


def prepare_messages(
    messages: list[Message], tools: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Messages as the chat template expects them: string contents, tool calls as
    ``{"name", "arguments"}`` dicts, and the tool block in the (first) system message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role", "user")
        content = m.get("content")
        msg: dict[str, Any] = {"role": role, "content": "" if content is None else str(content)}
        if role == "assistant" and m.get("tool_calls"):
            msg["tool_calls"] = [_call_dict(tc) for tc in m["tool_calls"]]
        out.append(msg)
    if tools:
        block = tools_system_block(tools)
        if out and out[0]["role"] == "system":
            out[0] = {**out[0], "content": out[0]["content"] + block}
        else:
            out.insert(0, {"role": "system", "content": DEFAULT_SYSTEM + block})
    return out
