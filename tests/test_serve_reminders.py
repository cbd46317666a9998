"""GET /v1/reminders (issue 29, SPEC §8.11 and §10): what is coming up, private items and
notable nights only with the owner's token — a leak here is the worst bug, so every caller
that is not the owner alone on a trusted surface is checked, over the raw response text."""

from __future__ import annotations

import json

from core.privacy import OWNER_TRUSTED
from core.sleep import journal
from core.sleep.journal import Journal
from tests.serve_kit import running
from tests.test_serve import assert_error, make_services

SECRET = "Анализы на ВИЧ в клинике завтра zqremindx"
OPEN = "Tomorrow call the plumber about the tap"


def test_reminders_private_only_for_the_owner_token(tmp_path):
    s = make_services(tmp_path)
    mem = s.memory
    secret = mem.save(SECRET, OWNER_TRUSTED, kind="event", private=True).id
    public = mem.save(OPEN, OWNER_TRUSTED, kind="event").id
    with mem.attach(Journal).transaction() as conn:
        run = journal.start_run(conn, mem.clock.now() - 3600, False, "schedule", "scripted")
        journal.finish_run(
            conn,
            run,
            mem.clock.now() - 60,
            "done",
            {"memory": "done"},
            True,
            "merged 1 zqnightx",
            "scripted",
        )
    with running(s, tmp_path) as r, r.client(owner=True) as owner, r.client() as anon:
        mine = owner.get("/v1/reminders").json()
        assert {i["id"] for i in mine["items"] if i["kind"] == "memory"} == {secret, public}
        assert any(i["kind"] == "night" for i in mine["items"])
        assert mine["context"]["sees_private"] and mine["days"] == 3
        for client, params in (
            (anon, {}),
            (anon, {"audience": "public"}),
            (anon, {"audience": "group"}),
            (owner, {"audience": "group"}),
            (owner, {"audience": "public"}),
        ):
            resp = client.get("/v1/reminders", params=params)
            assert resp.status_code == 200
            assert "zqremindx" not in resp.text and "zqnightx" not in resp.text
            assert "ВИЧ" not in resp.text and "\\u0412\\u0418\\u0427" not in resp.text
            body = resp.json()
            assert [i["id"] for i in body["items"]] == [public]
            assert set(body["items"][0]) == {
                "id",
                "content",
                "due",
                "every",
                "days",
                "when",
                "private",
                "kind",
            }
        assert_error(owner.get("/v1/reminders", params={"days": "x"}), 400, "bad_request")
        assert_error(owner.get("/v1/reminders", params={"days": "999"}), 400, "bad_request")
        assert_error(owner.get("/v1/reminders", params={"audience": "all"}), 400, "bad_request")
        assert "/v1/reminders" in owner.get("/openapi.json").json()["paths"]
        assert json.dumps(owner.get("/v1/reminders", params={"days": 0}).json())
    s.close()
