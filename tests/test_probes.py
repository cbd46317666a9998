"""The probes of issue 25 (tests/probekit.py) through ``python -m bench.faults --only probes``:
every probe runs, none finds a leak or a traceback, and every one passes."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from tests import probekit_cli, probekit_http


@pytest.fixture(scope="module")
def report() -> dict:
    from bench import faults

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = faults.main(["--only", "probes"])
    rep = json.loads(out.getvalue())
    rep["rc"] = rc
    return rep


def _failures(rep: dict) -> str:
    return "\n".join(
        f"  {o['name']}: leak={o['leak']} traceback={o['traceback']} {o['note']}"
        for o in rep["probes"]["outcomes"]
        if not o["ok"]
    )


def test_every_probe_ran(report):
    assert report["http_probes"] == len(probekit_http.HTTP_PROBES)
    assert report["cli_probes"] == len(probekit_cli.CLI_PROBES)
    assert len(report["probes"]["outcomes"]) == report["http_probes"] + report["cli_probes"]
    assert report["kills"] == 0 and report["soak"] is None  # --only probes ran nothing else


def test_no_probe_finds_a_leak_or_a_traceback(report):
    assert report["leaks"] == 0 and report["tracebacks"] == 0, _failures(report)


def test_every_probe_passes(report):
    assert report["probes"]["failed"] == 0 and report["rc"] == 0, _failures(report)
