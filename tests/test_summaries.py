"""Rolling summaries (SPEC §8.3, §8.9; issue 12 item 2): chunks that end at an assistant message,
tiers 4 → 1 → long-term with a cap and folding, the verbatim list, the fidelity check (reject,
retry once, extractive fallback), coverage and invalidation, the place in the prompt, privacy,
and the worker giving way to a turn."""

from __future__ import annotations

import re

import pytest

from core import OWNER_IN_GROUP, OWNER_TRUSTED
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.summaries import FALLBACK, HEADER, INVALID, LONG_TERM, MERGED, OK, RECENT
from core.chat.summarizer import Summarizer, fold
from core.chat.summary_fidelity import dropped, fidelity, salient_terms
from core.chat.transcript import Transcript
from core.llm import ModelError
from tests.chat_kit import tui_message
from tests.fake_llm import ScriptedLLM

DAY = 86_400.0


class SummaryLLM(ScriptedLLM):
    """Summaries are made by ``summarise(prompt_text) -> dict`` (default: keep the quoted
    conversation's names and numbers in a short prose), or taken from ``plans`` when given."""

    def __init__(self, *a, summarise=None, **kw):
        super().__init__(*a, **kw)
        self.summarise = summarise
        self.summary_prompts: list[str] = []

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        if "summary" not in schema.get("properties", {}):
            return super().generate_json(messages, schema, timeout, max_tokens, cancel)
        prompt = messages[-1]["content"]
        self.summary_prompts.append(prompt)
        if self.plans:
            reply = self.plans.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply
        if self.summarise is not None:
            return self.summarise(prompt)
        body = prompt.split("The conversation:", 1)[-1].split("The summaries:", 1)[-1]
        terms = sorted(salient_terms(body))
        out = {"summary": "They talked about " + ", ".join(terms or ["small things"]) + "."}
        if "verbatim" in schema["properties"]:
            out["verbatim"] = terms[:3]
        return out


def fill(mem, chat_id, turns, *, private_ok=True, start_day=0.0, clock=None):
    """Store ``turns`` (user, reply) pairs in a chat; returns their ids."""
    tr = mem.attach(Transcript)
    ids = []
    for i, (u, a) in enumerate(turns):
        at = 1_780_000_000.0 + start_day * DAY + i * 60
        for role, text in (("user", u), ("assistant", a)):
            ids.append(
                tui_message(
                    tr,
                    f"t{start_day}-{i}",
                    role,
                    text,
                    chat_id=chat_id,
                    at=at,
                    tokens=len(text.split()),
                    private_ok=private_ok,
                    meta={"owner": True} if role == "user" else {},
                )
            )
    return ids


def make(mem, clock, model=None, **kw):
    conv = Conversation(mem, model or SummaryLLM(), config=ConversationConfig(learning=False))
    s = Summarizer(conv.summaries, conv.model, clock=clock, **kw)
    return conv, s


TURNS = [
    (f"I met Anna{i} at {10 + i} Baker street", f"Nice, Anna{i} sounds lovely!") for i in range(40)
]
# the memory step's answer over a chunk where the owner said where their sister lives and the
# turn saved nothing (here and in tests/faultkit.py's "summarise" scenario)
OLGA_PLAN = {
    "ops": [
        {
            "op": "save",
            "content": "My sister Olga lives in Riga",
            "kind": "fact",
            "importance": 3,
            "private": False,
        }
    ]
}


def test_salient_terms_are_mid_sentence_names_and_numbers():
    terms = salient_terms("Yesterday I met Lena in Kazan. She is 34. Then we ate.")
    assert terms == {"Lena", "Kazan", "34"}
    assert dropped("I met Lena in Kazan on 12 May", "Met Lena in Kazan") == ["12", "May"]
    assert fidelity("I met Lena in Kazan on 12 May", "Лена? no: Lena, Kazan, 12 May") == 1.0
    assert dropped("Hey Mel, how are you?", "Caroline greeted Melanie.") == []  # a short form
    assert dropped("We met Melanie", "They met Mel.") == ["Melanie"]  # not the other way round


def test_chunks_end_at_an_assistant_message_and_never_mix_privacy(mem, clock):
    conv, s = make(mem, clock, chunk_messages=4)
    ids = fill(mem, conv.chat_id, TURNS[:3])  # private_ok
    ids += fill(mem, conv.chat_id, TURNS[3:6], private_ok=False, start_day=1)
    pending = conv.summaries.unsummarised(conv.chat_id, ids[-1] + 1)
    first = s.chunk(pending)
    assert [m.id for m in first] == ids[:4] and first[-1].role == "assistant"
    second = s.chunk(pending[4:])
    assert [m.id for m in second] == ids[4:6]  # stops where the privacy changes
    assert all(m.private_ok for m in second)
    assert s.chunk(pending[:3]) == pending[:2]  # a trailing user message waits for its answer


def _slid_conversation(mem) -> tuple[SummaryLLM, Conversation]:
    """A conversation whose window has slid: 12 turns about Boris0..11 with a small context, the
    model's summary answers scripted (random hex, so no two are alike)."""
    import random

    rng = random.Random(5)
    replies = [["ok " + " ".join(f"{rng.getrandbits(30):x}" for _ in range(30))] for _ in range(30)]
    llm = SummaryLLM(replies, context_size=1024)
    conv = Conversation(mem, llm, config=ConversationConfig(learning=False))
    for i in range(12):
        list(conv.turn(f"My friend Boris{i} turned {20 + i} " + "w " * 25, OWNER_TRUSTED))
    return llm, conv


def test_what_left_the_window_is_summarised_and_placed_between_prefix_and_window(mem, clock):
    """§8.3: after the window slides, the messages that left it are summarised (not on the
    send path: ``summarise`` is called separately) and the block sits after the system prompt
    and before the live window."""
    llm, conv = _slid_conversation(mem)
    assert llm.summary_prompts == []  # turns never summarise
    results = conv.summarise()
    assert results and {r.action for r in results} == {"chunk"}
    left = {m.id for m in conv.summaries.left_window(conv.chat_id, conv.chat.window_start)}
    covered = {i for s in conv.summaries.active(conv.chat_id) for i in conv.summaries.covers(s.id)}
    assert left and covered == left
    list(conv.turn("what now?", OWNER_TRUSTED))
    msgs = llm.calls[-1]["messages"]
    assert msgs[0]["role"] == "system" and HEADER not in msgs[0]["content"]
    assert msgs[1]["role"] == "system" and msgs[1]["content"].startswith(HEADER)
    assert "Boris0" in msgs[1]["content"]
    assert msgs[2]["role"] == "user"  # the live window follows


def test_a_summary_that_drops_a_number_is_rejected_retried_then_kept(mem, clock):
    llm = SummaryLLM(
        plans=[
            {"summary": "The owner met Anna0 on Baker street.", "verbatim": []},
            {"summary": "The owner met Anna0 at 10 Baker street.", "verbatim": ["10 Baker street"]},
        ]
    )
    conv, s = make(mem, clock, llm)
    ids = fill(mem, conv.chat_id, TURNS[:1])
    r = s.step(conv.chat_id, ids[-1] + 1)
    assert (r.action, r.rejected, r.model_calls) == ("chunk", 1, 2)
    assert "dropped: 10" in llm.summary_prompts[1]  # the retry names what was missing
    assert r.summary.status == OK and r.summary.verbatim == ("10 Baker street",)


def test_twice_unfaithful_falls_back_to_an_extractive_summary_keeping_every_term(mem, clock):
    bad = {"summary": "They chatted about a friend.", "verbatim": []}
    llm = SummaryLLM(plans=[bad, bad])
    conv, s = make(mem, clock, llm)
    ids = fill(mem, conv.chat_id, TURNS[:2])
    r = s.step(conv.chat_id, ids[-1] + 1)
    assert r.summary.status == FALLBACK and r.rejected == 2
    src = "\n".join(t for pair in TURNS[:2] for t in pair)
    assert fidelity(src, r.summary.text()) == 1.0
    assert "Anna0" in r.summary.prose  # the source's own words


def test_a_model_failure_counts_as_a_rejection_and_falls_back(mem, clock):
    llm = SummaryLLM(plans=[ModelError("boom"), ModelError("boom")])
    conv, s = make(mem, clock, llm)
    ids = fill(mem, conv.chat_id, TURNS[:1])
    assert s.step(conv.chat_id, ids[-1] + 1).summary.status == FALLBACK


def test_tiers_four_recent_merge_then_four_merged_join_the_long_term(mem, clock):
    """§8.3: 4 recent → 1 merged; 4 merged → the long-term summary; coverage is the union and
    verbatim lists are joined as they are."""
    conv, s = make(mem, clock, chunk_messages=2)
    ids = fill(mem, conv.chat_id, TURNS[:16])
    results = s.run(conv.chat_id, ids[-1] + 1)
    actions = [r.action for r in results]
    assert actions.count("chunk") == 16 and actions.count("merge") == 4
    assert actions.count("long-term") == 1
    [lt] = conv.summaries.active(conv.chat_id)
    assert lt.tier == LONG_TERM and set(conv.summaries.covers(lt.id)) == set(ids)
    assert len(lt.prose.splitlines()) == 4 and lt.prose.startswith("2026-")
    assert "Anna0" in lt.text() and "Anna15" in lt.text()
    merged = [x for x in conv.summaries.all(conv.chat_id) if x.tier == MERGED]
    assert len(merged) == 4 and all(m.parent_id == lt.id for m in merged)


def test_long_term_past_its_cap_folds_oldest_lines_per_period():
    lines = [
        f"2026-0{m}-0{d}: The owner did thing {m}{d} with Anna. Then more details here."
        for m in (1, 2, 3)
        for d in (1, 2, 3)
    ]

    def over(ls):
        return sum(len(x) for x in ls) > 450

    out = fold(lines, over)
    assert not over(out)
    assert out[0].startswith("2026-01: ") and "thing 11" in out[0] and "thing 13" in out[0]
    assert out[-1] == lines[-1]  # the newest lines are kept as they were
    assert len(out) < len(lines)


def test_long_term_cap_is_held_by_detail_level(mem, clock, monkeypatch):
    from core.chat import summarizer

    monkeypatch.setitem(summarizer.LONG_TERM_CAP, "key", 120)
    conv, s = make(mem, clock, chunk_messages=2, detail_level="key")
    for day in range(8):  # 8 days: folding has periods to work with
        ids = fill(mem, conv.chat_id, TURNS[day * 4 : day * 4 + 4], start_day=day * 20)
    s.run(conv.chat_id, ids[-1] + 1)
    [lt] = [x for x in conv.summaries.active(conv.chat_id) if x.tier == LONG_TERM]
    assert lt.tokens <= 120
    assert any(re.match(r"^\d{4}(-\d{2})?: ", ln) for ln in lt.prose.splitlines())


def test_editing_a_covered_message_invalidates_its_summaries_and_they_are_redone(mem, clock):
    """§8.3 coverage: editing a covered message invalidates the summaries covering it (the
    merged parent too); the other parts come back; the worker summarises it again."""
    conv, s = make(mem, clock, chunk_messages=2)
    ids = fill(mem, conv.chat_id, TURNS[:4])
    s.run(conv.chat_id, ids[-1] + 1)
    [merged] = conv.summaries.active(conv.chat_id)
    assert merged.tier == MERGED
    tr = mem.attach(Transcript)
    tr.edit(ids[0], "I met Olga at 77 Baker street", clock.now())
    statuses = {x.id: x.status for x in conv.summaries.all(conv.chat_id)}
    assert statuses[merged.id] == INVALID
    back = conv.summaries.active(conv.chat_id)
    assert [x.tier for x in back] == [RECENT] * 3  # the three untouched chunks
    assert ids[0] not in {i for x in back for i in conv.summaries.covers(x.id)}
    s.run(conv.chat_id, ids[-1] + 1)
    [again] = conv.summaries.active(conv.chat_id)
    assert again.tier == MERGED and "Olga" in again.text() and "77" in again.text()


def test_regenerate_and_delete_invalidate_covering_summaries(mem, clock):
    conv, s = make(mem, clock, chunk_messages=2)
    ids = fill(mem, conv.chat_id, TURNS[:2])
    s.run(conv.chat_id, ids[-1] + 1)
    assert len(conv.summaries.active(conv.chat_id)) == 2
    tr = mem.attach(Transcript)
    tr.discard_answers("t0.0-0", clock.now())  # regenerate the first turn
    assert len(conv.summaries.active(conv.chat_id)) == 1
    tr.delete(ids[2], clock.now())
    assert conv.summaries.active(conv.chat_id) == []
    assert [m.id for m in conv.summaries.unsummarised(conv.chat_id, ids[-1] + 1)] == [
        ids[0],
        ids[3],
    ]


def test_rebuild_starts_over_and_is_resumable(mem, clock):
    conv, s = make(mem, clock, chunk_messages=2)
    ids = fill(mem, conv.chat_id, TURNS[:3])
    s.run(conv.chat_id, ids[-1] + 1)
    assert conv.summaries.rebuild(conv.chat_id, clock.now()) == 3
    p = s.progress(conv.chat_id, ids[-1] + 1)
    assert (p.left_window, p.unsummarised) == (6, 6)
    s.step(conv.chat_id, ids[-1] + 1)  # one step, then "the app closed"
    s2 = Summarizer(conv.summaries, conv.model, clock=clock, chunk_messages=2)
    assert s2.progress(conv.chat_id, ids[-1] + 1).unsummarised == 4
    s2.run(conv.chat_id, ids[-1] + 1)
    assert s2.progress(conv.chat_id, ids[-1] + 1).unsummarised == 0


def test_owner_edit_is_kept_as_written(mem, clock):
    conv, s = make(mem, clock)
    ids = fill(mem, conv.chat_id, TURNS[:1])
    r = s.step(conv.chat_id, ids[-1] + 1)
    e = conv.summaries.edit(r.summary.id, "My own words.", ["Anna0", " "], clock.now())
    assert (e.prose, e.verbatim, e.status) == ("My own words.", ("Anna0",), "edited")
    with pytest.raises(ValueError, match="empty"):
        conv.summaries.edit(r.summary.id, "  ", [], clock.now())


def test_a_private_summary_never_reaches_a_blind_turn(mem, clock):
    """§8.9: a summary of messages written where private memory was visible is private-only;
    a turn that cannot see private memory gets only the others."""
    conv, s = make(mem, clock, chunk_messages=2)
    ids = fill(mem, conv.chat_id, [("My zqdiag is asthma, says Doctor Zqhouse", "Noted.")])
    ids += fill(
        mem, conv.chat_id, [("We meet Pavel at 6", "See you there!")], private_ok=False, start_day=1
    )
    s.run(conv.chat_id, ids[-1] + 1)
    priv = [x for x in conv.summaries.active(conv.chat_id) if x.private]
    assert len(priv) == 1 and "Zqhouse" in priv[0].text()
    assert "Zqhouse" in conv.summary_block(OWNER_TRUSTED)
    blind = conv.summary_block(OWNER_IN_GROUP)
    assert "Pavel" in blind and "Zqhouse" not in blind and "zqdiag" not in blind


def test_a_new_summary_is_read_into_the_cache_before_the_next_turn(mem, clock):
    """Issue 12 (first token while summaries run): a new summary changes the prompt's prefix;
    the summariser reads the new prefix into the model's cache right after it, in the
    background, so the owner's next turn evaluates only its own message — measured on the
    default model without it: the whole window again, 25 s before the first token."""
    llm, conv = _slid_conversation(mem)
    warmed = len(llm.warmed)
    assert any(r.summary is not None for r in conv.summarise())
    assert len(llm.warmed) == warmed + 1
    block = " ".join(llm.warmed[-1])
    assert HEADER in block and "Boris0" in block  # the prefix with the new summary
    list(conv.turn("what now?", OWNER_TRUSTED))
    call = llm.calls[-1]
    own = len(llm.render([call["messages"][-1]]))
    assert call["evaluated"] <= own  # the rest came from the cache

    # idle with nothing new (the window that turn left read once already), or a turn
    # waiting for the model: no warm-up
    conv.summarise()
    warmed = len(llm.warmed)
    assert conv.summarise() == [] and len(llm.warmed) == warmed
    for i in range(6):
        list(conv.turn(f"My friend Gleb{i} turned {40 + i} " + "w " * 25, OWNER_TRUSTED))
    conv.summarizer.interrupt.set()
    try:
        assert [r.action for r in conv.summarise()] == ["paused"]
    finally:
        conv.summarizer.interrupt.clear()
    assert len(llm.warmed) == warmed


def test_a_window_that_slid_is_read_into_the_cache_before_the_next_turn(mem):
    """SPEC §8.2, issue 32 (first token): when the window overflows it slides, and the prompt's
    prefix changes right after the system prompt. The worker that runs after each turn (here
    with summaries off, so no new summary warms it up) reads the next turn's prefix into the
    model's cache when, and only when, the window will have slid — so that turn evaluates only
    its own message. Measured on bench.companion scenario e without it (default model, 2
    threads): 1164 tokens read again in the turn, 16 s before the first token."""
    import random

    rng = random.Random(7)
    replies = [["ok " + " ".join(f"{rng.getrandbits(30):x}" for _ in range(30))] for _ in range(20)]
    llm = ScriptedLLM(replies, context_size=1024)
    conv = Conversation(mem, llm, config=ConversationConfig(learning=False, summaries=False))
    slid = 0
    for i in range(14):
        will_slide = conv._last_ctx is not None and (
            conv.window(OWNER_TRUSTED).start != conv._window_start
        )
        warmed = len(llm.warmed)
        assert conv.summarise() == []
        assert len(llm.warmed) == warmed + will_slide
        assert conv.summarise() == [] and len(llm.warmed) == warmed + will_slide  # read once
        list(conv.turn(f"My friend Boris{i} turned {20 + i} " + "w " * 25, OWNER_TRUSTED))
        if will_slide:
            slid += 1
            call = llm.calls[-1]
            assert call["evaluated"] <= len(llm.render([call["messages"][-1]]))
    assert slid >= 2  # the window slid (more than once) in these turns


def test_a_turn_interrupts_the_worker_and_nothing_half_done_is_written(mem, clock):
    conv, s = make(mem, clock)
    ids = fill(mem, conv.chat_id, TURNS[:2])
    s.interrupt.set()
    r = s.step(conv.chat_id, ids[-1] + 1)
    assert r.action == "paused" and conv.summaries.all(conv.chat_id) == []
    s.interrupt.clear()
    assert s.step(conv.chat_id, ids[-1] + 1).action == "chunk"


def test_conversation_turn_sets_the_interrupt_while_it_runs(mem):
    seen = []
    llm = SummaryLLM([["hello"]])
    conv = Conversation(mem, llm, config=ConversationConfig(learning=False))
    summ = conv.summarizer
    llm.chunk_hook = lambda n: seen.append(summ.interrupt.is_set())
    list(conv.turn("hi", OWNER_TRUSTED))
    assert seen == [True] and not summ.interrupt.is_set()


def test_a_fact_the_turn_did_not_save_is_saved_before_it_scrolls_out(mem, clock):
    """Issue 12 item 3 (§8.9): the structured memory step runs over each chunk before it is
    summarised: a durable fact its turn did not save is saved (source dialogue, the message's
    turn id), while messages whose turn already saved, and others' words, are not re-read."""
    llm = SummaryLLM([OLGA_PLAN])  # the one memory-step answer
    conv = Conversation(mem, llm, config=ConversationConfig())  # learning, structured
    tr = mem.attach(Transcript)
    rows = [
        ("t1", "user", "My sister Olga lives in Riga", {"owner": True}),
        ("t1", "assistant", "How nice!", {"ops": []}),
        ("t2", "user", "My cat Murka is 3 years old", {"owner": True}),
        ("t2", "assistant", "Cute!", {"ops": [{"tool": "memory_save", "ok": True}]}),
        ("t3", "user", "I, Petr, live in Oslo", {"owner": False}),
        ("t3", "assistant", "Hi Petr!", {"ops": []}),
    ]
    ids = [
        tui_message(tr, t, role, text, chat_id=conv.chat_id, at=clock.now(), meta=meta)
        for t, role, text, meta in rows
    ]
    conv.chats.set_window_start(conv.chat_id, ids[-1] + 1)
    conv._window_start = ids[-1] + 1
    results = conv.summarise()
    assert results[0].action == "chunk" and results[0].saved == 1
    assert len(llm.json_calls) == 1  # only the first turn's message was re-read
    [rec] = mem.list()
    assert (rec.content, rec.source.value) == ("My sister Olga lives in Riga", "dialogue")
    row = mem._storage.query("SELECT source_turn FROM memories WHERE id = ?", (rec.id,))[0]
    assert row[0] == "t1"
    assert tr.chat_history(conv.chat_id)[0].meta.get("kept_on_leaving") is True


def test_learning_off_reads_nothing_into_memory_on_the_way_out(mem, clock):
    llm = SummaryLLM()
    conv = Conversation(mem, llm, config=ConversationConfig(learning=False))
    ids = fill(mem, conv.chat_id, [("My sister Olga lives in Riga", "How nice!")])
    conv._window_start = ids[-1] + 1
    conv.summarise()
    assert llm.json_calls == [] and mem.count() == 0
    assert len(conv.summaries.active(conv.chat_id)) == 1


def test_a_message_edited_while_its_chunk_is_summarised_makes_the_step_stale(mem, clock):
    """Coverage stays true under concurrency: the owner edits a message while the worker is
    summarising it — the stale summary is not written, and the next step summarises the new
    text."""
    tr = mem.attach(Transcript)
    ids: list[int] = []
    edited = []

    def summarise(prompt):
        if not edited:
            edited.append(True)
            tr.edit(ids[0], "I met Olga at 77 Baker street", clock.now())
        return {
            "summary": "Summary of: " + prompt.split("The conversation:")[-1][-200:],
            "verbatim": sorted(salient_terms(prompt.split("The conversation:")[-1])),
        }

    conv, s = make(mem, clock, SummaryLLM(summarise=summarise))
    ids += fill(mem, conv.chat_id, TURNS[:1])
    assert s.step(conv.chat_id, ids[-1] + 1).action == "stale"
    assert conv.summaries.all(conv.chat_id) == []
    r = s.step(conv.chat_id, ids[-1] + 1)
    assert r.action == "chunk" and "Olga" in r.summary.text()
