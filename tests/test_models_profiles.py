"""A profile per chat model and the default threads (issue 9), measured in bench.llm."""

from __future__ import annotations

from models.packaged import DEFAULT_CHAT_MODEL, REGISTRY
from models.profiles import GENERIC, PROFILES, auto_threads, profile_for


def test_threads_follow_how_busy_the_machine_is(monkeypatch):
    """Idle: every core (2 threads: 86 vs 46 prompt tok/s); busy: one fewer (2 threads fell to
    39 tok/s against 1 thread's 46 with one other process running)."""
    monkeypatch.delenv("EVA_LLM_THREADS", raising=False)
    assert auto_threads(cpus=2, load=0.1) == 2
    assert auto_threads(cpus=2, load=1.4) == 1
    assert auto_threads(cpus=1, load=3.0) == 1
    assert auto_threads(cpus=8, load=2.0) == 7
    monkeypatch.setenv("EVA_LLM_THREADS", "3")
    assert auto_threads(cpus=2, load=0.0) == 3


def test_every_packaged_chat_model_has_a_profile_and_a_local_gguf_gets_the_generic_one():
    chat_models = {n for n in REGISTRY if n in PROFILES}
    assert DEFAULT_CHAT_MODEL in chat_models
    assert profile_for("/models/mine.gguf") is GENERIC
    # measured: the default model cannot drive free-form tool calls (issue 9)
    assert profile_for(DEFAULT_CHAT_MODEL).tool_calls is False
