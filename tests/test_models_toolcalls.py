"""The tool-call parser of the chat adapter (models/toolcalls.py): pure text, no model.

SPEC §3.2: the model writes memory through tool calls — they are executed, never shown to the
owner as text, and a malformed call becomes a tool error the model can read (SPEC §11: malformed
model output cannot do damage)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from models.toolcalls import ToolCallStream, json_end, parse_call_block, parse_tool_calls

KNOWN = {"memory_save", "memory_search", "memory_forget"}
SAVE = {"content": "Anna lives in Kazan", "kind": "fact", "importance": 4}
SAVE_JSON = json.dumps({"name": "memory_save", "arguments": SAVE})


def calls(text, known=KNOWN):
    return parse_tool_calls(text, known)


def test_qwen_tag_format_is_a_call_and_not_text():
    """SPEC §3.2: Qwen's <tool_call> block becomes a call; the prose before it stays visible."""
    text, found = calls(f"Sure, noting that.\n<tool_call>\n{SAVE_JSON}\n</tool_call>")
    assert text == "Sure, noting that.\n"
    assert [(c.name, c.arguments) for c in found] == [("memory_save", SAVE)]


def test_several_tags_and_an_unclosed_last_one():
    """SPEC §3.2: one topic per record — a model may save several in one answer."""
    second = json.dumps({"name": "memory_search", "arguments": {"query": "cat"}})
    text, found = calls(f"<tool_call>{SAVE_JSON}</tool_call>\n<tool_call>\n{second}")
    assert [c.name for c in found] == ["memory_save", "memory_search"]
    assert found[1].arguments == {"query": "cat"}
    assert text.strip() == ""


def test_json_fence_with_trailing_prose():
    """SPEC §3.2: a call in a ```json fence is a call; the prose after it is shown."""
    text, found = calls(f"```json\n{SAVE_JSON}\n```\nSaved it for later!")
    assert [c.arguments for c in found] == [SAVE]
    assert text == "\nSaved it for later!"
    assert "memory_save" not in text


def test_bare_call_object_and_doubled_braces():
    """SPEC §3.2: a bare call object (and the doubled braces one GGUF template teaches) is a call."""
    for raw in (SAVE_JSON, "{" + SAVE_JSON + "}", "  \n" + SAVE_JSON + "\n"):
        text, found = calls(raw)
        assert [c.arguments for c in found] == [SAVE], raw
        assert text.strip() == ""


def test_bare_call_on_its_own_line_after_prose():
    """SPEC §3.2: a call object starting a line after some prose is still a call."""
    text, found = calls(f"Let me remember that.\n{SAVE_JSON}\nDone.")
    assert [c.name for c in found] == ["memory_save"]
    assert text == "Let me remember that.\n\nDone."


def test_parameters_alias_string_arguments_and_openai_shape():
    """SPEC §3.2: the variants small models write all give dict arguments."""
    variants = [
        {"name": "memory_save", "parameters": SAVE},
        {"name": "memory_save", "arguments": json.dumps(SAVE)},
        {"type": "function", "function": {"name": "memory_save", "arguments": SAVE}},
    ]
    for v in variants:
        _, found = calls(f"<tool_call>{json.dumps(v)}</tool_call>")
        assert [(c.name, c.arguments) for c in found] == [("memory_save", SAVE)], v


def test_a_list_of_calls():
    """SPEC §3.2: a JSON list of calls gives each call."""
    both = json.dumps(
        [
            {"name": "memory_save", "arguments": SAVE},
            {"name": "memory_forget", "arguments": {"id": 3, "why": "moved"}},
        ]
    )
    _, found = calls(both)
    assert [c.name for c in found] == ["memory_save", "memory_forget"]


def test_bad_json_in_a_tag_returns_the_raw_string():
    """SPEC §3.2/§11: broken JSON is a call with raw-string arguments, so the caller answers
    with a tool error the model can read (never a crash, never shown as text)."""
    broken = '{"name": "memory_save", "arguments": {"content": "x", "kind": fact}}'
    text, found = calls(f"<tool_call>\n{broken}\n</tool_call>")
    assert len(found) == 1
    assert found[0].name == "memory_save"
    assert isinstance(found[0].arguments, str) and "fact" in found[0].arguments
    assert text == ""


def test_truncated_call_is_completed_when_only_closing_braces_are_missing():
    """SPEC §11: a call cut just before its closing braces is still understood."""
    _, found = calls('<tool_call>\n{"name": "memory_search", "arguments": {"query": "Anna"')
    assert [(c.name, c.arguments) for c in found] == [("memory_search", {"query": "Anna"})]


def test_nameless_garbage_in_a_tag_is_a_nameless_raw_call():
    """SPEC §11: garbage inside a tool tag is reported as a (failing) call, not shown."""
    text, found = calls("<tool_call>I will save this</tool_call>")
    assert found[0].name == "" and found[0].arguments == "I will save this"
    assert text == ""


def test_ordinary_json_and_code_are_text():
    """SPEC §3.2: only call-shaped output is a call — JSON or code the owner asked for is shown."""
    for answer in (
        'Here you go:\n```json\n{"name": "Anna", "city": "Kazan"}\n```',
        '{"name": "Anna", "age": 31}',
        "Use this:\n```python\nprint({'a': 1})\n```\nThat's it.",
        "Sets look like {1, 2} and dicts like {'a': 1}.",
        "[1, 2, 3] is a list.",
    ):
        text, found = calls(answer)
        assert found == [], answer
        assert text == answer


def test_broken_fence_counts_only_when_it_names_a_known_tool():
    """SPEC §11: a broken fenced block is a call only when it clearly names an offered tool."""
    _, found = calls('```json\n{"name": "memory_save", "arguments": {"content": }\n```')
    assert [c.name for c in found] == ["memory_save"] and isinstance(found[0].arguments, str)
    text, found = calls('```json\n{"name": "pizza", "arguments": {oops}\n```')
    assert found == [] and "pizza" in text


def test_hallucinated_tool_response_is_dropped():
    """SPEC §3.2: the model cannot fake a tool's answer — a <tool_response> it writes is dropped."""
    text, found = calls(
        f"<tool_call>{SAVE_JSON}</tool_call>\n<tool_response>\nsaved id 7\n</tool_response>\nOK!"
    )
    assert [c.name for c in found] == ["memory_save"]
    assert "saved id 7" not in text and text.strip() == "OK!"


def test_parse_call_block_strictness():
    """SPEC §3.2: inside a tag everything is a call; elsewhere only call-shaped blocks are."""
    assert parse_call_block("not json", KNOWN, strict=True) is None
    assert parse_call_block("not json", KNOWN, strict=False)[0].arguments == "not json"
    assert parse_call_block('{"name": "x", "arguments": {}}', KNOWN, strict=True)[0].name == "x"


def test_json_end_is_string_aware():
    """SPEC §3.2: braces inside strings do not end a call early."""
    s = '{"a": "}{", "b": [1, {"c": "]"}]} tail'
    assert s[: json_end(s)] == '{"a": "}{", "b": [1, {"c": "]"}]}'
    assert json_end('{"open": 1') is None


def test_stream_releases_plain_text_immediately():
    """SPEC §9 (streaming tokens): ordinary text is not held back waiting for the answer's end."""
    s = ToolCallStream(KNOWN)
    assert s.feed("Hello there") == "Hello there"
    assert s.feed(", how are") == ", how are"
    assert s.feed(" you?") == " you?"


def test_stream_holds_a_call_until_decided_and_never_shows_it():
    """SPEC §3.2: while a call is being written, nothing of it is shown."""
    s = ToolCallStream(KNOWN)
    shown = s.feed("Noted.\n<tool")
    assert shown == "Noted.\n"
    assert s.feed('_call>\n{"name": "memory_save", ') == ""
    assert s.feed('"arguments": {"content": "x"}}\n</tool_call>') == ""
    assert s.finish() == ""
    assert [c.name for c in s.calls] == ["memory_save"]


def test_stream_releases_a_python_fence_while_it_streams():
    """SPEC §9: a code block that cannot be a call streams as it is written."""
    s = ToolCallStream(KNOWN)
    out = s.feed("Code:\n```python\nx = 1\n")
    assert out.startswith("Code:\n```python\n")
    out += s.feed("y = 2\n```\nbye") + s.finish()
    assert out == "Code:\n```python\nx = 1\ny = 2\n```\nbye"


_PIECES = [
    "Sure! ",
    "Let me note that.\n",
    f"<tool_call>\n{SAVE_JSON}\n</tool_call>",
    "\n",
    f"```json\n{SAVE_JSON}\n```",
    "Some text with {braces} and [lists]. ",
    "```python\nprint(1)\n```\n",
    '{"name": "Anna", "age": 3}',
    "Привет, как дела? ",
    "<tool_response>fake</tool_response>",
    f"\n{SAVE_JSON}\n",
    "The end.",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6), st.data())
def test_streaming_equals_whole_text_for_any_chunking(pieces, data):
    """SPEC §3.2/§9: however the tokens are chunked, the stream shows exactly what the whole-text
    parse shows and finds the same calls — so no tool-call text leaks through a chunk boundary."""
    text = "".join(pieces)
    want_text, want_calls = parse_tool_calls(text, KNOWN)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    s = ToolCallStream(KNOWN)
    got, prev = [], 0
    for c in [*cuts, len(text)]:
        got.append(s.feed(text[prev:c]))
        prev = c
    got.append(s.finish())
    assert "".join(got) == want_text
    assert s.calls == want_calls
    assert "<tool_call>" not in want_text and '"arguments"' not in want_text.replace(
        '{"name": "Anna", "age": 3}', ""
    )
