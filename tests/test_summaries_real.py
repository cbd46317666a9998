"""Rolling summaries with a real small model (issue 12, SPEC §8.3): the grammar-forced summary
call parses, and whatever the model writes, what is kept passes the fidelity check (the model's
summary, or the extractive fallback after one retry)."""

from __future__ import annotations

import pytest

from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.summaries import FALLBACK, OK, RECENT
from core.chat.summary_fidelity import fidelity
from core.chat.transcript import Transcript
from tests.chat_kit import tui_message
from tests.model_kit import module_model

pytestmark = pytest.mark.real_model

TURNS = [
    ("My sister Olga moved to Riga in 2019.", "Riga is lovely! Does Olga like it there?"),
    ("Yes, she works at a bakery on Brivibas street 42.", "A bakery sounds cosy."),
    ("I promised to visit her on 14 March.", "Have a great trip on 14 March!"),
]


@pytest.fixture(scope="module")
def qwen():
    yield from module_model(n_ctx=4096)


def test_a_real_model_summary_keeps_every_name_and_number(mem, clock, qwen):
    conv = Conversation(mem, qwen, config=ConversationConfig(learning=False))
    tr = mem.attach(Transcript)
    last = 0
    for i, (u, a) in enumerate(TURNS):
        for role, text in (("user", u), ("assistant", a)):
            last = tui_message(
                tr, f"t{i}", role, text, chat_id=conv.chat_id, at=clock.now(), tokens=10
            )
    conv._window_start = last + 1
    [step] = conv.summarise()
    s = step.summary
    assert step.action == "chunk" and step.model_calls in (1, 2)
    assert s.tier == RECENT and s.status in (OK, FALLBACK)
    source = "\n".join(t for pair in TURNS for t in pair)
    assert fidelity(source, s.text()) == 1.0, s
    assert s.prose.strip()
