"""The stream filters as one chain (issue 30): markup out, then each word in one script, then an
announcing opening dropped — whatever the chunking (SPEC §3.1, issue 9)."""

from __future__ import annotations

import re

import pytest

from core.chat.filters import MarkupFilter, PreambleFilter, ReplyFilters, ScriptFixer


def through(pieces: list[str], chain: ReplyFilters | None = None) -> str:
    chain = chain or ReplyFilters()
    return "".join(chain.feed(p) for p in pieces) + chain.finish()


@pytest.mark.parametrize(
    "text, shown",
    [
        (
            'Вот ответ на ваш вопрос:\n\n<tool_call>{"name": "memory_save"}</tool_call>Твою собаку '
            "зовут Bubлик.",
            "Твою собаку зовут Бублик.",
        ),
        ("<tools>\n</tools>Here's my answer: Bublik.<|im_end|>", "Bublik."),
        ("Your dog's name is Bubлик", "Your dog's name is Бублик"),
        # a raw JSON call on its own line goes; the line break after it stays (the answer is stripped)
        ('{"name": "memory_save", "arguments": {}}\nХорошо!', "\nХорошо!"),
        ("Конечно, я помню!", "Конечно, я помню!"),
    ],
)
def test_the_chain_shows_the_reply_without_markup_mixed_scripts_or_announcement(text, shown):
    """§3.1: what reaches the judge (and the owner) is the reply alone, token by token or whole."""
    for pieces in ([text], re.findall(r"\S+\s*|\s+", text), list(text)):
        assert through(pieces) == shown


def test_the_chain_is_its_filters_in_order():
    """Feeding the chain is feeding each filter what the one before let through; finishing it
    flushes each into the next."""
    pieces = ["Ответ: ", "<think>hm</think>", "Ara", "хис ", "и Bub", "лик"]
    markup, script, preamble = MarkupFilter(), ScriptFixer(), PreambleFilter()
    by_hand = "".join(preamble.feed(script.feed(markup.feed(p))) for p in pieces)
    by_hand += preamble.feed(script.feed(markup.finish()) + script.finish()) + preamble.finish()
    assert through(pieces) == by_hand == "Арахис и Бублик"
    # what the markup filter still held at the end ("<t" could have become a tag) goes through
    # the script filter too, before that filter's own tail
    assert through(["Твою собаку зовут Bub", "лик <t"]) == "Твою собаку зовут Бублик <t"
