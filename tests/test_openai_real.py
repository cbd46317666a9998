"""The HTTP backend against a real OpenAI-compatible server: ``python -m llama_cpp.server`` with
the packaged 0.5B model on loopback, as a subprocess with a bounded life (issue 31 item 5).
Skipped when the server extra (``llama-cpp-python[server]``, in the dev set-up) or the model is
not installed."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from core import OWNER_TRUSTED
from core.chat.conversation import Conversation
from core.chat.events import Token, TurnDone, TurnError
from core.llm import Done, ModelError, TextDelta
from core.sleep.plan import TOOL_NAME, forget_tool
from models.openai_compat import OpenAICompatModel

pytestmark = pytest.mark.real_model
LIFE = 600  # seconds: the server is killed after this, whatever happens to the test run
ALIAS = "qwen2.5-coder-0.5b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(threads: int = 2) -> tuple[subprocess.Popen, str]:
    from models import packaged

    if (
        importlib.util.find_spec("llama_cpp.server") is None
        or importlib.util.find_spec("fastapi") is None
        or importlib.util.find_spec("starlette_context") is None
    ):
        pytest.skip("llama-cpp-python[server] is not installed: run `make setup-dev`")
    if not packaged.is_installed(packaged.TEST_CHAT_MODEL):
        pytest.skip("packaged 0.5B model is not installed: run `make setup-dev`")
    path = packaged.resolve_gguf(packaged.TEST_CHAT_MODEL)
    port = _free_port()
    cmd = [
        "timeout",
        "-s",
        "KILL",
        str(LIFE),
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(path),
        "--model_alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(threads),
        "--seed",
        "0",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}/v1"
    m = OpenAICompatModel(url, ALIAS)
    for _ in range(240):
        if proc.poll() is not None:
            pytest.fail("llama_cpp.server exited at start")
        try:
            if ALIAS in m.list_models(timeout=1):
                return proc, url
        except ModelError:
            time.sleep(0.25)
    stop_server(proc)
    pytest.fail("llama_cpp.server did not come up in 60 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


@pytest.fixture(scope="module")
def server():
    proc, url = start_server()
    yield url
    stop_server(proc)


def test_a_turn_and_its_memory_step_through_the_server(mem, server):
    """A turn streams tokens through the HTTP backend; the structured memory step runs through
    the server's JSON output and saves what the owner told."""
    conv = Conversation(mem, OpenAICompatModel(server, ALIAS, context_size=4096), "You are Eva.")
    events = list(conv.turn("Remember this: my sister Lena is a doctor in Kazan.", OWNER_TRUSTED))
    assert not [e for e in events if isinstance(e, TurnError)]
    assert any(isinstance(e, Token) for e in events)
    done = [e for e in events if isinstance(e, TurnDone)][0]
    assert done.text and done.prompt_tokens > 0
    saved = " ".join(r.content for r in mem.list(OWNER_TRUSTED))
    assert "Lena" in saved or "Лена" in saved, saved


def test_a_sleep_decision_through_the_server(server):
    """Sleep's forced tool call runs on the server's JSON output and fits the tool's schema."""
    m = OpenAICompatModel(server, ALIAS, context_size=4096)
    call = m.force_tool_call(
        [
            {"role": "system", "content": "You consolidate memories."},
            {
                "role": "user",
                "content": "Faded memories: #4 'bought milk in 2019', #7 'owner's "
                "name is Ivan'. Forget only what is trivial.",
            },
        ],
        forget_tool([4, 7]),
        timeout=120,
    )
    assert call.name == TOOL_NAME
    assert isinstance(call.arguments, dict) and isinstance(call.arguments.get("ops"), list)
    for op in call.arguments["ops"]:
        assert op["id"] in (4, 7)


def test_cancel_mid_stream(server):
    m = OpenAICompatModel(server, ALIAS)
    cancel = threading.Event()
    pieces = 0
    t0 = time.monotonic()
    last = None
    for ev in m.stream_chat(
        [{"role": "user", "content": "Write a long story about a cat."}],
        cancel=cancel,
        max_tokens=400,
    ):
        last = ev
        if isinstance(ev, TextDelta):
            pieces += 1
            if pieces == 3:
                cancel.set()
    assert isinstance(last, Done) and last.stopped
    assert pieces < 20 and time.monotonic() - t0 < 30
    # the server is free again: the next call answers
    assert any(
        isinstance(e, TextDelta)
        for e in m.stream_chat([{"role": "user", "content": "Say hi."}], max_tokens=5)
    )


def test_server_killed_mid_reply(mem):
    """A server that dies mid-reply: a clear error, no answer stored as whole, no memory."""
    proc, url = start_server(threads=1)
    try:
        conv = Conversation(mem, OpenAICompatModel(url, ALIAS, context_size=4096), "You are Eva.")
        events = []
        for ev in conv.turn("My brother Oleg lives in Perm. Tell me a long story.", OWNER_TRUSTED):
            events.append(ev)
            if isinstance(ev, Token) and len(events) > 3 and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    finally:
        stop_server(proc)
    errors = [e for e in events if isinstance(e, TurnError)]
    assert errors and "model server" in errors[0].message
    assert not any(isinstance(e, TurnDone) for e in events)
    assert mem.count() == 0
    assert [m.status for m in conv.history() if m.role == "assistant"] in ([], ["error"])
