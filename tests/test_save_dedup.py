"""memory_save with dedup, and argument validation of the writing operations (SPEC §3.2)."""

from __future__ import annotations

import pytest

from core import (
    OWNER_TRUSTED,
    OWNER_UNTRUSTED,
    Actor,
    Kind,
    Memory,
    MemoryOpError,
    NotFound,
    Refused,
)
from core.config import DAY

FRUIT = [
    "apple",
    "banana",
    "cherry",
    "dates",
    "elderberry",
    "figs",
    "grapes",
    "honeydew",
    "kiwi",
    "lemon",
]


def rows(mem: Memory) -> dict[str, int]:
    """Row counts of every table a memory write touches."""
    return {
        t: mem._storage.query(f"SELECT COUNT(*) FROM {t}")[0][0]
        for t in ("memories", "accesses", "changes", "vectors", "meta")
    }


def snapshot(mem: Memory) -> list[tuple]:
    return [tuple(r) for r in mem._storage.query("SELECT * FROM memories ORDER BY id")]


def test_jaccard_at_threshold_reinforces_instead_of_creating(mem):
    """SPEC §3.2: a stem-set Jaccard ≥ 0.7 (exactly 7/10 here) reinforces the existing record
    and creates nothing."""
    old = mem.save("Fruit list: " + " ".join(FRUIT)).id
    n = mem.count()
    res = mem.save("Fruit list: " + " ".join(FRUIT[:7]) + " and more")  # 8 of 11 stems → 8/11
    assert res.id == old and res.status in {"reinforced", "updated"}
    assert mem.count() == n


def test_jaccard_exactly_point_seven_is_a_duplicate(mem):
    """SPEC §3.2: the threshold is inclusive (≥ 0.7)."""
    old = mem.save(" ".join(FRUIT)).id  # 10 stems
    res = mem.save(" ".join(FRUIT[:7]))  # 7 stems, all shared: 7/10
    assert res.id == old and res.status == "reinforced"
    assert mem.count() == 1


def test_jaccard_below_threshold_creates_a_new_record(mem):
    """SPEC §3.2: below 0.7 the new text is a new memory."""
    old = mem.save(" ".join(FRUIT)).id
    res = mem.save(" ".join(FRUIT[:6]))  # 6/10
    assert res.status == "created" and res.id != old
    assert mem.count() == 2


def test_more_detailed_wording_replaces_the_content(mem, clock):
    """SPEC §3.2: "meeting at 3 pm" → "meeting on Friday at 3 pm" is the same memory; the more
    detailed wording (more distinct stems) replaces the content, the id stays."""
    old = mem.save("meeting at 3 pm", kind="event", importance=4)
    clock.advance(DAY)
    res = mem.save("meeting on Friday at 3 pm", kind="event", importance=4)
    assert res.id == old.id and res.status == "updated"
    r = mem.get(old.id)
    assert r.content == "meeting on Friday at 3 pm"
    assert r.updated_at == clock.now() and r.created_at == old.record.created_at
    assert r.access_count == 1
    assert mem.count() == 1
    assert [h.id for h in mem.recall("Friday", OWNER_TRUSTED)] == [old.id]  # index in step


def test_less_detailed_wording_keeps_the_old_content(mem, clock):
    """SPEC §3.2: a less detailed wording reinforces and keeps the existing content."""
    old = mem.save("meeting on Friday at 3 pm").id
    clock.advance(DAY)
    res = mem.save("meeting at 3 pm")
    assert res.id == old and res.status == "reinforced"
    r = mem.get(old)
    assert r.content == "meeting on Friday at 3 pm"
    assert r.access_count == 1 and r.last_access_at == clock.now()


def test_equally_detailed_wording_keeps_the_old_content(mem):
    """SPEC §3.2: only *more* detail replaces; the same stems in other words keep the old."""
    old = mem.save("The owner loves cats").id
    res = mem.save("owner loved the cat")
    assert res.id == old and res.status == "reinforced"
    assert mem.get(old).content == "The owner loves cats"


def test_different_numbers_are_not_duplicates(mem):
    """SPEC §3.2: numbers are significant tokens — "3 pm" and "5 pm" are two memories even
    though the words alone would pass the threshold."""
    a = mem.save("Dentist appointment on Friday at 3 pm with Dr Smith").id
    res = mem.save("Dentist appointment on Friday at 5 pm with Dr Smith")
    assert res.status == "created" and res.id != a
    assert mem.count() == 2
    assert mem.get(a).content.endswith("3 pm with Dr Smith")
    assert a in [s.id for s in res.similar]  # and the contradiction is shown


def test_answer_lists_similar_records_with_id_kind_age_and_content(mem, clock):
    """SPEC §3.2: the answer always lists the few most similar records (id, kind, age,
    content) — the moment of writing is the only one where a contradiction is visible."""
    old = mem.save("The owner's sister Anna lives in Kazan", kind="fact").id
    clock.advance(3 * DAY)
    res = mem.save("Anna moved from Kazan to Moscow", kind="event")
    assert res.status == "created"
    (s,) = [s for s in res.similar if s.id == old]
    assert (s.id, s.kind, s.age, s.content) == (
        old,
        Kind.FACT,
        "3d",
        "The owner's sister Anna lives in Kazan",
    )
    assert res.id not in [s.id for s in res.similar]  # not itself
    assert len(res.similar) <= mem.config.similar_on_save


def test_similar_records_are_limited_to_similar_on_save(mem):
    """SPEC §3.2: "the few most similar" — at most memory.similar_on_save."""
    for city in ["Kazan", "Moscow", "Sochi", "Omsk", "Tver", "Perm"]:
        mem.save(f"Anna travelled to {city} by train")
    res = mem.save("Anna likes travelling by train")
    assert 1 <= len(res.similar) <= mem.config.similar_on_save == 3


def test_similar_records_are_only_those_visible_to_the_audience(mem):
    """SPEC §1, §3.2: the similar list after a save never shows what this audience may not
    see — no private records outside the owner's private trusted turns."""
    priv = mem.save("Anna's diagnosis is asthma", private=True).id
    pub = mem.save("Anna likes swimming").id
    res = mem.save("Anna goes swimming despite asthma", OWNER_UNTRUSTED)
    assert res.status == "created"
    assert pub in [s.id for s in res.similar]
    assert priv not in [s.id for s in res.similar]
    res2 = mem.save("Anna's asthma and swimming schedule", OWNER_TRUSTED)
    assert priv in [s.id for s in res2.similar]


def test_similar_records_include_dedup_neighbours_not_the_target(mem):
    """SPEC §3.2: a reinforcing save also lists the other similar records."""
    target = mem.save("meeting on Friday at 3 pm").id
    neighbour = mem.save("meeting with the accountant on Friday").id
    res = mem.save("meeting at 3 pm")
    assert res.id == target and res.status == "reinforced"
    assert neighbour in [s.id for s in res.similar]
    assert target not in [s.id for s in res.similar]


def test_dedup_hit_on_a_pinned_record_reinforces_only(mem):
    """SPEC §2, §3.2: pinned is never edited by the model — a more detailed duplicate only
    reinforces it (content, flags untouched)."""
    rid = mem.save("meeting at 3 pm", actor=Actor.OWNER).id
    mem.pin(rid)
    before = mem.get(rid)
    res = mem.save("meeting on Friday at 3 pm", private=True)
    assert res.id == rid and res.status == "reinforced"
    r = mem.get(rid)
    assert r.content == "meeting at 3 pm" and r.private is False and r.pinned
    assert r.updated_at == before.updated_at
    assert r.access_count == before.access_count + 1
    assert mem.count() == 1


def test_dedup_may_mark_private_but_never_unmarks(mem):
    """SPEC §2: the model may set private; a duplicate saved as private makes the record private,
    and a duplicate saved as not private leaves a private record private."""
    a = mem.save("Anna takes insulin every morning").id
    mem.save("Anna takes insulin every morning", private=True)
    assert mem.get(a).private is True
    mem.save("Anna takes insulin every morning", private=False)
    assert mem.get(a).private is True


def test_the_most_similar_record_is_the_dedup_target(mem):
    """SPEC §3.2: with several records over the threshold, the closest one is reinforced."""
    close = mem.save(" ".join(FRUIT)).id  # 10 stems
    far = mem.save("placeholder about violins").id
    # memory_update does not dedup: two near-duplicates can coexist
    mem.update(far, OWNER_TRUSTED, content=" ".join(FRUIT[:8]) + " mango")  # 9 stems
    res = mem.save(" ".join(FRUIT[:9]))  # J(close) = 9/10, J(far) = 8/10
    assert res.id == close != far


def test_dedup_in_a_turn_that_cannot_see_the_record_does_not_reinforce_it(mem):
    """SPEC §1: a private record is absent for non-private turns — a save there neither
    reinforces it nor reveals it (reinforcing would confirm it exists)."""
    priv = mem.save("Anna takes insulin every morning", private=True).id
    res = mem.save("Anna takes insulin every morning", OWNER_UNTRUSTED)
    assert res.id != priv and res.status == "created"
    assert mem.get(priv).access_count == 0
    assert priv not in [s.id for s in res.similar]


def test_save_at_exactly_max_chars_is_accepted(mem):
    """SPEC §2: content is at most memory.max_chars (500) characters — 500 is fine."""
    content = ("word " * 100)[:500]
    content = content[:-1] + "x"
    assert len(content) == 500
    assert mem.save(content).status == "created"


SAVE_BAD = [
    pytest.param({"content": ""}, "empty", id="empty-text"),
    pytest.param({"content": "   \n\t"}, "empty", id="blank-text"),
    pytest.param({"content": None}, "text", id="none-text"),
    pytest.param({"content": "x" * 501}, "501", id="over-max-chars"),
    pytest.param({"importance": 9}, "1 to 5", id="importance-9"),
    pytest.param({"importance": 0}, "1 to 5", id="importance-0"),
    pytest.param({"importance": "high"}, "1 to 5", id="importance-high"),
    pytest.param({"importance": 2.5}, "1 to 5", id="importance-2.5"),
    pytest.param({"importance": True}, "1 to 5", id="importance-bool"),
    pytest.param({"kind": "memo"}, "core, fact, event", id="kind-memo"),
    pytest.param({"private": "maybe"}, "true or false", id="private-maybe"),
]


@pytest.mark.parametrize(("override", "says"), SAVE_BAD)
def test_bad_save_arguments_write_nothing(mem, override, says):
    """SPEC §3.2: bad arguments get a clear error the model can read; nothing is written."""
    mem.save("Existing memory about the garden")
    before, snap = rows(mem), snapshot(mem)
    args = {"content": "The owner's cat is called Murka", "kind": "fact", "importance": 3}
    args.update(override)
    with pytest.raises(MemoryOpError) as e:
        mem.save(args.pop("content"), OWNER_TRUSTED, **args)
    assert says in str(e.value)
    assert rows(mem) == before and snapshot(mem) == snap


def test_model_cannot_save_pinned(mem):
    """SPEC §2: only the owner pins; a model's pinned save is refused, nothing written."""
    before = rows(mem)
    with pytest.raises(Refused):
        mem.save("Owner's name is Lena", pinned=True)
    assert rows(mem) == before


@pytest.mark.parametrize(
    ("rid", "fields", "error"),
    [
        pytest.param(999, {"importance": 4}, NotFound, id="unknown-id"),
        pytest.param("abc", {"importance": 4}, MemoryOpError, id="id-not-a-number"),
        pytest.param(None, {"content": ""}, MemoryOpError, id="empty-text"),
        pytest.param(None, {"content": "y" * 501}, MemoryOpError, id="over-max-chars"),
        pytest.param(None, {"importance": 9}, MemoryOpError, id="importance-9"),
        pytest.param(None, {"importance": "high"}, MemoryOpError, id="importance-high"),
        pytest.param(None, {"kind": "memo"}, MemoryOpError, id="kind-memo"),
        pytest.param(None, {}, MemoryOpError, id="nothing-to-change"),
        pytest.param("pinned", {"importance": 1}, Refused, id="pinned-target"),
    ],
)
def test_bad_update_arguments_write_nothing(mem, rid, fields, error):
    """SPEC §3.2: unknown id, empty text, importance 9, text over the limit, a pinned target —
    a clear error and nothing half-written."""
    live = mem.save("The owner's cat is called Murka").id
    pinned = mem.save("Owner's name is Lena", kind="core", actor=Actor.OWNER).id
    mem.pin(pinned)
    target = {None: live, "pinned": pinned}.get(rid, rid)
    before, snap = rows(mem), snapshot(mem)
    with pytest.raises(error) as e:
        mem.update(target, OWNER_TRUSTED, **fields)
    assert str(e.value)
    assert rows(mem) == before and snapshot(mem) == snap


@pytest.mark.parametrize(
    ("rid", "why", "error"),
    [
        pytest.param(999, "outdated", NotFound, id="unknown-id"),
        pytest.param(None, "", MemoryOpError, id="empty-why"),
        pytest.param("pinned", "outdated", Refused, id="pinned-target"),
        pytest.param("archived", "again", NotFound, id="already-archived"),
    ],
)
def test_bad_forget_arguments_write_nothing(mem, rid, why, error):
    """SPEC §3.2: forgetting an unknown, pinned or already archived record is a clear error."""
    live = mem.save("The owner's cat is called Murka").id
    pinned = mem.save("Owner's name is Lena", kind="core", actor=Actor.OWNER).id
    mem.pin(pinned)
    gone = mem.save("Owner used to live in Omsk").id
    mem.forget(gone, "moved", OWNER_TRUSTED)
    target = {None: live, "pinned": pinned, "archived": gone}.get(rid, rid)
    before, snap = rows(mem), snapshot(mem)
    with pytest.raises(error):
        mem.forget(target, why, OWNER_TRUSTED)
    assert rows(mem) == before and snapshot(mem) == snap


def test_errors_do_not_confirm_a_hidden_private_record(mem):
    """SPEC §1: to a turn that may not see it, a private record does not exist — the error
    is the same as for an unknown id."""
    priv = mem.save("Anna's diagnosis is asthma", private=True).id
    with pytest.raises(NotFound) as hidden:
        mem.update(priv, OWNER_UNTRUSTED, importance=5)
    with pytest.raises(NotFound) as unknown:
        mem.update(999, OWNER_UNTRUSTED, importance=5)
    assert str(hidden.value).replace(str(priv), "N") == str(unknown.value).replace("999", "N")
    assert "asthma" not in str(hidden.value)


def test_a_save_stems_and_detects_the_language_of_its_text_once(mem, monkeypatch):
    """Issue 11 (speed): a save scores its text once — dedup, the insert, the index and the
    similar records after it share one tokenisation and one language detection of the text."""
    from core import language, text

    mem.save("Owner's sister Anna lives in Kazan")
    mem.save("Owner's brother Oleg lives in Moscow")
    content = "Owner's cousin Vera lives in Kazan too"
    tokenised = []
    real_tokens = text.tokens

    def tokens(t):
        tokenised.append(t)
        return real_tokens(t)

    monkeypatch.setattr(text, "tokens", tokens)
    detections = language.word_counts.cache_info().misses
    res = mem.save(content)
    assert res.status == "created" and res.similar  # dedup ran, and similar records were found
    assert tokenised.count(content) == 1
    assert language.word_counts.cache_info().misses - detections == 1


def test_a_save_scores_its_text_once(mem, monkeypatch):
    """Issue 11: `save` scores its text once — the dedup check and the similar records listed
    in its answer come from one BM25 pass over the store (it was two)."""
    from core.recall.lexical import LexicalIndex

    mem.save("The owner's sister Anna lives in Kazan")
    mem.save("Anna works as a nurse in a Kazan hospital")
    calls = []
    real = LexicalIndex.scores
    monkeypatch.setattr(
        LexicalIndex, "scores", lambda self, stems: calls.append(stems) or real(self, stems)
    )
    res = mem.save("Anna moved from Kazan to Moscow")
    assert res.status == "created" and len(res.similar) == 2
    assert len(calls) == 1
