"""``eva serve`` hardening (issue 25, SPEC §10 and §11): what an anonymous caller sees of the
journal, hostile requests that must not crash, the body of a chunked request, one token for
servers started at once, the access log, the command's flags, connection limits and timeouts,
the rate limit's buckets, loopback, uvicorn's own errors as JSON, a loading model.

Everything runs against a real uvicorn on a loopback port (tests/serve_kit.py)."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import socket
import stat
import time
from pathlib import Path

import pytest

from core.sleep import journal
from core.sleep.journal import Journal, OpLog, PhaseLog
from eva_api import token as srv_token
from eva_api.guard import Guard, ServeSettings, is_loopback
from eva_api.log import LOG_FILE, PrivateLogFile, setup_logging
from eva_api.token import TOKEN_FILE, ensure_token
from eva_runtime.services import Component
from eva_tui import cli
from tests.serve_kit import eva_serve, first_answer, running
from tests.test_serve import assert_error, make_services

MARK = "zqjournalsecret"  # private words a night's free text quotes
NUMBER = "987654"


def _night(mem) -> int:
    """A journal night whose every free-text field quotes the private marker and number."""
    with mem.attach(Journal).transaction() as conn:
        run = journal.start_run(conn, 1_780_000_000.0, False, f"because {MARK}", f"model-{MARK}")
        journal.write_phase(
            conn,
            run,
            0,
            PhaseLog(
                "memory",
                "review",
                "applied",
                0.25,
                2,
                plans=[{"reasoning": f"{MARK} {NUMBER}"}],
                ops=[
                    OpLog(
                        "merge",
                        [3, 4],
                        True,
                        f"same {MARK} {NUMBER}",
                        detail={"content": f"{MARK} {NUMBER}"},
                    ),
                    OpLog(
                        "merge",
                        [7, 8],
                        False,
                        f"why {MARK}",
                        f"the merge loses the numbers {NUMBER} of #7 ({MARK})",
                        detail={"content": f"{MARK}"},
                    ),
                ],
                note=f"note {MARK} {NUMBER}",
            ),
        )
        journal.finish_run(
            conn,
            run,
            1_780_000_100.0,
            "done",
            {"memory": "done"},
            True,
            f"merged {MARK} {NUMBER}",
            f"model-{MARK}",
        )
    return run


# ------------------------------------------------------------------------------ item 1
def test_anonymous_journal_is_built_from_an_allowlist(tmp_path):
    """SPEC §11 / issue 25 item 1: without the token, GET /v1/sleep/runs carries ids, counts,
    statuses, times and flags only — no refused reason, note, summary, why, plan, detail,
    reason or model text (a refusal quotes private numbers). The owner sees everything."""
    s = make_services(tmp_path)
    run_id = _night(s.memory)
    red = s.sleeper.runs()[0].redacted()
    assert MARK not in repr(red) and NUMBER not in repr(red)
    with running(s, tmp_path) as r, r.client() as anon, r.client(owner=True) as owner:
        full = owner.get("/v1/sleep/runs")
        shown = anon.get("/v1/sleep/runs")
    assert full.status_code == shown.status_code == 200
    assert full.text.count(MARK) >= 5 and NUMBER in full.text  # the check can fail
    assert f"the merge loses the numbers {NUMBER} of #7 ({MARK})" in full.text
    assert MARK not in shown.text and NUMBER not in shown.text, shown.text
    run = shown.json()["runs"][0]
    assert run["id"] == run_id and run["status"] == "done" and run["notable"] is True
    assert run["model"] is None and run["reason"] == "other"
    assert run["summary"] == "1 applied, 1 refused"
    phase = run["phases"][0]
    assert (phase["stage"], phase["name"], phase["calls"]) == ("memory", "review", 2)
    assert [
        (o["op"], o["ids"], o["applied"], o["why"], o["refused_reason"]) for o in phase["ops"]
    ] == [("merge", [3, 4], True, "", None), ("merge", [7, 8], False, "", "refused")]
    s.close()


# ------------------------------------------------------------------------------ item 2
def _no_tracebacks(records: list[logging.LogRecord]) -> None:
    for rec in records:
        assert rec.exc_info is None, (rec.name, rec.getMessage())
        assert "Traceback" not in rec.getMessage()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def watch_uvicorn(self) -> None:
        """Also uvicorn's own logger, which may not propagate to the root: call it once the
        server runs (uvicorn's default logging config drops the handlers it finds)."""
        logging.getLogger("uvicorn.error").addHandler(self)


@pytest.fixture
def all_logs(caplog):
    """Every record logged during the test, uvicorn's own included."""
    caplog.set_level(logging.DEBUG)
    handler = _Collect()
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        for name in ("", "uvicorn.error"):
            logging.getLogger(name).removeHandler(handler)


def test_hostile_requests_get_4xx_never_a_500_or_a_traceback(tmp_path, all_logs):
    """SPEC §10 ("bad input gets a 4xx") / issue 25 item 2: JSON nested 60,000 deep, ids past
    SQLite's 64-bit integers, offsets and limits like 1e20 or 20 digits: each a 400 or 404
    JSON error, and no traceback logged."""
    s = make_services(tmp_path)
    js = {"Content-Type": "application/json"}
    deep = [b"[" * 60_000, b'{"a":' * 12_000, b"[" * 30_000 + b"]" * 30_000]
    with (
        running(s, tmp_path, ServeSettings(rate=0, max_body=200_000)) as r,
        r.client() as anon,
        r.client(owner=True) as owner,
    ):
        all_logs.watch_uvicorn()
        for body in deep:
            assert_error(anon.post("/v1/chat", content=body, headers=js), 400, "bad_json")
            assert_error(owner.post("/v1/sleep", content=body, headers=js), 400, "bad_json")
        huge = "99999999999999999999"
        assert_error(owner.post(f"/v1/memories/archive/{huge}/restore"), 404, "not_found")
        assert_error(owner.post("/v1/memories/archive/-5/restore"), 404, "not_found")
        for name in ("offset", "limit"):
            for value in ("1e20", huge, "-1", "1.5", ""):
                assert_error(owner.get("/v1/memories", params={name: value}), 400, "bad_request")
        assert_error(anon.get("/v1/sleep/runs", params={"limit": "1e20"}), 400, "bad_request")
        assert anon.get("/v1/sleep/runs", params={"limit": huge}).status_code == 200
        assert (
            owner.get("/v1/memories", params={"limit": "10000", "offset": "5"}).status_code == 200
        )
    _no_tracebacks(all_logs.records)
    s.close()


def test_a_crash_is_a_json_500_with_only_its_type_logged(tmp_path, all_logs, monkeypatch):
    """SPEC §10 ("memory content never reaches a log") / issue 25 item 2: an endpoint that
    fails answers a JSON 500; the log has the exception's type, not its text or a traceback
    (uvicorn would log one if the error reached it)."""
    s = make_services(tmp_path)

    def boom(*a, **k):
        raise RuntimeError(f"private {MARK}")

    monkeypatch.setattr(s.memory, "prompt_section", boom)
    with running(s, tmp_path) as r, r.client() as anon:
        all_logs.watch_uvicorn()
        assert_error(anon.get("/v1/memories/prompt", params={"q": "x"}), 500, "internal")
    text = "\n".join(rec.getMessage() for rec in all_logs.records)
    assert "RuntimeError" in text and MARK not in text
    _no_tracebacks(all_logs.records)
    s.close()


# ------------------------------------------------------------------------------ item 3
def test_a_chunked_dry_run_request_is_a_dry_run(tmp_path):
    """SPEC §10 / issue 25 item 3: POST /v1/sleep reads a body sent chunked (no
    Content-Length): {"dry_run": true} that way is a dry run, not a real night."""
    s = make_services(tmp_path)

    def chunks():
        yield b'{"dry_run": '
        yield b"true}"

    with running(s, tmp_path) as r, r.client(owner=True) as owner:
        resp = owner.post(
            "/v1/sleep", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert resp.status_code == 202, resp.text
        assert "content-length" not in resp.request.headers
        runs: list = []
        for _ in range(400):  # bounded: until the night has ended
            runs = owner.get("/v1/sleep/runs").json()["runs"]
            if runs and runs[0]["status"] != "running":
                break
            time.sleep(0.05)
        assert runs and runs[0]["reason"] == "api"
        assert runs[0]["dry_run"] is True
    s.close()


# ------------------------------------------------------------------------------ item 4
def _racer(data_dir: str, barrier, out) -> None:
    barrier.wait()
    out.put(ensure_token(Path(data_dir))[0])


def test_servers_starting_at_once_agree_on_one_token(tmp_path):
    """SPEC §10 (one owner token) / issue 25 item 4: processes creating the token at the same
    moment all end with the same one, and the file holds it whole."""
    ctx = multiprocessing.get_context("fork")
    n = 4
    for trial in range(30):
        d = tmp_path / f"t{trial}"
        barrier, out = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=_racer, args=(str(d), barrier, out)) for _ in range(n)]
        for p in procs:
            p.start()
        tokens = {out.get(timeout=60) for _ in procs}
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        assert len(tokens) == 1, (trial, tokens)
        path = d / TOKEN_FILE
        assert path.read_text().strip() == tokens.pop()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert [f.name for f in d.iterdir()] == [TOKEN_FILE]  # no temporary files left


# ------------------------------------------------------------------------------ item 5
def test_the_access_log_is_a_private_file_without_query_or_token(tmp_path):
    """SPEC §10 ("memory content and the token never reach a log") and §11 (every file in
    the data dir 0600) / issue 25 item 5: serve.log gets one line per request — request id,
    method, path, status, time — without the query string or the token, mode 0600, and its
    rotated files are 0600 too."""
    s = make_services(tmp_path)
    handlers = setup_logging(tmp_path, stderr=False)
    try:
        with running(s, tmp_path) as r, r.client(owner=True) as owner:
            resp = owner.get("/v1/memories/prompt", params={"q": f"what about {MARK}"})
            assert resp.status_code == 200
            rid = resp.headers["x-request-id"]
            token = r.token
        log_path = tmp_path / LOG_FILE
        text = log_path.read_text()
        line = next(x for x in text.splitlines() if rid in x)
        assert "GET /v1/memories/prompt 200 " in line and line.endswith("ms")
        assert MARK not in text and "what about" not in text and token not in text
        assert stat.S_IMODE(log_path.stat().st_mode) == 0o600
    finally:
        for h in handlers:
            for name in ("eva.serve", "uvicorn.error"):
                logging.getLogger(name).removeHandler(h)
            h.close()
    small = PrivateLogFile(tmp_path / "rot.log", maxBytes=200, backupCount=2)
    rec = logging.LogRecord("eva.serve", logging.INFO, __file__, 1, "x" * 120, None, None)
    for _ in range(6):
        small.emit(rec)
    small.close()
    files = sorted(tmp_path.glob("rot.log*"))
    assert len(files) == 3
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


# ------------------------------------------------------------------------------ item 6
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-inf"])
def test_a_bad_rate_limit_is_a_one_line_error(tmp_path, monkeypatch, capsys, value):
    """SPEC §11 ("every command fails with one sentence … never a traceback") / issue 25
    item 6: `eva serve --rate-limit nan|inf|-1` exits 2 with one line, before serving."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))

    def must_not_start(*a, **k):
        raise AssertionError("serve started with a bad --rate-limit")

    monkeypatch.setattr(srv_token, "ensure_token", must_not_start)
    rc = cli.main(["--data", str(tmp_path / "data"), "serve", f"--rate-limit={value}"])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "--rate-limit" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------ item 7
def _read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes (the socket's timeout bounds each wait)."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def _http(port: int, raw: bytes) -> tuple[int, dict, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sk:
        sk.sendall(raw)
        return _parse(_read_all(sk))


def _parse(data: bytes) -> tuple[int, dict, bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_half_sent_requests_are_closed_and_others_still_answered(tmp_path):
    """SPEC §10 (secure by default) / issue 25 item 7: a connection whose request head does
    not arrive within head_timeout is answered 408 and closed (one that sends nothing is just
    closed), while held half-sent connections leave other clients answered."""
    s = make_services(tmp_path)
    settings = ServeSettings(rate=0, head_timeout=0.5, keep_alive=0.5, max_connections=8)
    with running(s, tmp_path, settings) as r:
        held = [socket.create_connection(("127.0.0.1", r.port), timeout=20) for _ in range(5)]
        try:
            for sk in held[:4]:
                sk.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1")
            with r.client() as c:
                assert c.get("/v1/health").status_code == 200
            # each is closed by the server (a recv that times out fails the test)
            status, headers, body = _parse(_read_all(held[0]))
            assert status == 408 and headers["content-type"] == "application/json"
            assert json.loads(body)["code"] == "timeout"
            assert _read_all(held[4]) == b""  # sent nothing: closed without a word
            for sk in held[1:4]:
                _read_all(sk)
            # a kept-alive connection left idle is closed too
            with socket.create_connection(("127.0.0.1", r.port), timeout=20) as sk:
                sk.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert b" 200 " in _read_all(sk)
        finally:
            for sk in held:
                sk.close()
    s.close()


def test_more_connections_than_the_limit_get_a_json_503(tmp_path):
    """SPEC §10 / issue 25 item 7: connections beyond max_connections are answered 503 JSON
    (code busy), and answered again once the others have gone."""
    import http.client

    s = make_services(tmp_path)
    settings = ServeSettings(rate=0, max_connections=3, keep_alive=60, head_timeout=60)
    with running(s, tmp_path, settings) as r:
        kept = []
        try:
            for _ in range(3):  # three kept-alive connections, each known to the server
                conn = http.client.HTTPConnection("127.0.0.1", r.port, timeout=20)
                conn.request("GET", "/v1/health")
                resp = conn.getresponse()
                assert resp.status == 200 and resp.read()
                kept.append(conn)
            with r.client() as c:
                assert_error(c.get("/v1/health"), 503, "busy")
        finally:
            for conn in kept:
                conn.close()
        with r.client() as c:
            for _ in range(200):  # bounded: until the server has seen the closes
                if c.get("/v1/health").status_code == 200:
                    break
                time.sleep(0.02)
            else:
                raise AssertionError("still busy after the kept connections closed")
    s.close()


# ------------------------------------------------------------------------------ item 8
def _scope(client: str, port: int = 8765) -> dict:
    return {
        "type": "http",
        "headers": [(b"host", f"127.0.0.1:{port}".encode())],
        "client": (client, 50000),
    }


def test_all_loopback_addresses_share_one_rate_limit_bucket():
    """SPEC §10 (rate limit, 429) / issue 25 item 8: 127.0.0.2, 127.0.0.3, ::1 and
    ::ffff:127.0.0.9 are one client to the rate limit; an IPv6 client counts by its /64."""
    guard = Guard(None, ServeSettings(rate=0.001, burst=2))
    assert guard.check(_scope("127.0.0.1")) is None
    assert guard.check(_scope("127.0.0.2")) is None
    for other in ("127.0.0.3", "::1", "::ffff:127.0.0.9", "127.1.2.3"):
        problem = guard.check(_scope(other))
        assert problem is not None and problem[0] == 429, other
    assert guard.check(_scope("2001:db8:1:2::1")) is None
    assert guard.check(_scope("2001:db8:1:2:ffff::7")) is None
    assert guard.check(_scope("2001:db8:1:2::99"))[0] == 429  # same /64
    assert guard.check(_scope("2001:db8:1:3::1")) is None  # another /64
    assert guard.check(_scope("192.0.2.7")) is None


# ------------------------------------------------------------------------------ item 9
def test_is_loopback_parses_addresses():
    """SPEC §10 ("loopback bind") / issue 25 item 9: only localhost, 127.0.0.0/8, ::1 and
    IPv4-mapped loopback are loopback; a name starting with "127." is not."""
    for host in (
        "localhost",
        "127.0.0.1",
        "127.9.8.7",
        "::1",
        "[::1]",
        "::ffff:127.0.0.1",
        "LOCALHOST",
    ):
        assert is_loopback(host), host
    for host in (
        "127.evil.example",
        "127.0.0.1.evil.example",
        "0.0.0.0",
        "::",
        "10.0.0.1",
        "::ffff:10.0.0.1",
        "localhost.evil.example",
        "",
        "127.0.0.256",
    ):
        assert not is_loopback(host), host


# ------------------------------------------------------------------------------ item 10
def test_uvicorns_own_400_and_a_trailing_slash_are_json(tmp_path):
    """SPEC §10 (JSON errors {detail, code, request_id}) / issue 25 item 10: a request uvicorn
    cannot parse gets a JSON 400, and a path with a trailing slash a JSON 404 (no bare 307
    redirect)."""
    s = make_services(tmp_path)
    with running(s, tmp_path) as r:
        for raw in (b"GARBAGE\x00 nonsense\r\n\r\n", b"GET / HTTP/1.1\r\nno colon here\r\n\r\n"):
            status, headers, body = _http(r.port, raw)
            assert status == 400 and headers["content-type"] == "application/json"
            data = json.loads(body)
            assert set(data) == {"detail", "code", "request_id"}
            assert data["code"] == "bad_request" and data["request_id"] == headers["x-request-id"]
        with r.client() as c:
            for path in ("/v1/health/", "/v1/sleep/runs/"):
                assert_error(c.get(path), 404, "not_found")
    s.close()


# ------------------------------------------------------------------------------ item 11
def test_chat_while_the_model_loads_says_so(tmp_path):
    """SPEC §10 ("bad input gets a 4xx with a clear message") / issue 25 item 11: while the
    chat model is still loading /v1/chat answers 503 code loading with Retry-After; with no
    model coming it stays "chat is off"."""
    s = make_services(tmp_path)
    s.chat_model = None
    s.model = Component("eva-model", "loading")
    with running(s, tmp_path) as r, r.client(owner=True) as c:
        resp = c.post("/v1/chat", json={"message": "hi"})
        body = assert_error(resp, 503, "loading")
        assert "loading" in body["detail"] and int(resp.headers["retry-after"]) >= 1
        assert c.get("/v1/health").json()["chat_loading"] is True
        s.model = Component("eva-model", "off", "--no-chat")
        body = assert_error(c.post("/v1/chat", json={"message": "hi"}), 503, "unavailable")
        assert "chat is off" in body["detail"]
        assert c.get("/v1/health").json()["chat_loading"] is False
    s.close()


def test_eva_serve_logs_to_a_private_file(tmp_path):
    """Issue 25 item 5 through the command: `eva serve` writes <data>/serve.log (0600)."""
    import httpx

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    data = tmp_path / "data"
    p, port = eva_serve(data, env)
    try:
        r = first_answer(p, f"http://127.0.0.1:{port}/v1/health?q={MARK}")
        assert r.status_code == 200 and r.json()["chat_loading"] is False
        resp = httpx.post(f"http://127.0.0.1:{port}/v1/chat", json={"message": "hi"})
        assert resp.json()["code"] == "unavailable"
        log_path = data / LOG_FILE
        text = log_path.read_text()
        assert f"{r.headers['x-request-id']} GET /v1/health 200 " in text
        assert MARK not in text
        assert stat.S_IMODE(log_path.stat().st_mode) == 0o600
    finally:
        p.terminate()
        p.wait(timeout=20)
