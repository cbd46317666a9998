"""Issue 29 item 2 (SPEC §8.11): `[reminders] days` is how far the chat's first turn of the day
looks for a reminder, as it is for `eva remind`, `GET /v1/reminders` and the "Coming up" card."""

from __future__ import annotations

from core import OWNER_TRUSTED
from core.store.records import Actor
from eva_tui.widgets.coming_up import ComingUpCard
from tests.tui.conftest import SEED, aio, send, settle


def told(env, content: str) -> int:
    return env.memory.save(content, OWNER_TRUSTED, actor=Actor.OWNER).id


def card(pilot):
    found = pilot.app.screen.query(ComingUpCard)
    return found.first() if found else None


def test_reminders_days_reach_the_conversation(env_factory):
    """Issue 29 item 2: `[reminders] days` is the chat's first-turn look-ahead
    (ConversationConfig.reminder_days), not the core's default."""
    env = env_factory(reminders={"days": 7})
    assert env.services.conversation.config.reminder_days == 7
    assert env.services.conversation_config(env.services.config.chat).reminder_days == 7


@aio
async def test_the_first_turn_carries_a_promise_within_reminders_days(env_factory):
    """Issue 29 items 2-3: with `[reminders] days = 7` a promise five days ahead is in the
    day's first prompt (marked as a reminder) and on the card; with the default 3 it is not."""
    for days, expected in ((7, True), (3, False)):
        env = env_factory(["Hello!"], seed=SEED, reminders={"days": days})
        told(env, "Promised to call the dentist in 5 days")
        async with env.app.run_test(size=(110, 32)) as pilot:
            await settle(pilot)
            assert (card(pilot) is not None) is expected
            await send(pilot, "Hi")
            await settle(pilot)
        prompt = env.llm.calls[0]["messages"][-1]["content"]
        assert ("call the dentist" in prompt) is expected, days
        env.memory.close()
