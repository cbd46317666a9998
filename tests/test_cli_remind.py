"""``eva remind`` (issue 29): what is coming up, as text or JSON, exit 0 (cron, a shell prompt,
notify-send); EVA_NOW moves Eva's clock for demos and tests; --no-private leaves private out."""

from __future__ import annotations

import json

import pytest

from core.clock import from_env
from core.memory.facade import Memory
from eva_tui import cli


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_NOW", "2026-05-18T10:00")  # a Monday
    d = tmp_path / "data"
    d.mkdir(mode=0o700)
    with Memory.open(d / "memory.db", clock=from_env()) as mem:
        mem.save("Я обещал маме починить кран в субботу", kind="event")
        mem.save("Анализы в клинике в субботу zqsecret", kind="event", private=True)
    return d


def test_remind_text_and_json(data, monkeypatch, capsys):
    monkeypatch.setenv("EVA_NOW", "2026-05-21T09:00")  # Thursday: nothing within a day
    assert cli.main(["--data", str(data), "remind", "--days", "1"]) == 0
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("EVA_NOW", "2026-05-23T08:00")  # Saturday
    assert cli.main(["--data", str(data), "remind"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "today: Я обещал маме починить кран в субботу" in out and len(out) == 2
    assert cli.main(["--data", str(data), "remind", "--format", "json", "--no-private"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["now"].startswith("2026-05-23") and body["days"] == 3
    assert [i["due"] for i in body["items"]] == ["2026-05-23"]
    assert "zqsecret" not in json.dumps(body)


def test_remind_without_a_store_and_bad_now(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert cli.main(["--data", str(tmp_path / "none"), "remind"]) == 0
    monkeypatch.setenv("EVA_NOW", "someday")
    assert cli.main(["--data", str(tmp_path / "none"), "remind"]) == 2
    assert "EVA_NOW" in capsys.readouterr().err
