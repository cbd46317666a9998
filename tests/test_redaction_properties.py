"""Redaction by construction (issue 25 item 1, SPEC §1 and §11), as a property over generated
stores: private records carry unique ``zq…`` marker strings AND unique 7-9 digit numbers; a
private core memory, the sleep journal (plans, whys, op details, a refused op's reason, phase
notes, the run's summary) and the archive's ``why`` of a non-private record quote them. Then
every HTTP endpoint is driven without the token (and with the owner's token for the group and
public audiences and an untrusted chat), and every CLI output without ``--private``; no marker
and no private number may appear in any of them.

Trusted by design, so not checked (each is the owner on the owner's own terminal or token):

* HTTP with the owner's token in the owner's trusted context: ``GET /v1/memories``,
  ``/v1/memories/search``, ``/v1/memories/prompt`` (audience owner), ``/v1/sleep/runs``, the
  chat's owner/trusted turn — they are checked the other way round: they DO show the private
  markers and numbers, so the checks here can fail.
* ``eva export --private`` (the owner asked for private memories; also checked to show them),
  the file ``eva backup`` writes (the owner's whole store, by definition), ``eva sleep
  [--dry-run]`` (it prints the night to the owner's terminal, the journal in full) and the TUI.

Checked: ``eva export`` (jsonl and md, with and without ``--include-archive``; stdout, stderr,
and the ``-o`` file), ``eva doctor``, ``eva backup``'s stdout/stderr, ``eva import``'s output
(a refused file and an accepted one whose lines are near-duplicates of private records). The
commands run in-process through ``eva_tui.cli.main`` (the same code as the ``eva`` script,
fast enough for a property test); tests/probekit.py runs them as real subprocesses.

Shrinking is off: an example takes seconds, and a failure lists every leaking output at once.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core import OWNER_TRUSTED
from core.store.records import Actor
from tests.probekit_secrets import Secrets, seed_journal
from tests.serve_kit import running
from tests.test_privacy_properties import COMMON_WORDS, TEMPLATES, build, stores_with_private
from tests.test_serve import make_services

CORE_MARKER = "zqffx00c0de"

# private numbers: 7-9 digits, so none is part of a timestamp (10 digits), an id or a port;
# one per record (at most 12) and the core memory's
numbers = st.lists(st.integers(1_000_000, 999_999_999), min_size=13, max_size=13, unique=True)


@contextlib.contextmanager
def eva_env(tmp: Path):
    """The environment of an ``eva`` command: its own config dir, no embedder, no EVA_*."""
    saved = dict(os.environ)
    for k in [k for k in os.environ if k.startswith("EVA_")]:
        del os.environ[k]
    os.environ.update(
        {
            "XDG_CONFIG_HOME": str(tmp / "xdg-config"),
            "XDG_DATA_HOME": str(tmp / "xdg-data"),
            "EVA_MEMORY__EMBEDDING_MODEL": "none",
        }
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def eva(*argv: str) -> tuple[int, str, str]:
    from eva_tui import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def make_store(specs_, salt, nums, path: Path) -> tuple[Secrets, Secrets, list, list[str]]:
    """The privacy tests' generated store (``build``) with a unique big number in every private
    record, a private core memory, an archived non-private record whose why quotes private
    content, and a journal night quoting it everywhere; written to ``path``. Returns all the
    secrets, those the journal and the archive quote, the records, and the queries an adversary
    would type (private records' words, without their marker or number)."""
    big = iter(nums)
    specs_ = [replace(s, n=next(big)) if s.private else s for s in specs_]
    mem, stored = build(specs_, salt)
    sec = Secrets()
    for r in stored:
        if r.spec.private:
            sec.markers.append(r.marker)
            sec.numbers.append(str(r.spec.n))
    core_n = str(next(big))
    mem.save(
        f"Owner's safe code is {core_n} {CORE_MARKER}",
        OWNER_TRUSTED,
        kind="core",
        private=True,
        actor=Actor.OWNER,
    )
    sec.markers.append(CORE_MARKER)
    sec.numbers.append(core_n)
    quoted = Secrets([CORE_MARKER, *sec.markers[:2]], [core_n, *sec.numbers[:2]])
    quoted_m, quoted_n = quoted.markers, quoted.numbers
    old = mem.save("Owner used to cycle to the old market", OWNER_TRUSTED, actor=Actor.OWNER)
    mem.forget(
        old.id, f"superseded by {' '.join(quoted_m + quoted_n)}", OWNER_TRUSTED, actor=Actor.MODEL
    )
    seed_journal(mem, quoted_m, quoted_n, [r.id for r in stored if r.spec.private])
    mem.backup(path)
    mem.close()
    queries = [TEMPLATES[r.spec.tpl].format(n="").strip() for r in stored if r.spec.private]
    return sec, quoted, stored, queries or [" ".join(COMMON_WORDS[:3])]


def http_outputs(data: Path, quoted: Secrets, stored, q: str) -> dict[str, str]:
    """Every endpoint's response to an untrusted caller, by name."""
    from core import Memory, MemoryConfig

    out: dict[str, str] = {}
    mem = Memory.open(data / "memory.db", MemoryConfig())
    s = make_services(data, replies=[["Sure", "."]] * 60, memory=mem)
    llm = s.chat_model
    try:
        with running(s, data) as srv, srv.client() as anon, srv.client(owner=True) as owner:
            # the trusted side carries the secrets: the checks below can fail
            runs = owner.get("/v1/sleep/runs").text
            assert not quoted.all_in(runs), f"the owner's journal lacks {quoted.all_in(runs)}"
            listed = owner.get("/v1/memories", params={"limit": 1000}).text
            live = [
                s
                for r in stored
                if r.spec.private and not r.spec.archived
                for s in (r.marker, str(r.spec.n))
            ]
            assert all(s in listed for s in live), "the owner's list lacks private records"
            assert CORE_MARKER in owner.get("/v1/memories/prompt", params={"q": q}).text

            for path in (
                "/v1/health",
                "/openapi.json",
                "/v1/sleep/runs",
                "/v1/sleep/runs?limit=100",
                "/v1/memories",
                "/v1/memories?contains=" + q,
                "/v1/memories/search?q=" + q,
                "/v1/nowhere",
            ):
                out[f"anon GET {path}"] = anon.get(path).text
            for path in ("/v1/sleep", "/v1/sleep/wake", "/v1/memories/archive/abc/restore"):
                out[f"anon POST {path}"] = anon.post(path).text
            for r in stored:
                out[f"anon POST restore #{r.id}"] = anon.post(
                    f"/v1/memories/archive/{r.id}/restore"
                ).text
            for who, c, params in (
                ("anon", anon, {}),
                ("anon", anon, {"audience": "owner"}),
                ("anon", anon, {"audience": "group"}),
                ("anon", anon, {"audience": "public"}),
                ("anon", anon, {"public": "true"}),
                ("anon", anon, {"audience": "bogus"}),
                ("owner", owner, {"audience": "group"}),
                ("owner", owner, {"audience": "public"}),
                ("owner", owner, {"public": "true"}),
            ):
                r = c.get("/v1/memories/prompt", params={"q": q, **params})
                out[f"{who} GET prompt {params}"] = r.text
            out["anon POST chat bad json"] = anon.post(
                "/v1/chat", content="{" + q, headers={"Content-Type": "application/json"}
            ).text
            for who, c, body in (
                ("anon", anon, {}),
                ("anon", anon, {"audience": "group"}),
                ("anon", anon, {"audience": "public"}),
                ("owner", owner, {"audience": "group"}),
                ("owner", owner, {"audience": "public"}),
                ("owner", owner, {"audience": "owner", "trusted": False}),
            ):
                calls, steps = len(llm.calls), len(llm.json_calls)
                r = c.post("/v1/chat", json={"message": f"What do you know? {q}", **body})
                assert r.status_code == 200, r.text
                out[f"{who} POST chat {body}"] = r.text
                out[f"{who} chat {body}: the model's prompt"] = json.dumps(
                    llm.calls[calls:] + llm.json_calls[steps:], ensure_ascii=False, default=str
                )
    finally:
        s.close()
    return out


def cli_outputs(tmp: Path, data: Path, sec: Secrets, stored, q: str) -> dict[str, str]:
    """Every ``eva`` output a caller without ``--private`` gets, by name."""
    out: dict[str, str] = {}
    d = ["--data", str(data)]
    with eva_env(tmp):
        # the trusted export carries every secret: the checks below can fail
        code, text, _ = eva(*d, "export", "--private", "--include-archive")
        assert code == 0 and not sec.all_in(text), f"--private lacks {sec.all_in(text)}"
        for fmt in ("jsonl", "md"):
            for arch in ((), ("--include-archive",)):
                code, text, err = eva(*d, "export", "--format", fmt, *arch)
                out[f"export {fmt} {arch} (exit {code})"] = text + err
                f = tmp / f"out-{fmt}-{len(arch)}"
                code, text, err = eva(*d, "export", "--format", fmt, *arch, "-o", str(f))
                file_text = f.read_text(encoding="utf-8") if f.exists() else ""
                out[f"export -o {fmt} {arch} (exit {code})"] = text + err + file_text
        code, text, err = eva(*d, "doctor")
        out[f"doctor (exit {code})"] = text + err
        code, text, err = eva(*d, "backup", str(tmp / "backups"))
        out[f"backup (exit {code})"] = text + err
        # import: near-duplicates of private records (other numbers, no marker) and a bad line
        priv = [r for r in stored if r.spec.private]
        lines = [
            json.dumps({"content": TEMPLATES[r.spec.tpl].format(n=i + 1)})
            for i, r in enumerate(priv)
        ] or [json.dumps({"content": q})]
        bad = tmp / "bad.jsonl"
        bad.write_text(
            "\n".join([*lines, '{"content": "x", "kind": "' + q + '"}', "{oops"]) + "\n",
            encoding="utf-8",
        )
        code, text, err = eva(*d, "import", str(bad))
        out[f"import refused (exit {code})"] = text + err
        good = tmp / "good.jsonl"
        good.write_text("\n".join(lines) + "\n", encoding="utf-8")
        code, text, err = eva(*d, "import", str(good))
        out[f"import near-duplicates (exit {code})"] = text + err
    return out


@settings(
    max_examples=15,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stores_with_private, numbers, st.integers(0, 11))
def test_no_marker_and_no_private_number_in_any_untrusted_output(store, nums, pick):
    specs_, salt = store
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data = tmp / "data"
        data.mkdir()
        sec, quoted, stored, queries = make_store(specs_, salt, nums, data / "memory.db")
        q = queries[pick % len(queries)]
        outputs = http_outputs(data, quoted, stored, q)
        outputs.update(cli_outputs(tmp, data, sec, stored, q))
        leaks = {name: sec.leaks(text) for name, text in outputs.items()}
        leaks = {k: v for k, v in leaks.items() if v}
        assert not leaks, "private content reached untrusted outputs:\n" + "\n".join(
            f"  {name}: {found}" for name, found in leaks.items()
        )
        tracebacks = [name for name, text in outputs.items() if "Traceback" in text]
        assert not tracebacks, tracebacks
