"""``eva serve`` (issue 14, SPEC §10): a real uvicorn on a loopback port, exact status codes of
the security checks, the chat's Server-Sent Events, and what each caller may see."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from core import ManualClock, Memory, MemoryConfig
from core.privacy import OWNER_TRUSTED
from eva_api.guard import ServeSettings
from eva_api.token import ensure_token
from eva_runtime import config as cfg
from eva_runtime.services import Services
from tests.fake_llm import ScriptedLLM
from tests.serve_kit import eva_serve, first_answer, running, sse_events

ROOT = Path(__file__).resolve().parents[1]
SECRET = "Anna's diagnosis is zqvitrolex syndrome"  # a private memory
PUBLIC_FACT = "Anna plays the cello in the city orchestra"


def make_services(tmp_path: Path, replies=None, memory: Memory | None = None) -> Services:
    clock = ManualClock(1_780_000_000.0)
    mem = memory or Memory.open(tmp_path / "memory.db", MemoryConfig(), clock)
    llm = ScriptedLLM(
        replies if replies is not None else [["Hello", " there"]] * 20, plans=[{"ops": []}] * 20
    )
    return Services(cfg.from_mapping({}, None), tmp_path, clock=clock, memory=mem, chat_model=llm)


@pytest.fixture
def server(tmp_path):
    s = make_services(tmp_path)
    s.memory.save(SECRET, OWNER_TRUSTED, private=True, importance=4)
    s.memory.save(PUBLIC_FACT, OWNER_TRUSTED, importance=4)
    with running(s, tmp_path) as r:
        yield r
    s.close()


def assert_error(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"detail", "code", "request_id"}
    assert body["code"] == code and body["detail"]
    assert body["request_id"] == resp.headers["x-request-id"]
    return body


# ------------------------------------------------------------------------------ security
def test_token_file_is_0600_and_stable(tmp_path):
    token, path = ensure_token(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) >= 32
    os.chmod(path, 0o644)  # widened by hand: narrowed again, same token
    again, _ = ensure_token(tmp_path)
    assert again == token and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_security_checks_answer_exact_status_codes(server):
    """Issue 14 item 3/5: no token, wrong token, bad Host, bad Origin, oversized body,
    malformed JSON, wrong media type, unknown id — each its own status and code."""
    with server.client() as anon, server.client(owner=True) as owner:
        assert_error(anon.get("/v1/memories"), 401, "unauthorized")
        assert_error(anon.get("/v1/memories/search", params={"q": "Anna"}), 401, "unauthorized")
        assert_error(anon.post("/v1/memories/archive/1/restore"), 401, "unauthorized")
        assert_error(anon.post("/v1/sleep"), 401, "unauthorized")
        assert_error(anon.post("/v1/sleep/wake"), 401, "unauthorized")
        wrong = {"Authorization": "Bearer " + "x" * 43}
        assert_error(anon.get("/v1/memories", headers=wrong), 401, "unauthorized")
        # a wrong token is refused even where an anonymous call is allowed
        assert_error(
            anon.get("/v1/memories/prompt", params={"q": "Anna"}, headers=wrong),
            401,
            "unauthorized",
        )
        assert_error(anon.get("/v1/health", headers={"Host": "evil.example:80"}), 421, "bad_host")
        assert_error(anon.get("/v1/health", headers={"Host": "evil.example"}), 421, "bad_host")
        assert_error(
            anon.get("/v1/health", headers={"Origin": "http://evil.example"}), 403, "bad_origin"
        )
        assert_error(anon.get("/v1/health", headers={"Origin": "null"}), 403, "bad_origin")
        big = json.dumps({"message": "x" * (server.settings.max_body + 1)})
        assert_error(
            owner.post("/v1/chat", content=big, headers={"Content-Type": "application/json"}),
            413,
            "too_large",
        )

        def chunks():
            for _ in range(server.settings.max_body // 1000 + 2):
                yield b" " * 1000

        assert_error(
            owner.post("/v1/chat", content=chunks(), headers={"Content-Type": "application/json"}),
            413,
            "too_large",
        )
        assert_error(
            owner.post(
                "/v1/chat", content="{not json", headers={"Content-Type": "application/json"}
            ),
            400,
            "bad_json",
        )
        assert_error(
            owner.post("/v1/chat", content="[1]", headers={"Content-Type": "application/json"}),
            400,
            "bad_json",
        )
        assert_error(
            owner.post("/v1/chat", content="message=hi", headers={"Content-Type": "text/plain"}),
            415,
            "unsupported_media_type",
        )
        assert_error(
            owner.post("/v1/chat", json={"message": "hi", "audience": "everyone"}),
            400,
            "bad_request",
        )
        assert_error(owner.post("/v1/memories/archive/999/restore"), 404, "not_found")
        assert_error(owner.post("/v1/memories/archive/abc/restore"), 400, "bad_request")
        assert_error(owner.get("/v1/nowhere"), 404, "not_found")
        assert_error(owner.get("/v1/chat"), 405, "method_not_allowed")
        assert_error(owner.get("/v1/memories/prompt"), 400, "bad_request")
        # and the allowed forms pass
        assert anon.get("/v1/health").status_code == 200
        assert (
            anon.get("/v1/health", headers={"Host": f"localhost:{server.port}"}).status_code == 200
        )
        assert "access-control-allow-origin" not in anon.get("/v1/health").headers


def test_rate_limit_answers_429_with_retry_after(tmp_path):
    s = make_services(tmp_path)
    with running(s, tmp_path, ServeSettings(rate=1, burst=3)) as r, r.client() as c:
        codes = [c.get("/v1/health").status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
        resp = c.get("/v1/health")
        assert_error(resp, 429, "rate_limited")
        assert int(resp.headers["retry-after"]) >= 1
    s.close()


def test_configured_origin_gets_cors_and_others_do_not(tmp_path):
    s = make_services(tmp_path)
    settings = ServeSettings(rate=0, allow_origins=("http://app.local:3000",))
    with running(s, tmp_path, settings) as r, r.client() as c:
        ok = c.get("/v1/health", headers={"Origin": "http://app.local:3000"})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == "http://app.local:3000"
        assert_error(
            c.get("/v1/health", headers={"Origin": "http://evil.example"}), 403, "bad_origin"
        )
    s.close()


def test_logs_hold_neither_memory_content_nor_the_token(server, caplog):
    caplog.set_level(logging.DEBUG)
    with server.client(owner=True) as owner, server.client() as anon:
        assert SECRET in owner.get("/v1/memories/prompt", params={"q": "zqvitrolex"}).text
        owner.get("/v1/memories/search", params={"q": "zqvitrolex diagnosis"})
        anon.get("/v1/memories/prompt", params={"q": "zqvitrolex"})
        owner.post("/v1/chat", json={"message": "zqvitrolex?"})
        owner.post("/v1/chat", content="{zqvitrolex", headers={"Content-Type": "application/json"})
    # the server's records (the test's own client logs its requests on its side)
    text = "\n".join(
        f"{r.name} {r.getMessage()}"
        for r in caplog.records
        if not r.name.startswith(("httpx", "httpcore"))
    )
    assert "/v1/memories/prompt" in text  # the access log is there...
    assert "zqvitrolex" not in text.lower()  # ...without the caller's words or memory
    assert server.token not in text


def test_openapi_is_served(server):
    with server.client() as c:
        spec = c.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    for path in (
        "/v1/memories/prompt",
        "/v1/memories/archive/{id}/restore",
        "/v1/sleep/runs",
        "/v1/sleep",
        "/v1/sleep/wake",
        "/v1/health",
        "/v1/chat",
    ):
        assert path in spec["paths"]


# ------------------------------------------------------------------------------ endpoints
def test_prompt_is_private_only_for_the_owner_token(server):
    with server.client(owner=True) as owner, server.client() as anon:
        trusted = owner.get("/v1/memories/prompt", params={"q": "Anna diagnosis"}).json()
        assert SECRET in trusted["text"] and trusted["context"]["sees_private"]
        for client, params in (
            (anon, {}),
            (anon, {"public": "true"}),
            (anon, {"audience": "group"}),
            (owner, {"public": "true"}),
            (owner, {"audience": "group"}),
        ):
            body = client.get(
                "/v1/memories/prompt", params={"q": "Anna diagnosis", **params}
            ).json()
            assert "zqvitrolex" not in json.dumps(body)
            assert PUBLIC_FACT in body["text"]
            assert not body["context"]["sees_private"]
        group = owner.get("/v1/memories/prompt", params={"q": "Anna", "audience": "group"}).json()
        assert group["withheld_footnote"] is True


def test_restore_list_search_and_runs(server):
    mem = server.services.memory
    rid = mem.save("The owner's old bike was red", OWNER_TRUSTED).id
    mem.forget(rid, "sold")
    with server.client(owner=True) as owner, server.client() as anon:
        assert owner.post(f"/v1/memories/archive/{rid}/restore").json()["restored"]["id"] == rid
        assert_error(owner.post(f"/v1/memories/archive/{rid}/restore"), 404, "not_found")
        listed = owner.get("/v1/memories").json()["memories"]
        assert {m["content"] for m in listed} >= {SECRET, PUBLIC_FACT}
        hits = owner.get("/v1/memories/search", params={"q": "zqvitrolex"}).json()["hits"]
        assert hits and hits[0]["content"] == SECRET
        assert anon.get("/v1/sleep/runs").json()["runs"] == []


def test_chat_streams_memory_tokens_and_done(server):
    with server.client(owner=True) as owner:
        resp = owner.post("/v1/chat", json={"message": "What does Anna play?"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = sse_events(resp.text)
    names = [e for e, _ in events]
    assert names[0] == "memory" and names[-1] == "done" and "token" in names
    assert "".join(json.loads(d)["text"] for e, d in events if e == "token") == "Hello there"
    done = json.loads(events[-1][1])
    assert done["completion_tokens"] == 2 and done["model_calls"] >= 1 and done["turn_id"]


def test_chat_error_is_a_calm_event(tmp_path):
    from core.llm import ModelError

    s = make_services(tmp_path, replies=[ModelError("out of memory")])
    with running(s, tmp_path) as r, r.client(owner=True) as c:
        events = sse_events(c.post("/v1/chat", json={"message": "How are you?"}).text)
    assert "error" in [e for e, _ in events]
    msg = json.loads(next(d for e, d in events if e == "error"))["message"]
    assert "model failed" in msg
    s.close()


def test_chat_without_a_model_is_503(tmp_path):
    s = make_services(tmp_path)
    s.chat_model = None
    with running(s, tmp_path) as r, r.client(owner=True) as c:
        assert_error(c.post("/v1/chat", json={"message": "hi"}), 503, "unavailable")
    s.close()


def test_sleep_and_wake_endpoints(server):
    with server.client(owner=True) as owner:
        assert owner.post("/v1/sleep", json={"dry_run": True}).status_code == 202
        deadline = time.monotonic() + 20
        runs = []
        while time.monotonic() < deadline:
            runs = owner.get("/v1/sleep/runs").json()["runs"]
            if runs and runs[0]["status"] != "running":
                break
            time.sleep(0.1)
        assert runs and runs[0]["reason"] == "api" and runs[0]["dry_run"] is True
        assert owner.post("/v1/sleep/wake").json()["woken"] is False  # awake already
        assert_error(owner.post("/v1/sleep", json={"dry_run": "yes"}), 400, "bad_request")


# ------------------------------------------------------------------------------ processes
def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_a_write_in_another_process_is_found_at_once(server, tmp_path):
    """Issue 14 item 4: the server's in-memory index notices another process's writes
    before it recalls (and a private flag set elsewhere hides the record at once)."""
    db = str(tmp_path / "memory.db")
    with server.client(owner=True) as owner, server.client() as anon:
        assert owner.get("/v1/memories/search", params={"q": "quokka"}).json()["hits"] == []
        out = _python(
            "import sys; from core import Memory; m = Memory.open(sys.argv[1]); "
            "print(m.save('The owner adopted a quokka named Pip').id); m.close()",
            db,
        )
        rid = int(out.stdout.strip())
        hits = owner.get("/v1/memories/search", params={"q": "quokka"}).json()["hits"]
        assert [h["id"] for h in hits] == [rid]
        assert (
            rid
            in anon.get("/v1/memories/prompt", params={"q": "quokka Pip"}).json()["recalled_ids"]
        )
        _python(
            "import sys; from core import Memory; m = Memory.open(sys.argv[1]); "
            "m.set_private(int(sys.argv[2]), True); m.close()",
            db,
            str(rid),
        )
        body = anon.get("/v1/memories/prompt", params={"q": "quokka Pip"}).json()
        assert rid not in body["recalled_ids"] and "quokka" not in body["text"]
        _python(
            "import sys; from core import Memory; m = Memory.open(sys.argv[1]); "
            "m.update(int(sys.argv[2]), content='The owner adopted a wombat named Pip'); "
            "m.close()",
            db,
            str(rid),
        )
        hits = owner.get("/v1/memories/search", params={"q": "wombat"}).json()["hits"]
        assert [h["id"] for h in hits] == [rid]
        assert owner.get("/v1/memories/search", params={"q": "quokka"}).json()["hits"] == []


HOLD_LEASE = """
import sys, time
from core import Memory
from core.memory.coordination import SleepLease
m = Memory.open(sys.argv[1])
lease = m.attach(SleepLease)
lease.acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _hold_lease(db: str, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, db, str(seconds)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_turn_queued_while_another_process_sleeps_gets_sleeping(server, tmp_path):
    holder = _hold_lease(str(tmp_path / "memory.db"), 60)
    try:
        with server.client() as anon:
            assert anon.get("/v1/health").json()["sleeping"] is True
        with (
            server.client(owner=True) as owner,
            owner.stream("POST", "/v1/chat", json={"message": "What does Anna play?"}) as resp,
        ):
            lines = resp.iter_lines()
            first = next(line for line in lines if line.startswith("event:"))
            assert first == "event: sleeping"
            holder.kill()  # the sleeper dies: its lease goes stale at once (its pid is gone)
            holder.wait()
            rest = "\n".join(lines)
        assert "event: done" in rest and "event: token" in rest
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_eva_sleep_respects_a_live_lease_and_takes_over_a_dead_one(tmp_path):
    from core.memory.coordination import SleepLease
    from core.sleep import Sleeper, journal
    from core.sleep.journal import Journal

    db = tmp_path / "memory.db"
    Memory.open(db).close()
    holder = _hold_lease(str(db), 60)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-m", "eva_tui.cli", "--data", str(tmp_path), "sleep"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 75
        assert f"asleep in another process (process {holder.pid}" in out.stderr
        # a night it runs is not "interrupted" by a new Sleeper in this process
        with Memory.open(db) as mem:
            with mem.attach(Journal).transaction() as conn:
                journal.start_run(conn, time.time(), False, "cron", None)
            sleeper = Sleeper(mem, None)
            assert sleeper.is_sleeping() and sleeper.runs()[0].status == "running"
            holder.kill()
            holder.wait()
            # the holder is dead: its lease is taken over and its night marked failed
            assert not sleeper.is_sleeping()
            run = sleeper.run(dry_run=True, reason="manual")
            assert run.status in ("done", "skipped")
            older = sleeper.runs()[1]
            assert older.status == "failed" and "interrupted" in older.summary
            assert mem.attach(SleepLease).current() is None  # released after the night
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_stale_heartbeat_is_taken_over(tmp_path):
    from core.memory.coordination import LEASE_KEY, SleepLease

    with Memory.open(tmp_path / "memory.db") as mem:
        lease = mem.attach(SleepLease)
        old = time.time() - 3600  # a holder on another host, silent for an hour
        mem._storage.meta_set(
            LEASE_KEY,
            json.dumps(
                {"pid": 1, "host": "elsewhere", "nonce": "n", "since": old, "heartbeat": old}
            ),
        )
        assert lease.holder() is None
        taken = lease.acquire()
        assert taken is not None and taken.host == "elsewhere"
        assert lease.current().pid == os.getpid()
        mem._storage.meta_set(
            LEASE_KEY,
            json.dumps(
                {
                    "pid": 1,
                    "host": "elsewhere",
                    "nonce": "n",
                    "since": old,
                    "heartbeat": time.time(),
                }
            ),
        )
        from core.memory.coordination import LeaseHeld

        with pytest.raises(LeaseHeld):  # a fresh heartbeat elsewhere is respected
            lease.acquire()


def test_eva_serve_command(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "eva_tui.cli",
            "--data",
            str(tmp_path),
            "serve",
            "--host",
            "0.0.0.0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "--allow-remote" in bad.stderr
    p, port = eva_serve(tmp_path, env)
    try:
        lines = [p.stdout.readline(), p.stdout.readline()]
        assert f"http://127.0.0.1:{port}" in lines[0]
        token_path = tmp_path / "serve.token"
        assert str(token_path) in lines[1]
        assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
        token = token_path.read_text().strip()
        assert token not in "".join(lines)
        r = first_answer(p, f"http://127.0.0.1:{port}/v1/health")
        assert r.json()["status"] == "ok" and r.json()["chat"] is False
        r = httpx.get(
            f"http://127.0.0.1:{port}/v1/memories", headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 200 and r.json() == {"memories": []}
    finally:
        p.terminate()
        p.wait(timeout=20)


def test_serve_keeps_the_sleep_schedule_when_quiet(server):
    """SPEC §7 through `eva serve` alone: a due night runs once no turn came for idle_for,
    and never while a turn waits."""
    hub = server.api.hub
    hub.last_turn = time.monotonic()  # a turn just ended: not quiet
    assert hub.tick() is False
    hub.last_turn = time.monotonic() - 10 * 86_400
    hub.queue(+1)  # a turn is waiting
    assert hub.tick() is False
    hub.queue(-1)
    assert hub.tick() is True
    with server.client() as anon:
        assert anon.get("/v1/sleep/runs").json()["runs"][0]["reason"] == "schedule"


def test_chat_windows_are_kept_apart_by_context_and_channel(server):
    """A caller's earlier words reach its own next turn's window, never another channel's or
    another context's."""
    llm = server.services.chat_model
    with server.client() as anon, server.client(owner=True) as owner:
        anon.post(
            "/v1/chat",
            json={
                "message": "My code word is zebra42, ok?",
                "audience": "public",
                "channel": "alice",
            },
        )
        anon.post(
            "/v1/chat", json={"message": "What was it?", "audience": "public", "channel": "alice"}
        )
        assert "zebra42" in json.dumps(llm.calls[-1]["messages"])
        anon.post("/v1/chat", json={"message": "Hi?", "audience": "public", "channel": "bob"})
        assert "zebra42" not in json.dumps(llm.calls[-1]["messages"])
        owner.post("/v1/chat", json={"message": "Hi?", "channel": "alice"})
        assert "zebra42" not in json.dumps(llm.calls[-1]["messages"])
        assert_error(
            anon.post("/v1/chat", json={"message": "Hi?", "channel": "../x"}), 400, "bad_request"
        )


SLOW_NIGHT = """
import sys, time
from core import Memory
from core.sleep import Sleeper
m = Memory.open(sys.argv[1])
s = Sleeper(m, None)
s.lease.heartbeat_every = 0.2
def slow(ctx):
    print("sleeping", flush=True)
    for _ in range(600):
        ctx.check()
        time.sleep(0.05)
    return "done"
s.register_stage("slow", slow)
run = s.run(reason="cron")
print(run.status, flush=True)
"""


def test_wake_over_http_wakes_a_night_in_another_process(server, tmp_path):
    """POST /v1/sleep/wake while a cron `eva sleep` (another process) is sleeping: it is asked
    through the store and wakes at its next heartbeat."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-c", SLOW_NIGHT, str(tmp_path / "memory.db")],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout.readline().strip() == "sleeping"
        with server.client(owner=True) as owner:
            assert owner.get("/v1/health").json()["sleeping"] is True
            body = owner.post("/v1/sleep/wake").json()
            assert body["woken"] is True and f"process {p.pid}" in body["elsewhere"]
        assert p.stdout.readline().strip() == "woken"
        assert p.wait(timeout=30) == 0
        with server.client(owner=True) as owner:
            assert owner.get("/v1/health").json()["sleeping"] is False
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
