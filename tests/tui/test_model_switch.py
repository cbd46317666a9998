"""Switching the chat model mid-chat (issue 31 item 3, SPEC §9 "the model can be switched
without a restart"): the next turn runs on the new model; the chat, its messages and the
memory stay."""

from __future__ import annotations

from tests.tui.conftest import SIZE, aio, send, settle, until
from tests.tui.fakes import PlannedLLM


class TwoModelLoader:
    """A loader that has one more model, "other-model" (the in-process backend's shape)."""

    def __init__(self, other):
        self.other = other
        self.loaded: list[str] = []

    def check_chat(self, spec):
        return None if spec == "other-model" else f"no model {spec!r}"

    def chat_model(self, spec, **kw):
        self.loaded.append(spec)
        return self.other

    def describe(self, spec):
        return spec


@aio
async def test_switching_model_mid_chat_keeps_the_chat_and_memory(env_factory):
    env = env_factory([["First answer."]])
    other = PlannedLLM([["Second answer, from the other model."]])
    env.services.loader = TwoModelLoader(other)
    env.memory.import_records([{"content": "Лена — сестра владельца", "kind": "core"}])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hello")
        chat_id = env.services.conversation.chat_id
        pilot.app._switch_model("other-model", None)
        await until(pilot, lambda: env.services.chat_model is other)
        await settle(pilot)
        assert "other-model" in pilot.app.status_text or env.services.model_spec == "other-model"
        await send(pilot, "and now?")
        conv = env.services.conversation
        assert conv.chat_id == chat_id
        assert [(m.role, m.content) for m in conv.history()] == [
            ("user", "hello"),
            ("assistant", "First answer."),
            ("user", "and now?"),
            ("assistant", "Second answer, from the other model."),
        ]
        assert len(env.llm.calls) == 1 and len(other.calls) == 1
        # the new model's prompt carries the chat so far and the memory
        prompt = " ".join(str(m.get("content")) for m in other.calls[0]["messages"])
        assert "hello" in prompt and "First answer." in prompt and "Лена" in prompt
        assert env.memory.count() == 1


@aio
async def test_a_model_that_cannot_load_leaves_the_current_one(env_factory):
    env = env_factory([["One."], ["Two."]])
    env.services.loader = TwoModelLoader(None)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app._switch_model("missing-model", None)
        await settle(pilot)
        assert env.services.chat_model is env.llm
        await send(pilot, "still there?")
        assert env.services.conversation.history()[-1].content == "One."


@aio
async def test_palette_lists_the_switch_and_a_persona_may_name_its_model(env_factory):
    """Item 3: a palette command switches the model; a persona may name its own, used when
    the owner switches to that persona."""
    env = env_factory([["Hi."]])
    other = PlannedLLM([["From the persona's model."]])
    env.services.loader = TwoModelLoader(other)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
        assert "Switch model" in titles and "Persona's model" in titles
        ps = env.services.personas
        p = ps.create("Coder", env.clock.now())
        ps.set_model(p.id, "other-model")
        env.services.switch_persona(p.id)
        assert env.services.chat_model is other
        env.services.switch_persona("default")
        assert env.services.chat_model is env.llm
