"""Text for memory: tokens, stems, stop words, numbers and stem-set Jaccard (SPEC §3.2, §4)."""

from __future__ import annotations

import Stemmer

from core import text

_ru = Stemmer.Stemmer("russian")
_en = Stemmer.Stemmer("english")


def test_mixed_russian_english_text_is_stemmed_by_script():
    """SPEC §4: mixed Russian/English text — each token stemmed by the stemmer of its script."""
    got = text.stems("Сестра Anna живёт в Казани, she is running a bakery")
    assert got == [
        _ru.stemWord("сестра"),
        "anna",
        _ru.stemWord("живет"),
        _ru.stemWord("казани"),
        _en.stemWord("running"),
        _en.stemWord("bakery"),
    ]
    # the Russian stemmer would not touch "running"; the English one would not touch "казани"
    assert text.stem_token("running") == "run"
    assert text.stem_token("казани") == "казан"
    assert _ru.stemWord("running") == "running"


def test_russian_and_english_inflections_meet_the_same_stem():
    """SPEC §4: inflected forms in either language reduce to one stem, so they match."""
    assert text.stem_set("Казань") == text.stem_set("в Казани")
    assert text.stem_set("markets") == text.stem_set("market")
    assert text.stem_token("kazan's") == "kazan"
    assert text.stem_token("kazan’s") == "kazan"  # typographic apostrophe


def test_yo_is_folded_to_ye():
    """SPEC §4 (Russian text): ё and е are one letter for matching."""
    assert text.tokens("Ёлка у Алёны") == ["елка", "у", "алены"]
    assert text.stems("Ёлка у Алёны") == text.stems("елка у Алены")
    assert text.stem_set("живёт") == text.stem_set("живет")


def test_tokens_are_lower_cased_words_and_numbers_in_order():
    """SPEC §4: tokenisation of mixed text; punctuation separates tokens."""
    assert text.tokens("Встреча в 15:00 с Ивановым!") == [
        "встреча",
        "в",
        "15",
        "00",
        "с",
        "ивановым",
    ]
    assert text.tokens("Owner's cat, MURKA.") == ["owner's", "cat", "murka"]


def test_stop_words_are_dropped_from_matching_stems():
    """SPEC §4: stop words carry no topic and are not matched (both languages)."""
    assert text.stems("the cat is on the mat") == ["cat", "mat"]
    assert text.stems("и кот на окне") == [_ru.stemWord("кот"), _ru.stemWord("окне")]
    assert text.is_stopword("the") and text.is_stopword("и")
    assert not text.is_stopword("cat")


def test_text_of_only_stop_words_still_matches_itself():
    """SPEC §4: a text made only of common words keeps them, so it is not empty."""
    assert text.stems("the and of") == ["the", "and", "of"]
    assert text.stems("и в не") == ["и", "в", "не"]


def test_numbers_are_kept_verbatim_as_significant_tokens():
    """SPEC §3.2: numbers are significant tokens ("3 pm" ≠ "5 pm")."""
    assert "3" in text.stems("meeting at 3 pm")
    assert "2024" in text.stems("lived in Kazan until 2024")
    assert text.stem_token("2024") == "2024"
    assert text.numbers("meeting at 3 pm on the 14th") == frozenset({"3", "14th"})
    assert text.stem_set("meeting at 3 pm") != text.stem_set("meeting at 5 pm")


def test_different_numbers_make_different_memories():
    """SPEC §3.2: "3 pm" and "5 pm" are not duplicates even when the rest is the same."""
    a = "Dentist appointment on Friday at 3 pm with Dr Smith"
    b = "Dentist appointment on Friday at 5 pm with Dr Smith"
    # the words alone would pass the 0.7 dedup threshold…
    assert text.jaccard(text.stem_set(a), text.stem_set(b)) >= 0.7
    # …but the numbers make them incompatible
    assert not text.numbers_compatible(a, b)


def test_added_detail_keeps_numbers_compatible():
    """SPEC §3.2: "meeting at 3 pm" → "meeting on Friday at 3 pm" is the same memory."""
    a, b = "meeting at 3 pm", "meeting on Friday at 3 pm"
    assert text.numbers_compatible(a, b) and text.numbers_compatible(b, a)
    assert text.jaccard(text.stem_set(a), text.stem_set(b)) == 0.75
    assert text.numbers_compatible("meeting at 3 pm", "meeting in the afternoon")
    assert not text.numbers_compatible("meeting at 3 pm", "meeting at 5 pm")


def test_stem_set_jaccard():
    """SPEC §3.2: dedup compares stem sets by Jaccard = |A ∩ B| / |A ∪ B|."""
    assert text.jaccard(frozenset("ab"), frozenset("bc")) == 1 / 3
    assert text.jaccard(frozenset("abc"), frozenset("abc")) == 1.0
    assert text.jaccard(frozenset("ab"), frozenset("cd")) == 0.0
    assert text.jaccard(frozenset(), frozenset()) == 1.0
    # inflection and stop words do not lower the similarity of the same statement
    assert (
        text.jaccard(text.stem_set("The owner loves cats"), text.stem_set("owner loved the cat"))
        == 1.0
    )
    assert (
        text.jaccard(text.stem_set("Хозяин любит книги"), text.stem_set("хозяин любил книгу"))
        == 1.0
    )


def test_stems_keep_repeats_for_bm25():
    """SPEC §4: BM25 needs term frequencies, so stems() keeps repeats; stem_set() does not."""
    assert text.stems("tea, green tea, more tea") == ["tea", "green", "tea", "tea"]
    assert text.stem_set("tea, green tea, more tea") == frozenset({"tea", "green"})


# ---------------------------------------------------------------------------------------------
# issue 15: NFC normalisation before tokenising

DECOMPOSED_YI = "Серге\u0438\u0306"  # "Сергей" with й as и + combining breve
DECOMPOSED_YO = "е\u0308лка"  # "ёлка" with ё as е + combining diaeresis


def test_decomposed_letters_tokenise_as_their_composed_words():
    from core import text

    assert text.tokens(DECOMPOSED_YI) == text.tokens("Сергей") == ["сергей"]
    assert text.tokens(DECOMPOSED_YO) == text.tokens("ёлка") == ["елка"]
    assert text.stems("Cafe\u0301 Mu\u0308ller") == text.stems("Café Müller")
    assert text.name_stems(f"Мой друг {DECOMPOSED_YI}") == text.name_stems("Мой друг Сергей")


def test_a_decomposed_query_finds_the_composed_record(mem):
    from core import OWNER_TRUSTED

    rid = mem.save("Мой друг Сергей живёт в Казани", OWNER_TRUSTED).id
    assert [h.id for h in mem.recall(DECOMPOSED_YI, OWNER_TRUSTED)] == [rid]
    again = mem.save(f"Мой друг {DECOMPOSED_YI} живёт в Казани", OWNER_TRUSTED)
    assert again.id == rid and again.status != "created"  # dedup sees the same words


def test_one_name_detector_for_name_links_and_what_a_summary_must_keep():
    """SPEC §5 (name links) and §8.3 (a summary keeps its source's names): one detector finds
    the names of a text for both — capitalised words in mid-sentence, also inside quotes, after
    a dash, a bracket or a colon; never a sentence's first word, a greeting, a title or an
    acronym; "Kazan's" is Kazan."""
    from core import text
    from core.chat.summary_fidelity import salient_terms

    t = (
        "Вчера плавал в бассейне «Лужники». Дети: Соня и Марк. My sister — Vika — moved to "
        "Kazan's old town with a beagle (Fantik) and Mr O'Brien. Hello Lena! Thanks, DVDs."
    )
    names = ["Лужники", "Соня", "Марк", "Vika", "Kazan", "Fantik", "O'Brien", "Lena"]
    assert text.names(t) == names
    assert {w for w in salient_terms(t) if not w.isdigit()} == set(names)
    assert len(text.name_stems(t)) == len(names)
    assert text.names("Anna-Maria and McLeod met Jo") == ["Maria", "McLeod", "Jo"]
