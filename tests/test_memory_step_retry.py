"""Nothing the owner says is lost to a failed memory step (issue 26; SPEC §3.1, §8.9): when a
turn's step gives no answer (a timeout under load, a broken plan), its reply says so and is
marked, and the background work after the turn (``Conversation.summarise``, run when the model
is free) reads the owner's message again — once, giving way to a turn that wants the model."""

from __future__ import annotations

import threading

from core.chat.conversation import Conversation
from core.chat.events import Notice
from core.chat.window_saver import KEPT, RETRIES, STEP_FAILED
from core.llm import ModelError
from tests.fake_llm import ScriptedLLM
from tests.test_memory_writer import live, news, run, save_op


def _messages(conv):
    return conv._transcript.chat_history(conv.chat_id)


def test_a_failed_step_is_read_again_when_the_model_is_free(mem):
    llm = ScriptedLLM(
        [["Sure."]],
        plans=[ModelError("generation timed out"), *news(save_op("My sister is Lena"))],
    )
    conv = Conversation(mem, llm)
    events = run(conv, "My sister is Lena")
    notes = [e.text for e in events if isinstance(e, Notice)]
    assert notes and "timed out" in notes[0] and "again" in notes[0]
    assert live(mem) == []
    user, reply = _messages(conv)
    assert reply.meta[STEP_FAILED] == "generation timed out"

    conv.summarise()  # the after-turn background work
    assert live(mem) == ["My sister is Lena"]
    [rec] = mem.list()
    assert rec.source.value == "dialogue"
    row = mem._storage.query("SELECT source_turn FROM memories WHERE id = ?", (rec.id,))[0]
    assert row[0] == user.turn_id  # regenerating that turn rolls it back like its own writes
    user, reply = _messages(conv)
    assert STEP_FAILED not in reply.meta and user.meta.get(KEPT) is True
    assert reply.content == "Sure."  # the reply and its other meta stay

    calls = len(llm.json_calls)
    conv.summarise()
    assert len(llm.json_calls) == calls  # read once: nothing is asked again


def test_a_step_that_keeps_failing_is_tried_three_times_then_waits_for_the_window(mem):
    """Under load a retry may time out too: it is tried after each of the next turns, at most
    RETRIES times, then left to the pass over what leaves the window (not marked kept)."""
    llm = ScriptedLLM(
        [["Sure."]],
        plans=[ModelError("timed out")] * (1 + RETRIES) + news(save_op("My sister is Lena")),
    )
    conv = Conversation(mem, llm)
    run(conv, "My sister is Lena")
    for _ in range(RETRIES + 1):
        conv.summarise()
    assert len(llm.json_calls) == 1 + RETRIES and live(mem) == []
    user, reply = _messages(conv)
    assert STEP_FAILED not in reply.meta and not user.meta.get(KEPT)
    # it left the window: the step reads it once more, and this time the model answers
    conv._window_start = reply.id + 1
    conv.summarise()
    assert live(mem) == ["My sister is Lena"]


class _Interrupted(ScriptedLLM):
    """The retry's model call is interrupted: a turn wants the model (the summariser's
    interrupt is set while the step runs)."""

    def __init__(self, *a, interrupt=None, **kw):
        super().__init__(*a, **kw)
        self.interrupt = interrupt

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        if self.interrupt is not None:
            self.interrupt.set()
            self.json_calls.append({"messages": messages, "schema": schema})
            raise ModelError("cancelled")
        return super().generate_json(messages, schema, timeout, max_tokens, cancel)


def test_an_interrupted_retry_waits_for_the_next_time(mem):
    llm = _Interrupted(
        [["Sure."]], plans=[ModelError("timed out"), *news(save_op("My sister is Lena"))]
    )
    conv = Conversation(mem, llm)
    run(conv, "My sister is Lena")
    stop = threading.Event()
    llm.interrupt = stop
    conv.summarise(cancel=stop)
    assert live(mem) == [] and STEP_FAILED in _messages(conv)[1].meta
    assert not _messages(conv)[0].meta.get(KEPT)
    llm.interrupt = None
    conv.summarise()
    assert live(mem) == ["My sister is Lena"]


def test_a_step_that_answers_marks_nothing(mem):
    llm = ScriptedLLM([["Sure."]], plans=news(save_op("My sister is Lena")))
    conv = Conversation(mem, llm)
    run(conv, "My sister is Lena")
    assert STEP_FAILED not in _messages(conv)[1].meta
    calls = len(llm.json_calls)
    conv.summarise()
    assert len(llm.json_calls) == calls and live(mem) == ["My sister is Lena"]


def test_learning_off_retries_nothing(mem):
    from core.chat.conversation_config import ConversationConfig

    llm = ScriptedLLM([["Sure."]], plans=news(save_op("x")))
    conv = Conversation(mem, llm, config=ConversationConfig(learning=False))
    run(conv, "My sister is Lena")
    conv.summarise()
    assert llm.json_calls == [] and live(mem) == []


def test_over_http_a_failed_step_is_read_again_after_the_turn(tmp_path):
    """The HTTP server starts the same background work after a turn as the chat screen does
    (eva_api.hub.ChatHub.after_turn), so a turn that came through the API is retried too."""
    import time

    from tests.serve_kit import running, sse_events
    from tests.test_serve import make_services

    s = make_services(tmp_path, replies=[["Nice!"]] * 4)
    s.chat_model.plans = [ModelError("timed out"), *news(save_op("My sister Lena lives in Riga"))]
    with running(s, tmp_path) as r, r.client(owner=True) as c:
        events = sse_events(
            c.post("/v1/chat", json={"message": "My sister Lena lives in Riga"}).text
        )
        assert any("timed out" in d for e, d in events if e == "notice"), events
        deadline = time.monotonic() + 10
        while not live(s.memory) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert live(s.memory) == ["My sister Lena lives in Riga"]
    s.close()
