"""The OpenAI-compatible HTTP backend against an in-process fake server (issue 31 items 1, 2;
SPEC §9 "chat models", §11 "malformed model output cannot damage the store"). Fast and
deterministic; tests/test_openai_real.py runs the same paths against llama_cpp.server."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from core.chat.conversation import Conversation
from core.chat.events import Notice, TurnDone, TurnError
from core.llm import Done, ModelError, TextDelta, ToolCall
from core.privacy import OWNER_TRUSTED
from eva_runtime import config as cfg
from eva_tui import cli
from models.openai_compat import OpenAICompatModel, RemoteRefused, SchemaRefused
from tests.openai_fake import Answer, FakeOpenAI

SCHEMA = {
    "type": "object",
    "properties": {
        "ops": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["save"]},
                    "content": {"type": "string", "maxLength": 40},
                },
                "required": ["op", "content"],
            },
        }
    },
    "required": ["ops"],
    "additionalProperties": False,
}


def _events(model, messages, **kw):
    return list(model.stream_chat(messages, **kw))


def test_streams_text_and_takes_token_counts_from_usage():
    """Item 1: replies stream; token counts come from the server's usage when it reports one."""
    with FakeOpenAI(
        [Answer(["Hel", "lo"], usage={"prompt_tokens": 321, "completion_tokens": 2})]
    ) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        evs = _events(m, [{"role": "user", "content": "hi"}])
    assert [e.text for e in evs if isinstance(e, TextDelta)] == ["Hel", "lo"]
    done = evs[-1]
    assert isinstance(done, Done) and done.prompt_tokens == 321
    assert done.extra["tokens_estimated"] is False
    req = srv.requests[0]
    assert req["stream"] is True and req["cache_prompt"] is True and req["model"] == "fake"


def test_without_usage_the_count_is_a_stated_overestimate():
    """Item 1: no usage → an estimate, said so in Done.extra, erring high (3 bytes a token:
    above the real count for English and Russian text on the Qwen tokenizer, ~4 and ~5)."""
    text = "Моя сестра Лена живёт в Казани и работает врачом. " * 4
    with FakeOpenAI([Answer(["ok"])]) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        done = _events(m, [{"role": "user", "content": text}])[-1]
    assert done.extra["tokens_estimated"] is True
    assert done.prompt_tokens >= len(text.encode()) / 3
    assert m.count_tokens("hello world, how are you") >= 6  # 24 bytes / 3 = 8 ≥ real 6


def test_stable_prefix_is_sent_byte_identical():
    """Item 1 (KV reuse): two turns that share a prefix send it byte for byte the same."""
    system = {"role": "system", "content": "Persona.\n\n## Memory\n- Лена — сестра"}
    with FakeOpenAI([Answer(["a"]), Answer(["b"])]) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        _events(m, [system, {"role": "user", "content": "one"}])
        _events(
            m,
            [
                system,
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": "a"},
                {"role": "user", "content": "two"},
            ],
        )
    first, second = (r["messages"] for r in srv.requests)
    assert second[: len(first)] == first


def test_cancel_mid_stream_closes_the_connection():
    """Item 1: stop/cancel ends the stream at once, marked stopped; the server sees the client
    go (so it stops generating)."""
    with FakeOpenAI([Answer([f"w{i} " for i in range(200)], delay=0.02)]) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        cancel = threading.Event()
        got = []
        t0 = time.monotonic()
        for ev in m.stream_chat([{"role": "user", "content": "long"}], cancel=cancel):
            got.append(ev)
            if len(got) == 3:
                cancel.set()
        took = time.monotonic() - t0
        assert srv.disconnected.wait(5)
    assert isinstance(got[-1], Done) and got[-1].stopped
    assert len([e for e in got if isinstance(e, TextDelta)]) < 10
    assert took < 2.0  # 200 pieces would take 4 s


def test_server_dying_mid_reply_is_a_clear_error():
    """Item 5: a server that dies mid-reply is a ModelError that says so, not a short answer
    taken as whole."""
    with FakeOpenAI([Answer(["a", "b", "c", "d"], die_after=2)]) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        with pytest.raises(ModelError, match="mid-reply|broke off"):
            _events(m, [{"role": "user", "content": "hi"}])


def test_native_tool_calls_are_events_not_text():
    with FakeOpenAI(
        [Answer([], tool_calls=[{"name": "memory_save", "arguments": {"content": "x"}}])]
    ) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        evs = _events(
            m,
            [{"role": "user", "content": "save x"}],
            tools=[{"name": "memory_save", "parameters": {"type": "object"}}],
        )
    calls = [e for e in evs if isinstance(e, ToolCall)]
    assert calls == [ToolCall("memory_save", {"content": "x"}, id="c0")]
    assert srv.requests[0]["tools"][0]["function"]["name"] == "memory_save"


def test_json_schema_is_asked_of_the_server():
    """Item 1: grammar steps go through response_format json_schema."""
    with FakeOpenAI([Answer(['{"ops": [{"op": "save", "content": "Лена — сестра"}]}'])]) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        out = m.generate_json([{"role": "user", "content": "x"}], SCHEMA)
    assert out == {"ops": [{"op": "save", "content": "Лена — сестра"}]}
    fmt = srv.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA


def test_a_server_without_schema_support_is_checked_retried_once_then_refused():
    """Item 1: no JSON-schema output → the answer is checked against the schema, retried
    once, then refused with a clear notice."""
    bad = '{"ops": [{"op": "delete_everything", "content": "all"}]}'
    with FakeOpenAI(
        [Answer([bad]), Answer(["not json at all"]), Answer(["unused"])],
        reject_formats=("json_schema", "json_object"),
    ) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        with pytest.raises(SchemaRefused, match="did not fit the step's schema twice"):
            m.generate_json([{"role": "user", "content": "x"}], SCHEMA)
        plain = [r for r in srv.requests if "response_format" not in r]
        assert len(plain) == 2  # the two tries (after the two refused formats)
        assert m.schema_mode == "none" and m.retries == 1


def test_a_misfit_then_a_fit_is_used():
    good = '{"ops": [{"op": "save", "content": "short"}]}'
    with FakeOpenAI(
        [Answer(['{"ops": "nope"}']), Answer([good])], reject_formats=("json_schema",)
    ) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        assert (
            m.generate_json([{"role": "user", "content": "x"}], SCHEMA)["ops"][0]["content"]
            == "short"
        )
        assert srv.requests[-1]["response_format"]["type"] == "json_object"


def test_memory_step_through_a_schemaless_server_writes_nothing_half(mem):
    """Item 1 + SPEC §11: a memory step whose JSON never fits is refused with a notice; the
    reply stands and no memory is written."""
    bad = '{"ops": [{"kind": 7}]}'
    with FakeOpenAI(
        [Answer(["Nice to meet you, Lena's brother!"]), Answer([bad]), Answer([bad])],
        reject_formats=("json_schema", "json_object"),
    ) as srv:
        m = OpenAICompatModel(srv.url, "fake")
        conv = Conversation(mem, m, "You are Eva.")
        events = list(conv.turn("My sister Lena is a doctor in Kazan.", OWNER_TRUSTED))
    assert any(isinstance(e, TurnDone) for e in events)
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any("could not update her memory" in n and "schema" in n for n in notices), notices
    assert mem.count() == 0


def test_server_killed_mid_turn_keeps_no_ok_reply_and_no_memory(mem):
    """Item 5: the server dies mid-reply: the owner gets a clear error, the memory step does
    not run, and what was said is not stored as a whole answer."""
    with FakeOpenAI([Answer(["Lena ", "is ", "a ", "doctor"], die_after=2)]) as srv:
        conv = Conversation(mem, OpenAICompatModel(srv.url, "fake"), "You are Eva.")
        events = list(conv.turn("My sister Lena is a doctor.", OWNER_TRUSTED))
    errors = [e for e in events if isinstance(e, TurnError)]
    assert errors and "model server" in errors[0].message
    assert not any(isinstance(e, TurnDone) for e in events)
    assert mem.count() == 0
    assert [m.status for m in conv.history() if m.role == "assistant"] in ([], ["error"])


# ------------------------------------------------------------------ remote privacy (item 2)
@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to connect anywhere fails the test."""

    def refuse(*a, **k):
        raise AssertionError(f"a connection was attempted: {a}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_non_loopback_server_is_refused_before_any_connection(no_network):
    """Item 2, SPEC §9: a non-loopback base_url without allow_remote is refused, nothing
    contacted (a .invalid name is never resolved either)."""
    with pytest.raises(RemoteRefused, match="allow_remote"):
        OpenAICompatModel("http://eva-test.invalid:11434/v1", "llama3")
    for url in ("http://10.0.0.5/v1", "https://api.example.invalid/v1", "http://[fe80::1]/v1"):
        with pytest.raises(RemoteRefused):
            OpenAICompatModel(url, "m")
    m = OpenAICompatModel("http://eva-test.invalid/v1", "llama3", allow_remote=True)
    assert m.remote
    for url in ("http://localhost:1/v1", "http://127.0.0.2:1/v1", "http://[::1]:1/v1"):
        assert not OpenAICompatModel(url, "m").remote


def test_config_refuses_a_remote_server_without_allow_remote():
    with pytest.raises(cfg.ConfigError, match=r"\[llm\] base_url .* allow_remote = true"):
        cfg.from_mapping({"llm": {"backend": "openai", "base_url": "http://eva.invalid/v1"}})
    c = cfg.from_mapping(
        {
            "llm": {
                "backend": "openai",
                "base_url": "http://eva.invalid/v1",
                "allow_remote": True,
                "model": "llama3",
            }
        }
    )
    assert c.llm.remote and c.llm.general == "llama3"
    with pytest.raises(cfg.ConfigError, match="never the key itself"):
        cfg.from_mapping({"llm": {"api_key_env": "sk-live-123"}})


@pytest.mark.parametrize("command", [[], ["doctor"]])
def test_eva_and_doctor_exit_2_with_one_line_on_a_remote_url(
    tmp_path, monkeypatch, capsys, no_network, command
):
    """Issue 31 target: a non-loopback URL without allow_remote — `eva` and `eva doctor` exit 2
    with one line, having contacted nothing."""
    conf = tmp_path / "config.toml"
    conf.write_text(
        '[llm]\nbackend = "openai"\nbase_url = "http://eva-test.invalid/v1"\nmodel = "llama3"\n'
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    rc = cli.main(["--config", str(conf), *command])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "allow_remote" in err


def test_doctor_says_memory_leaves_the_machine(tmp_path, monkeypatch, capsys):
    """Item 2: with allow_remote, `eva doctor` says the memory leaves the machine (and the
    server is not contacted beyond its model list: here it cannot be reached at all)."""
    conf = tmp_path / "config.toml"
    conf.write_text(
        '[llm]\nbackend = "openai"\nbase_url = "http://eva-test.invalid/v1"\n'
        'allow_remote = true\nmodel = "llama3"\n[memory]\nembedding_model = ""\n'
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    def unreachable(*a, **k):
        raise OSError("no network in tests")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    monkeypatch.setattr(socket, "getaddrinfo", unreachable)
    cli.main(["--config", str(conf), "doctor"])
    out = capsys.readouterr().out
    assert "memory leaves this machine" in out and "eva-test.invalid" in out


def test_doctor_reports_server_models_and_gpu(tmp_path, monkeypatch, capsys):
    """Items 1, 4: doctor checks the server's model list and says whether llama.cpp has a GPU
    backend."""
    with FakeOpenAI(models=("qwen-8b", "llama3")) as srv:
        conf = tmp_path / "config.toml"
        conf.write_text(
            f'[llm]\nbackend = "openai"\nbase_url = "{srv.url}"\n'
            'model = "qwen-8b"\n[memory]\nembedding_model = ""\n'
        )
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        rc = cli.main(["--config", str(conf), "doctor"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"qwen-8b on {srv.url}" in out
    assert "GPU offload:" in out
