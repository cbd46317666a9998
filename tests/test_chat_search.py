"""Issue 28 item 6 / SPEC §8.12 ("she … searches every chat"): the message search the owner
uses, and the pages of older messages the chat loads as she scrolls up."""

from __future__ import annotations

import pytest

from core import ManualClock, Memory, MemoryConfig
from core.chat.chats import Chats
from core.chat.search import MARK_END, MARK_START, queries
from core.chat.transcript import Transcript
from tests.chat_kit import tui_message

T0 = 1_780_000_000.0


@pytest.fixture
def store():
    mem = Memory.open(":memory:", MemoryConfig(), ManualClock(T0))
    yield mem, mem.attach(Chats), mem.attach(Transcript)
    mem.close()


def say(
    tr: Transcript,
    chat: int,
    text: str,
    role: str = "user",
    private_ok: bool = True,
    k: list[int] = [0],  # noqa: B006 - a counter shared on purpose
) -> int:
    k[0] += 1
    return tui_message(
        tr, f"t{k[0]}", role, text, chat_id=chat, at=T0 + k[0], tokens=3, private_ok=private_ok
    )


def ids(hits) -> list[int]:
    return [h.message_id for h in hits]


def test_search_finds_russian_and_english_in_any_case_across_chats(store):
    """Issue 28 item 6: FTS5 over every chat, Russian and English, any case; "ё" = "е"."""
    _mem, chats, tr = store
    a = chats.create("default", "tui", T0, "Дом").id
    b = chats.create("work", "tui", T0).id
    cat = say(tr, a, "Мой КОТ Пирожок спит на диване")
    tree = say(tr, b, "Купили ёлку", role="assistant")
    eng = say(tr, b, "The Quarterly REPORT is due Friday")
    say(tr, a, "Совсем другое сообщение")
    assert ids(tr.search("пирожок")) == [cat]
    assert ids(tr.search("ПИРОЖОК")) == [cat]
    assert ids(tr.search("елку")) == [tree]
    assert ids(tr.search("quarterly report")) == [eng]
    [hit] = tr.search("report")
    assert (hit.chat_id, hit.role, hit.persona) == (b, "user", "work")
    assert f"{MARK_START}REPORT{MARK_END}" in hit.snippet
    assert hit.chat_label == "The Quarterly REPORT is due Friday"  # unnamed: its first words
    assert tr.search("пирожок")[0].chat_label == "Дом"


def test_a_word_finds_its_other_forms_and_exact_words_come_first(store):
    """Issue 28 item 6 ("кот" finds "кота"/"котом"): a word is also looked for by its stem;
    the word itself ranks first, other forms next, words that merely start alike last."""
    _mem, chats, tr = store
    c = chats.create("default", "tui", T0).id
    exact = say(tr, c, "Кот спит")
    form = say(tr, c, "Я гуляла с котом")
    other = say(tr, c, "Который час?")
    form2 = say(tr, c, "Нет кота дома")
    assert ids(tr.search("кот")) == [exact, form2, form, other]
    k = say(tr, c, "Кошка спит")
    assert ids(tr.search("кошки")) == [k]
    e = say(tr, c, "Happy cats are everywhere")
    assert ids(tr.search("happy cat")) == [e]


def test_owner_text_is_never_search_syntax(store):
    """Bad input loses nothing and raises nothing: quotes, stars, AND/NEAR are words."""
    _mem, chats, tr = store
    c = chats.create("default", "tui", T0).id
    m = say(tr, c, 'She said "AND" twice')
    for q in ['"', "*", "AND", "NEAR(", 'a"b', "(", "-", "   ", "", "^x", "кот OR"]:
        tr.search(q)  # no exception
    assert ids(tr.search('"AND"')) == [m]
    assert queries("   ") is None and queries("!!!") is None


def test_search_skips_deleted_discarded_archived_and_hides_private_when_asked(store):
    """Deleted messages, discarded answers and archived chats are not found; an edit is found
    by its new words only; a caller that cannot see private memory (SPEC §1) finds only the
    messages written where it was hidden."""
    _mem, chats, tr = store
    c = chats.create("default", "tui", T0).id
    gone = chats.create("default", "tui", T0).id
    kept = say(tr, c, "банан первый")
    deleted = say(tr, c, "банан второй")
    public = say(tr, c, "банан публичный", private_ok=False)
    answer = say(tr, c, "банан ответ", role="assistant")
    say(tr, gone, "банан в удалённом чате")
    tr.delete(deleted, T0)
    tr.discard_answers(tr.message(answer).turn_id, T0)
    chats.archive(gone, T0)
    assert ids(tr.search("банан")) == [public, kept]
    assert ids(tr.search("банан", sees_private=False)) == [public]
    tr.edit(kept, "апельсин первый", T0)
    assert ids(tr.search("банан")) == [public]
    assert ids(tr.search("апельсин")) == [kept]


def test_pages_of_older_messages_and_a_chat_opened_at_a_hit(store):
    """Issue 28 item 6: older messages page in as the owner scrolls up (each page just before
    the oldest shown, oldest first); a hit opens with its context and what follows it."""
    _mem, chats, tr = store
    c = chats.create("default", "tui", T0).id
    other = chats.create("default", "tui", T0).id
    made = [say(tr, c, f"message {i}") for i in range(250)]
    say(tr, other, "not this chat")
    last = tr.chat_history(c, limit=100)
    assert [m.id for m in last] == made[-100:]
    older = tr.page(c, before=last[0].id, limit=100)
    assert [m.id for m in older] == made[50:150]
    assert [m.id for m in tr.page(c, before=older[0].id, limit=100)] == made[:50]
    assert tr.page(c, before=made[0], limit=100) == []
    assert [m.id for m in tr.page(c, after=made[10], upto=made[14])] == made[11:15]
    shown, more = tr.around(c, made[100], context=10, most=500)
    assert [m.id for m in shown] == made[90:] and not more
    shown, more = tr.around(c, made[100], context=10, most=50)
    assert [m.id for m in shown] == made[90:140] and more
    assert tr.message(made[3], chat_id=other) is None and tr.message(made[3], chat_id=c)


def test_bench_reports_search_latency_and_import_time():
    """Issue 28 targets: ``python -m bench.chat_search`` prints p50/p95 over its messages and
    queries, and the seconds a ChatGPT export takes to import (tiny sizes here: no timing
    check, only that it measures what it promises)."""
    from bench import chat_search

    res = chat_search.run(messages=600, queries=12, import_messages=300)
    assert res["messages"] == 600 and res["queries"] == 12
    assert 0 < res["p50_ms"] <= res["p95_ms"] <= res["max_ms"]
    assert res["queries_with_hits"] >= 8  # built from the messages' own words
    assert res["import_messages"] == 300 and res["import_seconds"] > 0
    assert set(res["targets"]) == {"search_p95_ms", "import_seconds"}
