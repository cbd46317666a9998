"""Turns, surfaces and audiences (SPEC §1): the whole matrix of speaker × surface × audience,
as properties of the turn context and as behaviour of the memory seen through it."""

from __future__ import annotations

import pytest

from core import (
    OWNER_IN_GROUP,
    OWNER_TRUSTED,
    OWNER_UNTRUSTED,
    PUBLIC,
    Audience,
    Memory,
    Speaker,
    Surface,
    TurnContext,
)
from core.memory.tools import call, tools_for
from core.privacy import WITHHELD_FOOTNOTE

OWN, OTH = Speaker.OWNER, Speaker.OTHER
T, U = Surface.TRUSTED, Surface.UNTRUSTED
ME, GRP = Audience.OWNER_ONLY, Audience.GROUP

# speaker, surface, audience → sees_private, can_mutate, can_list, footnote, public_cut
MATRIX = [
    (OWN, T, ME, True, True, True, False, False),  # the TUI, the owner's own app or DM
    (OWN, T, GRP, False, True, False, True, False),  # owner on a trusted device, group reads
    (OWN, U, ME, False, True, False, True, False),  # owner through an untrusted bridge
    (OWN, U, GRP, False, True, False, True, False),  # owner asking in a group
    (OTH, T, ME, False, False, False, False, True),
    (OTH, T, GRP, False, False, False, False, True),
    (OTH, U, ME, False, False, False, False, True),
    (OTH, U, GRP, False, False, False, False, True),  # somebody else in public
]
IDS = [f"{s.value}-{f.value}-{a.value}" for s, f, a, *_ in MATRIX]
# the matrix's columns as a test's arguments: its properties and its behaviour read the same rows
over_the_matrix = pytest.mark.parametrize(
    (
        "speaker",
        "surface",
        "audience",
        "sees_private",
        "can_mutate",
        "can_list",
        "footnote",
        "public_cut",
    ),
    MATRIX,
    ids=IDS,
)

PRIVATE = "Anna's diagnosis is asthma, treated by Dr Ivanova"
SPORTS = ["swimming", "tennis", "skiing", "running", "yoga"]


@pytest.fixture
def stocked(mem) -> tuple[Memory, int, int, list[int]]:
    core_priv = mem.save("Anna's salary is 300k", kind="core", private=True).id
    priv = mem.save(PRIVATE, private=True).id
    pub = [mem.save(f"Anna's sport number {i} is {s}").id for i, s in enumerate(SPORTS)]
    return mem, core_priv, priv, pub


@over_the_matrix
def test_access_matrix_properties(
    speaker, surface, audience, sees_private, can_mutate, can_list, footnote, public_cut
):
    """SPEC §1: access is computed from the audience, not from the speaker — private only for
    the owner alone on a trusted surface; mutating tools in owner turns; memory_list only where
    private is visible; the footnote for owner turns that cannot see private; the public cut
    for other people's turns."""
    ctx = TurnContext(speaker=speaker, surface=surface, audience=audience)
    assert (
        ctx.sees_private,
        ctx.can_mutate,
        ctx.can_list,
        ctx.gets_withheld_footnote,
        ctx.public_cut,
    ) == (sees_private, can_mutate, can_list, footnote, public_cut)


@over_the_matrix
def test_access_matrix_behaviour(
    stocked, speaker, surface, audience, sees_private, can_mutate, can_list, footnote, public_cut
):
    """SPEC §1, §3.2, §5: the same matrix, seen through prompt, search, tools and save."""
    mem, core_priv, priv, pub = stocked
    ctx = TurnContext(speaker=speaker, surface=surface, audience=audience)

    # the prompt section
    s = mem.prompt_section("Anna sport asthma", ctx)
    assert (core_priv in s.core_ids) is sees_private
    assert (priv in s.recalled_ids) is sees_private
    assert ("asthma" in s.text) is sees_private and ("300k" in s.text) is sees_private
    assert s.withheld_footnote is footnote
    assert (WITHHELD_FOOTNOTE in s.text) is footnote
    n_visible = len(pub) + (1 if sees_private else 0)
    expected = min(mem.config.public_top_k, n_visible) if public_cut else n_visible
    assert len(s.recalled_ids) == expected

    # explicit search (through the tool every turn is offered)
    res = call(mem, "memory_search", {"query": "Anna asthma sport"}, ctx)
    assert res.ok
    assert (priv in res.data["ids"]) is sees_private
    assert ("asthma" in res.text) is sees_private
    assert len(res.data["ids"]) <= (mem.config.public_top_k if public_cut else mem.config.top_k)

    # the tools offered, and the tools refused when called anyway
    offered = {t["name"] for t in tools_for(ctx)}
    assert ({"memory_save", "memory_update", "memory_forget"} <= offered) is can_mutate
    assert not ({"memory_save", "memory_update", "memory_forget"} & offered) or can_mutate
    assert ("memory_list" in offered) is can_list
    assert "memory_search" in offered
    listing = call(mem, "memory_list", {}, ctx)
    assert listing.ok is can_list
    if not can_list:
        assert "asthma" not in listing.text
    n = mem.count()
    saved = call(
        mem,
        "memory_save",
        {"content": "Anna's asthma is under control now", "kind": "fact", "importance": 3},
        ctx,
    )
    assert saved.ok is can_mutate
    assert mem.count() == n + (1 if can_mutate else 0)
    if can_mutate:
        # the similar records shown after the save follow the audience too
        assert ("treated by Dr Ivanova" in saved.text) is sees_private
        assert (
            priv in [x.id for x in mem.save("Anna's asthma is under control now", ctx).similar]
        ) is sees_private


@pytest.mark.parametrize(
    ("ctx", "sees_private", "footnote", "cut"),
    [
        (OWNER_TRUSTED, True, False, False),
        (OWNER_UNTRUSTED, False, True, False),
        (OWNER_IN_GROUP, False, True, False),
        (PUBLIC, False, False, True),
    ],
    ids=["OWNER_TRUSTED", "OWNER_UNTRUSTED", "OWNER_IN_GROUP", "PUBLIC"],
)
def test_named_contexts(ctx, sees_private, footnote, cut):
    """SPEC §1: the named contexts the layers above use."""
    assert (ctx.sees_private, ctx.gets_withheld_footnote, ctx.public_cut) == (
        sees_private,
        footnote,
        cut,
    )
    assert ctx.can_mutate is (ctx.speaker is Speaker.OWNER)


def test_owner_in_a_group_gets_the_full_selection_minus_private(stocked):
    """SPEC §1: the owner asking in a group is not cut to public_top_k — everybody reads the
    answer, so only private entries are withheld."""
    mem, _core, priv, pub = stocked
    s = mem.prompt_section("Anna sport", OWNER_IN_GROUP)
    assert set(s.recalled_ids) == set(pub) and priv not in s.recalled_ids
    assert len(s.recalled_ids) > mem.config.public_top_k


def test_context_accepts_plain_strings_and_rejects_unknown_values():
    """SPEC §1, §10: contexts come from configs and API clients; unknown values are refused
    rather than silently treated as trusted."""
    ctx = TurnContext(speaker="owner", surface="untrusted", audience="group")
    assert ctx == OWNER_IN_GROUP
    for bad in ({"speaker": "admin"}, {"surface": "very-trusted"}, {"audience": "everyone"}):
        with pytest.raises(ValueError):
            TurnContext(**bad)


def test_the_tui_context_is_owner_trusted_owner_only():
    """SPEC §1: the TUI is always owner / trusted / owner-only (the defaults)."""
    assert TurnContext() == OWNER_TRUSTED
    assert (OWNER_TRUSTED.speaker, OWNER_TRUSTED.surface, OWNER_TRUSTED.audience) == (OWN, T, ME)
