"""Privacy through HTTP (issue 14 item 5, SPEC §1 and §11): over generated stores, no private
memory reaches any response a caller without the owner's trusted context gets — on every
endpoint, including the chat's event stream and the prompt the model was given.

The stores are the privacy property tests' own (private records carry ``zq…`` markers); each
also holds one private core memory and a night in the journal whose plan, op and why quote
private markers, so the trusted side is known to carry private content (the check can fail)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.privacy import OWNER_TRUSTED
from core.store.records import Actor
from tests.probekit_secrets import seed_journal
from tests.serve_kit import running, sse_events
from tests.test_privacy_properties import COMMON_WORDS, build, specs
from tests.test_serve import make_services

CORE_MARKER = "zqffx00c0de"


def seed(mem, stored) -> list[str]:
    """A private core memory and a journal night quoting private content; the markers a
    trusted caller must be able to see."""
    mem.save(
        f"Owner's bank PIN hint is the cat's birthday {CORE_MARKER}",
        OWNER_TRUSTED,
        kind="core",
        private=True,
        actor=Actor.OWNER,
    )
    private = [r for r in stored if r.spec.private]
    quoted = [CORE_MARKER] + [r.marker for r in private[:2]]
    seed_journal(mem, quoted, [], [1, 2])
    return quoted


def leaks(text: str, markers: list[str], typed: str = "") -> list[str]:
    return [m for m in markers if m in text and m not in typed]


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(specs, min_size=2, max_size=10),
    st.integers(0, 0xFFFFFF),
    st.lists(st.sampled_from(COMMON_WORDS), min_size=1, max_size=3).map(" ".join),
    st.booleans(),
)
def test_no_private_memory_in_any_untrusted_response(specs_, salt, words, ask_marker):
    mem, stored = build(specs_, salt)
    quoted = seed(mem, stored)
    markers = [r.marker for r in stored if r.spec.private] + [CORE_MARKER]
    with tempfile.TemporaryDirectory() as d:
        s = make_services(Path(d), replies=[["Sure", "."]] * 40, memory=mem)
        llm = s.chat_model
        # adversarial: the query names a private record's words (not its marker: a caller's
        # own typing is echoed back to it by the model's prompt, that is no leak)
        priv = [r for r in stored if r.spec.private]
        q = priv[0].bare if (ask_marker and priv) else words
        with running(s, Path(d)) as srv, srv.client() as anon, srv.client(owner=True) as owner:
            # the trusted side carries private content: the checks below can fail
            trusted = owner.get("/v1/memories/prompt", params={"q": q}).json()
            assert CORE_MARKER in trusted["text"]
            assert all(m in owner.get("/v1/sleep/runs").text for m in quoted)

            checked = 0
            for client, params in (
                (anon, {}),
                (anon, {"audience": "group"}),
                (anon, {"audience": "public"}),
                (anon, {"public": "true"}),
                (owner, {"public": "true"}),
                (owner, {"audience": "group"}),
                (owner, {"audience": "public"}),
            ):
                r = client.get("/v1/memories/prompt", params={"q": q, **params})
                assert r.status_code == 200
                assert not leaks(r.text, markers), (params, r.text)
                checked += 1
            for path in ("/v1/memories", "/v1/memories/search?q=" + q):
                r = anon.get(path)
                assert r.status_code == 401 and not leaks(r.text, markers)
            for rec in stored:
                r = anon.post(f"/v1/memories/archive/{rec.id}/restore")
                assert r.status_code == 401 and not leaks(r.text, markers)
            for path in ("/v1/sleep/runs", "/v1/health", "/openapi.json"):
                r = anon.get(path)
                assert r.status_code == 200 and not leaks(r.text, markers), path
            # chat: the stream and the prompt the model saw, for every untrusted context
            for client, body in (
                (anon, {"audience": "owner"}),
                (anon, {"audience": "group"}),
                (anon, {"audience": "public"}),
                (owner, {"audience": "group"}),
                (owner, {"audience": "public"}),
                (owner, {"audience": "owner", "trusted": False}),
            ):
                calls, steps = len(llm.calls), len(llm.json_calls)
                message = f"What do you know? {q}"
                r = client.post("/v1/chat", json={"message": message, **body})
                assert r.status_code == 200
                names = [e for e, _ in sse_events(r.text)]
                assert names[-1] == "done", r.text
                assert not leaks(r.text, markers, message), (body, r.text)
                assert len(llm.calls) > calls  # the model was asked
                seen = json.dumps(
                    llm.calls[calls:] + llm.json_calls[steps:], ensure_ascii=False, default=str
                )
                assert not leaks(seen, markers, message), (body, "model prompt")
                checked += 1
            assert checked == 13
        s.close()
