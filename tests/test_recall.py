"""Recall (SPEC §4): score = relevance × freshness × importance/3 × frequency bonus, top-k, a
relative floor, core excluded, reinforcement only by explicit search and dedup, scopes."""

from __future__ import annotations

import math

import pytest

from core import OWNER_TRUSTED, OWNER_UNTRUSTED, Kind, Memory, MemoryConfig, TurnContext, text
from core.config import DAY
from core.recall.score import frequency_bonus, freshness
from tests.fakes import reference_bm25

HALF_LIFE = 30 * DAY
F = MemoryConfig().freshness_floor  # what an old, unused record keeps (0.8, chosen on LoCoMo)


def _open(tmp_path, clock, name: str = "m.db", **cfg) -> Memory:
    return Memory.open(tmp_path / name, MemoryConfig(**cfg), clock)


def hand_relevance(mem: Memory, query: str, rid: int) -> float:
    """BM25 of the record computed from the formula (tests.fakes.reference_bm25) over every live
    record, divided by the index's per-query normaliser and clipped to 1."""
    docs = {r.id: text.stems(r.content) for r in mem.list(limit=10_000)}
    qs = text.stems(query)
    raw = reference_bm25(docs, qs)[rid]
    return min(1.0, raw / mem._index.lexical.ceiling(qs))


def hand_score(mem: Memory, query: str, rid: int, now: float) -> float:
    """SPEC §4, written out: relevance × (F + (1 − F) × 0.5^(age/half_life)) × (importance/3)
    × min(1.5, 1 + 0.1 × ln(1 + n)); age from the last access (creation if never accessed);
    events use a quarter of the fact half-life."""
    r = mem.get(rid)
    since = r.last_access_at if r.last_access_at is not None else r.created_at
    hl = HALF_LIFE / 4 if r.kind is Kind.EVENT else HALF_LIFE
    fresh = F + (1 - F) * 0.5 ** ((now - since) / hl)
    bonus = min(1.5, 1 + 0.1 * math.log(1 + r.access_count))
    return hand_relevance(mem, query, rid) * fresh * (r.importance / 3) * bonus


def test_score_formula_matches_hand_computation(tmp_path, clock):
    """SPEC §4: Hit.score = relevance × freshness × importance/3 × frequency bonus, checked
    number by number for records of different kinds, ages, weights and reinforcement."""
    mem = _open(tmp_path, clock, recall_floor=0.0)
    t0 = clock.now()
    a = mem.save("The owner's sister Anna lives in Kazan", kind="fact", importance=3).id
    clock.advance(10 * DAY)
    b = mem.save("Anna visited the owner in Moscow last weekend", kind="event", importance=4).id
    clock.advance(10 * DAY)
    c = mem.save("Anna's birthday is on the third of March", kind="fact", importance=5).id
    d = mem.save("Anna does not eat mushrooms", kind="fact", importance=1).id
    clock.advance(5 * DAY)
    assert [h.record.id for h in mem.search("birthday")] == [c]  # reinforces c at t0 + 25d
    clock.advance(15 * DAY)
    now = clock.now()
    assert now == t0 + 40 * DAY
    hits = {h.id: h for h in mem.recall("Anna", OWNER_TRUSTED)}
    assert set(hits) == {a, b, c, d}
    for rid in (a, b, c, d):
        assert hits[rid].score == pytest.approx(hand_score(mem, "Anna", rid, now), rel=1e-6)
        assert hits[rid].relevance == pytest.approx(hand_relevance(mem, "Anna", rid), rel=1e-6)
    # one of them fully by hand, to pin the constants down
    rc = mem.get(c)
    assert rc.access_count == 1 and rc.last_access_at == t0 + 25 * DAY
    expected_c = (
        hits[c].relevance * (F + (1 - F) * 0.5 ** (15 / 30)) * (5 / 3) * (1 + 0.1 * math.log(2))
    )
    assert hits[c].score == pytest.approx(expected_c, rel=1e-9)
    mem.close()


def test_the_score_factors_kept_per_record_follow_every_change(tmp_path, clock):
    """SPEC §4: recall gathers each record's importance/3 and frequency bonus from columns kept
    beside its fields; they follow a save, a search's reinforcement, an edit, a rollback and a
    reopening (persisted index or rebuild), and the scores are the formula's, bit for bit."""
    from core.recall.file import snapshot_path
    from core.recall.score import score

    path = tmp_path / "m.db"

    def check(mem: Memory) -> None:
        cols, now = mem._index.columns, clock.now()
        hits = mem.recall("Anna", OWNER_TRUSTED)
        assert hits
        for h in hits:
            r = mem.get(h.id)
            assert cols.importance_share[h.id] == r.importance / 3
            assert cols.bonus[h.id] == frequency_bonus(r.access_count)
            assert cols.weight[h.id] == cols.importance_share[h.id] * cols.bonus[h.id]
            hl = HALF_LIFE / 4 if r.kind is Kind.EVENT else HALF_LIFE
            assert h.score == score(
                h.relevance, now - r.recalled_at, hl, r.importance, r.access_count, F
            )

    mem = Memory.open(path, MemoryConfig(), clock)
    a = mem.save("The owner's sister Anna lives in Kazan", importance=2).id
    mem.save("Anna visited the owner in Moscow", kind="event", importance=4)
    for turn in ("t1", "t2", "t3"):
        clock.advance(DAY)
        mem.search("Anna Kazan", OWNER_TRUSTED.with_turn(turn))
    check(mem)
    mem.rollback_turn("t3")
    assert mem.get(a).access_count == 2
    mem.update(a, OWNER_TRUSTED, importance=5)
    check(mem)
    mem.close()
    for rebuild in (False, True):
        if rebuild:
            snapshot_path(path).unlink()
        with Memory.open(path, MemoryConfig(), clock) as mem:
            assert mem._index.loaded_from == ("store" if rebuild else "snapshot")
            check(mem)


def test_only_records_that_can_reach_the_top_k_get_a_freshness(tmp_path, clock, monkeypatch):
    """SPEC §4: freshness lies between the floor and 1, so a candidate whose score without it
    falls below the k-th best lower bound is never selected — recall does not compute its
    freshness (the costly part at 100k candidates), and the selection is exactly the one of
    scoring every candidate (same ids, same scores, same order, floor included)."""
    from core.recall.score import Columns, score, select

    mem = _open(tmp_path, clock, recall_floor=0.0)
    for i in range(300):
        clock.advance(DAY / 3)
        mem.save(
            f"Anna note {i}: " + " ".join(["garden"] * (1 + i % 4) + [f"w{i}"]),
            kind="event" if i % 3 else "fact",
            importance=1 + i % 5,
        )
    for i in range(0, 300, 7):
        mem.search(f"w{i}")  # some reinforced, at various moments
        clock.advance(DAY)
    seen: list[int] = []
    inner = Columns.score

    def spy(self, ids, rel, now, floor):
        seen.append(len(ids))
        return inner(self, ids, rel, now, floor)

    monkeypatch.setattr(Columns, "score", spy)
    for query in ("Anna garden", "garden", "note garden w14"):
        for k in (1, 8, 20):
            seen.clear()
            hits = mem._index.recall(query, OWNER_TRUSTED, k, clock.now())
            ids, rel, _lex, _sem = mem._index.relevance(query)
            c = mem._index.columns
            full = score(
                rel,
                clock.now() - c.recalled_at[ids],
                c.half_life[ids],
                c.importance[ids],
                c.reinforcements[ids],
                F,
            )
            keep = select(ids, full, k, 0.0)
            assert [(h.id, h.score) for h in hits] == [(int(ids[i]), float(full[i])) for i in keep]
            assert len(ids) >= 290 and seen[0] < len(ids) // 2


def test_results_are_best_first(mem, clock):
    """SPEC §4: the selection is ordered by score, best first."""
    for i, imp in enumerate([1, 5, 3, 2, 4]):
        mem.save(
            f"Anna's hobby number {i}: {['chess', 'yoga', 'golf', 'tennis', 'darts'][i]}",
            importance=imp,
        )
    scores = [h.score for h in mem.recall("Anna hobby", OWNER_TRUSTED)]
    assert scores == sorted(scores, reverse=True) and len(scores) == 5


def test_age_is_measured_from_last_access(mem, clock):
    """SPEC §2, §4: age runs from the last access — an old but recently reinforced record beats
    an identical never-accessed one, and a never-accessed one ages from its creation."""
    t0 = clock.now()
    a = mem.save("The owner's dog is called Rex", importance=3).id
    b = mem.save("The owner's parrot is called Kesha", importance=3).id
    clock.advance(100 * DAY)
    assert [h.record.id for h in mem.search("Rex")] == [a]  # reinforce a, not b
    mem.update(b, OWNER_TRUSTED, content="The owner's dog is called Rex")  # same words as a
    clock.advance(1 * DAY)
    now = clock.now()
    hits = {h.id: h for h in mem.recall("dog Rex", OWNER_TRUSTED)}
    assert hits[a].relevance == pytest.approx(hits[b].relevance)
    assert hits[a].score > hits[b].score
    # a: 1 day since its access (and one reinforcement); b: 101 days since creation — its
    # update at day 100 is not an access
    rel = hits[a].relevance
    assert hits[a].score == pytest.approx(
        rel * (F + (1 - F) * 0.5 ** (1 / 30)) * (1 + 0.1 * math.log(2)), rel=1e-9
    )
    assert hits[b].score == pytest.approx(rel * (F + (1 - F) * 0.5 ** (101 / 30)), rel=1e-9)
    assert mem.get(b).created_at == t0
    assert hits[b].score == pytest.approx(hand_score(mem, "dog Rex", b, now), rel=1e-6)


def test_event_half_life_is_a_quarter_of_the_fact_half_life(mem, clock):
    """SPEC §2, §4: an event fades 4× faster — at the same age its freshness is exactly that
    of a fact four times older."""
    fact = mem.save("The owner's piano is a Yamaha upright", kind="fact").id
    event = mem.save("The owner played the piano at a school concert", kind="event").id
    clock.advance(7.5 * DAY)  # one event half-life, a quarter of a fact's
    hits = {h.id: h for h in mem.recall("piano", OWNER_TRUSTED)}

    def fresh(h):  # importance 3 → ×1, never reinforced → bonus 1
        return h.score / h.relevance

    assert fresh(hits[event]) == pytest.approx(F + (1 - F) * 0.5, rel=1e-9)
    assert fresh(hits[fact]) == pytest.approx(F + (1 - F) * 0.5**0.25, rel=1e-9)
    assert fresh(hits[event]) < fresh(hits[fact])
    assert float(freshness(7.5 * DAY, HALF_LIFE / 4, F)) == pytest.approx(
        float(freshness(30 * DAY, HALF_LIFE, F))
    )


def test_freshness_decays_from_one_towards_the_floor():
    """SPEC §4: freshness decays from 1 (just used) towards ``memory.freshness_floor``, never
    below it; clock skew never boosts it above 1."""
    assert float(freshness(0.0, HALF_LIFE, F)) == 1.0
    assert float(freshness(HALF_LIFE, HALF_LIFE, F)) == pytest.approx(F + (1 - F) / 2)
    assert float(freshness(1000 * HALF_LIFE, HALF_LIFE, F)) == pytest.approx(F)
    assert float(freshness(-5.0, HALF_LIFE, F)) == 1.0
    assert float(freshness(1000 * HALF_LIFE, HALF_LIFE, 0.35)) == pytest.approx(0.35)  # the seed


def test_an_old_exact_match_is_not_buried_by_a_fresh_loose_one(tmp_path, clock):
    """SPEC §4, freshness refines relevance: the birthday said in spring still answers "when
    is Lena's birthday?" in autumn, above this week's record that only shares her name. (With
    the seed's floor 0.35 the fresh loose record won: measured on LoCoMo, R@5 0.47 → 0.59.)"""
    mem = _open(tmp_path, clock)
    mem.save("The owner visited Paris in March")
    old = mem.save("Lena's birthday is on the fourteenth of March").id
    clock.advance(200 * DAY)
    loose = mem.save("Lena called yesterday about her birthday").id  # 2/3 of old's relevance
    q = "Lena birthday March"
    hits = [h.id for h in mem.recall(q, OWNER_TRUSTED)]
    assert hits[:2] == [old, loose]
    mem.close()
    seed = _open(tmp_path, clock, freshness_floor=0.35)
    assert [h.id for h in seed.recall(q, OWNER_TRUSTED)][:2] == [loose, old]
    seed.close()


def test_among_comparably_relevant_memories_the_fresher_and_more_used_rank_first(mem, clock):
    """SPEC §4: freshness and use still order memories of about the same relevance, and a fresh
    correction outranks the stale fact it corrects."""
    stale = mem.save("Anna lives in Kazan").id
    clock.advance(60 * DAY)
    fresh = mem.save("Anna lives in Yerevan").id
    assert [h.id for h in mem.recall("Where does Anna live?", OWNER_TRUSTED)] == [fresh, stale]
    a = mem.save("The owner plays tennis on Mondays").id
    b = mem.save("The owner plays tennis on Fridays").id
    assert [h.record.id for h in mem.search("Mondays")] == [a]  # reinforces a only
    clock.advance(1 * DAY)
    assert [h.id for h in mem.recall("tennis", OWNER_TRUSTED)][:2] == [a, b]


def test_frequency_bonus_formula_and_cap():
    """SPEC §4: frequency_bonus = min(1.5, 1 + 0.1 × ln(1 + n))."""
    assert float(frequency_bonus(0)) == 1.0
    assert float(frequency_bonus(3)) == pytest.approx(1 + 0.1 * math.log(4))
    assert float(frequency_bonus(147)) == pytest.approx(1 + 0.1 * math.log(148))
    assert float(frequency_bonus(147)) < 1.5
    assert float(frequency_bonus(148)) == 1.5  # ln(149) > 5
    assert float(frequency_bonus(10_000)) == 1.5


def test_frequency_bonus_in_recall_grows_with_reinforcements_and_caps(mem, clock):
    """SPEC §4: each explicit search reinforces; the bonus follows the formula up to its cap."""
    rid = mem.save("The owner's cat is called Murka").id

    def bonus() -> float:
        (h,) = mem.recall("Murka", OWNER_TRUSTED)
        return h.score / h.relevance  # age 0 → freshness 1, importance 3 → ×1

    assert bonus() == pytest.approx(1.0)
    for _ in range(3):
        mem.search("Murka")
    assert mem.get(rid).access_count == 3
    assert bonus() == pytest.approx(1 + 0.1 * math.log(4), rel=1e-9)
    for _ in range(144):
        mem.search("Murka")
    assert mem.get(rid).access_count == 147
    assert bonus() == pytest.approx(1 + 0.1 * math.log(148), rel=1e-9)
    assert bonus() < 1.5
    mem.search("Murka")
    mem.search("Murka")
    assert bonus() == pytest.approx(1.5, rel=1e-12)


def test_relative_floor_drops_a_weak_match_even_with_room(tmp_path, clock):
    """SPEC §4: everything weaker than recall_floor (0.15) × the best score of the same
    selection is dropped, even though top_k has room."""
    path_cfg = {"name": "floor.db"}
    mem = _open(tmp_path, clock, **path_cfg)
    weak = mem.save("Went to a market in Sochi on holiday", kind="event", importance=1).id
    clock.advance(90 * DAY)
    strong = mem.save("Kazan markets sell the best chak-chak", kind="fact", importance=5).id
    middle = mem.save("Kazan markets are open on Sundays", kind="fact", importance=5).id
    mem.close()

    q = "Kazan market chak-chak"
    loose = _open(tmp_path, clock, recall_floor=0.0, **path_cfg)
    all_hits = {h.id: h.score for h in loose.recall(q, OWNER_TRUSTED)}
    loose.close()
    assert set(all_hits) == {weak, strong, middle}  # the weak one does match
    best = all_hits[strong]
    assert max(all_hits.values()) == best
    assert all_hits[weak] < 0.15 * best
    assert all_hits[middle] >= 0.15 * best

    mem = _open(tmp_path, clock, **path_cfg)
    assert mem.config.top_k == 8
    assert [h.id for h in mem.recall(q, OWNER_TRUSTED)] == [strong, middle]
    assert [h.record.id for h in mem.search(q)] == [strong, middle]
    mem.close()


def test_floor_is_relative_to_the_best_score_this_turn_may_see(mem):
    """SPEC §1, §4: "the best score of the same selection" — a private record the turn cannot
    see neither appears nor pushes visible records under the floor (its absence must not be
    readable from what is missing)."""
    priv = mem.save("Anna's secret hobby is poker in a casino", private=True, importance=5).id
    pub = mem.save("Anna likes chess", importance=1).id
    q = "Anna secret hobby poker casino"
    trusted = {h.id: h.score for h in mem.recall(q, OWNER_TRUSTED, top_k=10)}
    assert priv in trusted and pub not in trusted  # under 0.15 × the private record's score
    assert [h.id for h in mem.recall(q, OWNER_UNTRUSTED)] == [pub]


def test_top_k_limits_the_selection(mem):
    """SPEC §4: at most memory.top_k (8) records, the best of them."""
    ids = [
        mem.save(f"Garden note {i}: plant {w} in the garden", importance=1 + i % 5).id
        for i, w in enumerate(
            [
                "tomatoes",
                "cucumbers",
                "dill",
                "parsley",
                "carrots",
                "beets",
                "onions",
                "garlic",
                "potatoes",
                "peas",
                "beans",
                "radishes",
            ]
        )
    ]
    full = mem.recall("garden", OWNER_TRUSTED, top_k=100)
    assert len(full) == len(ids)
    hits = mem.recall("garden", OWNER_TRUSTED)
    assert len(hits) == 8
    assert [h.id for h in hits] == [h.id for h in full[:8]]
    assert len(mem.search("garden", top_k=3)) == 3


def test_core_is_never_in_search_results_but_always_in_the_prompt(mem):
    """SPEC §4: core bypasses scoring — never in search results, always in the prompt section
    (whatever the query, even one that matches nothing)."""
    core = mem.save(
        "The owner is called Lena and prefers short answers", kind="core", importance=5
    ).id
    fact = mem.save("Lena's favourite tea is sencha").id
    assert [h.record.id for h in mem.search("Lena")] == [fact]
    assert core not in [h.id for h in mem.recall("Lena short answers", OWNER_TRUSTED)]
    for q in ("Lena", "quasar", ""):
        section = mem.prompt_section(q, OWNER_TRUSTED)
        assert core in section.core_ids
        assert core not in section.recalled_ids


def test_recall_prompt_section_and_preview_reinforce_nothing(mem, clock):
    """SPEC §4, §5: passive weaving into the prompt and the preview do not reinforce —
    access_count and the access history stay as they were."""
    rid = mem.save("The owner's cat is called Murka").id
    clock.advance(DAY)
    assert mem.recall("Murka", OWNER_TRUSTED)
    assert rid in mem.prompt_section("Murka", OWNER_TRUSTED).recalled_ids
    assert rid in mem.preview("Murka").recalled_ids
    assert rid in mem.preview("Murka", public=True).recalled_ids
    r = mem.get(rid)
    assert r.access_count == 0 and r.last_access_at is None and r.accesses == ()


def test_search_reinforces_and_appends_to_the_access_history(mem, clock):
    """SPEC §2, §4: an explicit search reinforces what it returns — one more access, at now."""
    rid = mem.save("The owner's cat is called Murka").id
    other = mem.save("The owner drinks green tea").id
    clock.advance(DAY)
    t1 = clock.now()
    hits = mem.search("Murka")
    assert [h.record.id for h in hits] == [rid]
    assert hits[0].record.access_count == 1  # the hit carries the reinforced record
    clock.advance(DAY)
    t2 = clock.now()
    mem.search("cat Murka")
    r = mem.get(rid)
    assert r.access_count == 2 and r.accesses == (t1, t2) and r.last_access_at == t2
    assert mem.get(other).access_count == 0  # not returned, not reinforced


def test_a_reinforcement_logs_its_one_access_and_rollback_takes_back_only_it(mem, clock):
    """SPEC §2, §8.4: a reinforcement appends one access row and logs only that access (not a
    snapshot of the record and its whole history); rolling its turn back removes exactly that
    access — an access another turn made later stays, and the count and last access follow."""
    rid = mem.save("The owner's cat is called Murka").id
    for _ in range(3):  # some history of earlier turns
        clock.advance(DAY)
        mem.search("Murka", OWNER_TRUSTED.with_turn("earlier"))
    clock.advance(DAY)
    t_turn = clock.now()
    mem.search("Murka", OWNER_TRUSTED.with_turn("t1"))
    clock.advance(DAY)
    t_later = clock.now()
    mem.search("cat Murka", OWNER_TRUSTED.with_turn("t2"))
    mem.flush_reinforcements()  # they wait for the next transaction (issue 32): write them now
    conn = mem._storage.conn
    logged = conn.execute("SELECT op, before FROM changes WHERE turn_id = 't1'").fetchall()
    assert [(r["op"], r["before"]) for r in logged] == [("reinforce", f'{{"access": {t_turn}}}')]
    before = mem.get(rid).accesses
    assert len(before) == 5 and before[-2:] == (t_turn, t_later)
    mem.rollback_turn("t1")
    r = mem.get(rid)
    assert r.accesses == before[:3] + (t_later,)
    assert r.access_count == 4 and r.last_access_at == t_later
    mem.rollback_turn("t2")
    r = mem.get(rid)
    assert r.accesses == before[:3] and r.access_count == 3 and r.last_access_at == before[2]
    assert [h.id for h in mem.recall("Murka", OWNER_TRUSTED)] == [rid]
    assert mem._index.columns.reinforcements[rid] == 3  # the index follows the rollback


def test_search_without_reinforce_flag_is_pure(mem):
    """SPEC §5 (preview-like reads): search(reinforce=False) changes nothing."""
    rid = mem.save("The owner's cat is called Murka").id
    assert mem.search("Murka", reinforce=False)
    assert mem.get(rid).access_count == 0


def test_dedup_hit_reinforces(mem, clock):
    """SPEC §3.2, §4: a dedup hit reinforces the existing record."""
    rid = mem.save("The owner's cat is called Murka").id
    clock.advance(DAY)
    res = mem.save("the owner's cat is called murka")
    assert res.id == rid and res.status == "reinforced"
    r = mem.get(rid)
    assert r.access_count == 1 and r.accesses == (clock.now(),)


def test_persona_scoped_record_is_visible_only_to_that_persona(mem):
    """SPEC §8.6: a persona-scoped memory is seen only in that persona's turns; a global one in
    every turn."""
    glob = mem.save("The owner lives in Kazan").id
    mine = mem.save("Kazan tip from the guide persona: visit the Kremlin", scope="guide").id
    other = mem.save("Kazan joke the jester persona told", scope="jester").id
    guide = TurnContext(persona="guide")
    assert {h.id for h in mem.recall("Kazan", guide)} == {glob, mine}
    assert {h.id for h in mem.recall("Kazan", TurnContext(persona="jester"))} == {glob, other}
    assert {h.id for h in mem.recall("Kazan", OWNER_TRUSTED)} == {glob}
    assert {h.record.id for h in mem.search("Kazan", guide)} == {glob, mine}


def test_persona_scoped_core_is_in_that_personas_prompt_only(mem):
    """SPEC §5, §8.6: core records follow scopes too."""
    g = mem.save("Owner's name is Lena", kind="core", importance=5).id
    p = mem.save(
        "As the guide, speak like a tour guide", kind="core", importance=4, scope="guide"
    ).id
    assert set(mem.prompt_section("", TurnContext(persona="guide")).core_ids) == {g, p}
    assert set(mem.prompt_section("", TurnContext(persona="jester")).core_ids) == {g}
    assert set(mem.prompt_section("", OWNER_TRUSTED).core_ids) == {g}


def test_recall_of_empty_store_and_unmatched_query_is_empty(mem):
    """SPEC §4: nothing to recall is an empty selection, not an error."""
    assert mem.recall("anything", OWNER_TRUSTED) == []
    mem.save("The owner's cat is called Murka")
    assert mem.recall("quasar", OWNER_TRUSTED) == []
    assert mem.search("quasar") == []
