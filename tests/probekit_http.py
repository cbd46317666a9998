"""The HTTP probes of issue 25 (tests/probekit.py runs them): one function per attack on
``eva serve`` — against the real uvicorn of ``probekit.http_env`` over the secret store, or a
real ``eva serve`` subprocess, or raw sockets — each returning a probe outcome."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.probekit import HttpEnv, _eva_cmd, _free_port, cli_env, has_traceback, outcome

PARTIAL_WAIT = 15.0  # seconds a half-sent or silent connection may stay open


def _json_error(resp) -> bool:
    try:
        body = resp.json()
    except ValueError:
        return False
    return resp.headers.get("content-type", "").startswith("application/json") and isinstance(
        body, dict
    )


def _http(name: str, env: HttpEnv, fn: Callable[[], tuple[bool, bool, int | None, str]]) -> dict:
    mark = env.log.mark()
    try:
        ok, leak, status, note = fn()
    except Exception as e:  # noqa: BLE001 - e.g. the server reset the connection
        ok, leak, status, note = False, False, None, f"{type(e).__name__}: {str(e)[:300]}"
    time.sleep(0.05)  # the server thread's log record of the request
    bad = env.log.bad_since(mark)
    if bad:
        note = f"{note}; server log: {bad[:3]}"
    return outcome(name, "http", ok, leak=leak, traceback=bool(bad), status=status, note=note)


def http_sleep_runs_anonymous(env: HttpEnv) -> dict:
    def go():
        srv = env.server
        with srv.client() as anon, srv.client(owner=True) as owner:
            missing = env.secrets.all_in(owner.get("/v1/sleep/runs").text)
            r = anon.get("/v1/sleep/runs")
        leaked = env.secrets.leaks(r.text)
        note = f"leaked {leaked}" if leaked else "redacted"
        if missing:  # the check would be vacuous
            return False, bool(leaked), r.status_code, f"owner view lacks {missing}; {note}"
        return r.status_code == 200, bool(leaked), r.status_code, note

    return _http("sleep_runs_anonymous", env, go)


def http_chat_deep_json(env: HttpEnv) -> dict:
    import httpx

    def go():
        srv = env.server
        bodies = {
            "60000 open": '{"message": "hi", "x": ' + "[" * 60_000,
            "30000 closed": '{"message": "hi", "x": ' + "[" * 30_000 + "]" * 30_000 + "}",
        }
        got = {}
        with srv.client() as anon:
            for k, body in bodies.items():
                try:
                    r = anon.post(
                        "/v1/chat", content=body, headers={"Content-Type": "application/json"}
                    )
                    got[k] = (r.status_code, _json_error(r))
                except httpx.TransportError as e:
                    got[k] = (599, f"connection: {type(e).__name__}")
        ok = all(400 <= s < 500 and j is True for s, j in got.values())
        worst = max(s for s, _ in got.values())
        return ok, False, worst, f"status, JSON per body: {got}"

    return _http("chat_deep_json", env, go)


def http_restore_huge_id(env: HttpEnv) -> dict:
    def go():
        with env.server.client(owner=True) as owner:
            r = owner.post("/v1/memories/archive/99999999999999999999/restore")
        return (r.status_code in (400, 404) and _json_error(r), False, r.status_code, r.text[:200])

    return _http("restore_huge_id", env, go)


def http_memories_huge_offset(env: HttpEnv) -> dict:
    import httpx

    def go():
        got = {}
        with env.server.client(owner=True) as owner:
            for v in ("1e20", "99999999999999999999", "-99999999999999999999"):
                for key in ("offset", "limit"):
                    try:
                        got[f"{key}={v}"] = owner.get("/v1/memories", params={key: v}).status_code
                    except httpx.TransportError as e:
                        got[f"{key}={v}"] = 599
                        got[f"{key}={v} error"] = type(e).__name__
        codes = [s for s in got.values() if isinstance(s, int)]
        ok = all(s in (200, 400) for s in codes)
        return ok, False, max(codes), f"status per value (599: no answer): {got}"

    return _http("memories_huge_offset", env, go)


def http_sleep_chunked_dry_run(env: HttpEnv) -> dict:
    def go():
        sleeper = env.services.sleeper
        before = sleeper.runs(1)[0].id if sleeper.runs(1) else 0

        def chunks():
            yield b'{"dry_run":'
            yield b" true}"

        with env.server.client(owner=True) as owner:
            r = owner.post(
                "/v1/sleep", content=chunks(), headers={"Content-Type": "application/json"}
            )
        if r.status_code != 202:
            return False, False, r.status_code, r.text[:200]
        deadline = time.monotonic() + 20
        run = None
        while time.monotonic() < deadline:
            runs = sleeper.runs(1)
            if runs and runs[0].id != before and runs[0].status != "running":
                run = runs[0]
                break
            time.sleep(0.05)
        if run is None:
            return False, False, r.status_code, "no night was journaled within 20 s"
        return (
            run.dry_run is True,
            False,
            r.status_code,
            f"the night ran with dry_run={run.dry_run} (status {run.status})",
        )

    return _http("sleep_chunked_dry_run", env, go)


def _token_child(ensure_token, data_dir: str, barrier, q) -> None:
    # forked from a process with threads: no import here (another thread may hold its lock)
    try:
        barrier.wait(10)
        token, path = ensure_token(Path(data_dir))
        q.put(("ok", token))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        q.put(("error", f"{type(e).__name__}: {e}"))


def http_token_race(env: HttpEnv, trials: int = 20, procs: int = 4) -> dict:
    """``eva serve`` started twice at once: both must end up with one token."""
    import multiprocessing as mp
    import queue

    from eva_api.token import ensure_token

    ctx = mp.get_context("fork")
    mark = env.log.mark()
    split = errors = 0
    notes = []
    base = Path(tempfile.mkdtemp(prefix="eva-probe-token-"))
    try:
        for t in range(trials):
            d = base / f"t{t}"
            barrier, q = ctx.Barrier(procs), ctx.Queue()
            ps = [
                ctx.Process(target=_token_child, args=(ensure_token, str(d), barrier, q))
                for _ in range(procs)
            ]
            for p in ps:
                p.start()
            got = []
            with contextlib.suppress(queue.Empty):
                for _ in ps:
                    got.append(q.get(timeout=30))
            for p in ps:
                p.join(10)
                if p.is_alive():
                    p.kill()
                    p.join()
            if len(got) < procs:
                errors += 1
                notes.append(f"{procs - len(got)} process(es) gave no answer in 30 s")
                continue
            bad = [g[1] for g in got if g[0] != "ok"]
            if bad:
                errors += 1
                notes.append(bad[0])
                continue
            on_disk = (d / "serve.token").read_text().strip()
            if len({g[1] for g in got} | {on_disk}) != 1:
                split += 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
    tb = any("Traceback" in n for n in notes)
    bad_log = env.log.bad_since(mark)
    return outcome(
        "token_race",
        "http",
        split == 0 and errors == 0,
        traceback=tb or bool(bad_log),
        status=None,
        note=f"{split} of {trials} trials ({procs} processes each) ended with "
        f"different tokens; {errors} raised {notes[:2]}",
    )


def http_access_log(env: HttpEnv) -> dict:
    """A real ``eva serve``: after requests, serve.log in the data dir holds the request lines,
    never the token nor the query's words."""
    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="eva-probe-log-"))
    data = tmp / "data"
    port = _free_port()
    p = subprocess.Popen(
        _eva_cmd("--data", str(data), "serve", "--port", str(port), "--no-chat"),
        env=cli_env(tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp,
    )
    note, ok, leak, status = "", False, False, None
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                status = httpx.get(url + "/v1/health", timeout=5).status_code
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise RuntimeError("eva serve did not start") from None
                time.sleep(0.1)
        token = (data / "serve.token").read_text().strip()
        words = "zqlogwordx 90817263"
        httpx.get(url + "/v1/memories/prompt", params={"q": words}, timeout=10)
        httpx.get(
            url + "/v1/memories",
            params={"contains": words},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        httpx.get(url + "/v1/nowhere", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        time.sleep(0.3)
        logs = [f for f in data.iterdir() if f.name.startswith("serve") and "log" in f.name]
        if not logs:
            note = f"no serve.log in the data dir (files: {sorted(f.name for f in data.iterdir())})"
        else:
            text = "".join(f.read_text(errors="replace") for f in logs)
            has = all(x in text for x in ("/v1/health", "/v1/memories/prompt", "/v1/nowhere"))
            secret = [x for x in (token, "zqlogwordx", "90817263") if x in text]
            modes = {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in logs}
            wide = [f.name for f in logs if stat.S_IMODE(f.stat().st_mode) & 0o077]
            leak = bool(secret) or bool(wide)
            ok = has
            note = (
                f"{[f.name for f in logs]} modes {modes}; request lines "
                f"{'present' if has else 'missing'}; holds {secret or 'no secrets'}"
            )
    except Exception as e:  # noqa: BLE001 - the probe's verdict
        note = f"{type(e).__name__}: {e}"
    finally:
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        shutil.rmtree(tmp, ignore_errors=True)
    tb = has_traceback(err)
    if tb:
        note += f"; stderr: {err[-300:]}"
    return outcome("access_log_file", "http", ok, leak=leak, traceback=tb, status=status, note=note)


def http_partial_connections(env: HttpEnv) -> dict:
    """A half-sent request line and a silent connection are closed within PARTIAL_WAIT."""
    mark = env.log.mark()
    port = env.server.port
    socks = {
        "partial": socket.create_connection(("127.0.0.1", port)),
        "silent": socket.create_connection(("127.0.0.1", port)),
        "half-headers": socket.create_connection(("127.0.0.1", port)),
    }
    socks["partial"].sendall(b"GET /v1/hea")
    socks["half-headers"].sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    closed: dict[str, float | None] = dict.fromkeys(socks)
    for s in socks.values():
        s.setblocking(False)
    try:
        while time.monotonic() - started < PARTIAL_WAIT and None in closed.values():
            for k, s in socks.items():
                if closed[k] is not None:
                    continue
                try:
                    chunk = s.recv(4096)
                    if chunk == b"":
                        closed[k] = time.monotonic() - started
                    # an answer (408/400) is fine too: wait for the close after it
                except BlockingIOError:
                    pass
                except OSError:
                    closed[k] = time.monotonic() - started
            time.sleep(0.05)
    finally:
        for s in socks.values():
            s.close()
    ok = None not in closed.values()
    bad = env.log.bad_since(mark)
    return outcome(
        "partial_connections_time_out",
        "http",
        ok,
        traceback=bool(bad),
        note="closed after "
        + ", ".join(
            f"{k}: {f'{v:.1f}s' if v is not None else f'> {PARTIAL_WAIT:.0f}s (open)'}"
            for k, v in closed.items()
        ),
    )


def http_rate_limit_loopback(env: HttpEnv) -> dict:
    """127.0.0.1, 127.0.0.2, … are one client: one bucket."""
    from eva_api.guard import Guard, ServeSettings

    guard = Guard(None, ServeSettings(rate=1, burst=3))
    allowed = 0
    for i in range(1, 11):
        scope = {
            "type": "http",
            "client": (f"127.0.0.{i}", 40000 + i),
            "headers": [(b"host", b"127.0.0.1:8765")],
        }
        if guard.check(scope) is None:
            allowed += 1
    return outcome(
        "rate_limit_shared_across_loopback",
        "http",
        allowed <= 4,
        note=f"{allowed} of 10 requests from 127.0.0.1..10 passed a burst of 3",
    )


def http_is_loopback(env: HttpEnv) -> dict:
    from eva_api.guard import is_loopback

    got = {h: is_loopback(h) for h in ("127.evil.example", "127.0.0.1", "::1")}
    ok = got == {"127.evil.example": False, "127.0.0.1": True, "::1": True}
    return outcome("is_loopback_rejects_127_names", "http", ok, note=str(got))


def _raw(port: int, data: bytes, wait: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        out = b""
        with contextlib.suppress(OSError):
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
    return out


def http_garbage_is_json(env: HttpEnv) -> dict:
    """uvicorn's own 400 (a request it cannot parse) answers JSON too."""

    def go():
        raw = _raw(env.server.port, b"\x16\x03\x01garbage here\r\n\r\n")
        head, _, body = raw.partition(b"\r\n\r\n")
        first = head.split(b"\r\n", 1)[0].decode("latin-1")
        ctype = re.search(rb"(?im)^content-type:\s*([^\r\n;]+)", head)
        try:
            parsed = json.loads(body)
            is_json = isinstance(parsed, dict) and "code" in parsed
        except ValueError:
            is_json = False
        m = re.match(r"HTTP/1\.[01] (\d+)", first)
        status = int(m.group(1)) if m else None
        ok = (
            status == 400
            and is_json
            and ctype is not None
            and ctype.group(1).strip() == b"application/json"
        )
        return ok, False, status, f"{first!r} {ctype.group(1) if ctype else b''!r} {body[:80]!r}"

    return _http("garbage_request_answers_json", env, go)


def http_trailing_slash_is_json(env: HttpEnv) -> dict:
    def go():
        with env.server.client() as anon:
            r = anon.get("/v1/health/", follow_redirects=False)
        return (
            _json_error(r),
            False,
            r.status_code,
            f"{r.status_code} {r.headers.get('content-type')!r} {r.text[:80]!r}",
        )

    return _http("trailing_slash_answers_json", env, go)


def http_chat_while_loading(env: HttpEnv) -> dict:
    """The chat model is still loading: /v1/chat says so, with Retry-After."""
    from eva_runtime.services import Component

    def go():
        s = env.services
        saved = s.chat_model, s.model, getattr(s, "model_loading", None)
        s.chat_model = None
        s.model = Component("probe-model", "loading")
        s.model_loading = True
        try:
            with env.server.client(owner=True) as owner:
                r = owner.post("/v1/chat", json={"message": "hi"})
        finally:
            s.chat_model, s.model = saved[0], saved[1]
            if saved[2] is None:
                del s.model_loading
            else:
                s.model_loading = saved[2]
        body = r.text.lower()
        ok = (
            r.status_code == 503
            and "retry-after" in r.headers
            and "loading" in body
            and _json_error(r)
        )
        return (
            ok,
            False,
            r.status_code,
            f"retry-after={r.headers.get('retry-after')!r} {r.text[:160]}",
        )

    return _http("chat_while_model_loads", env, go)


def http_anonymous_sweep(env: HttpEnv) -> dict:
    """Every endpoint anonymously, and the owner's group/public views: no secret anywhere
    (the chat's stream and the prompt the model was given included)."""

    def go():
        srv = env.server
        sec = env.secrets
        llm = env.services.chat_model
        seen: dict[str, list[str]] = {}
        statuses = []
        q = "Owner's passport number bank PIN diagnosis safe code"
        with srv.client() as anon, srv.client(owner=True) as owner:
            missing = sec.all_in(
                owner.get("/v1/memories/prompt", params={"q": q}).text
                + owner.get("/v1/sleep/runs").text
            )
            reqs = [
                ("anon", anon, "GET", "/v1/health", {}),
                ("anon", anon, "GET", "/openapi.json", {}),
                ("anon", anon, "GET", "/v1/sleep/runs", {}),
                ("anon", anon, "GET", "/v1/memories", {}),
                ("anon", anon, "GET", "/v1/memories/search?q=passport", {}),
                ("anon", anon, "POST", "/v1/memories/archive/1/restore", {}),
                ("anon", anon, "POST", "/v1/sleep", {}),
                ("anon", anon, "POST", "/v1/sleep/wake", {}),
            ]
            for who, c, aud in (
                ("anon", anon, {}),
                ("anon", anon, {"audience": "group"}),
                ("anon", anon, {"audience": "public"}),
                ("anon", anon, {"public": "true"}),
                ("owner", owner, {"audience": "group"}),
                ("owner", owner, {"audience": "public"}),
                ("owner", owner, {"public": "true"}),
            ):
                reqs.append((who, c, "GET", "/v1/memories/prompt", {"q": q, **aud}))
            for who, path_, method, c, params in ((r[0], r[3], r[2], r[1], r[4]) for r in reqs):
                resp = c.request(method, path_, params=params or None)
                statuses.append(resp.status_code)
                bad = sec.leaks(resp.text)
                if bad:
                    seen[f"{who} {method} {path_} {params}"] = bad
            for who, c, body in (
                ("anon", anon, {"audience": "owner"}),
                ("anon", anon, {"audience": "group"}),
                ("anon", anon, {"audience": "public"}),
                ("owner", owner, {"audience": "group"}),
                ("owner", owner, {"audience": "public"}),
                ("owner", owner, {"audience": "owner", "trusted": False}),
            ):
                calls = len(llm.calls)
                resp = c.post("/v1/chat", json={"message": f"Tell me: {q}", **body})
                statuses.append(resp.status_code)
                model_saw = json.dumps(llm.calls[calls:], ensure_ascii=False, default=str)
                bad = sec.leaks(resp.text) + sec.leaks(model_saw)
                if bad:
                    seen[f"{who} chat {body}"] = bad
        if missing:
            return False, bool(seen), max(statuses), f"owner view lacks {missing}"
        return (
            max(statuses) < 500,
            bool(seen),
            max(statuses),
            f"{len(statuses)} requests; leaks: {seen or 'none'}",
        )

    return _http("anonymous_sweep", env, go)


HTTP_PROBES: list[Callable[[HttpEnv], dict]] = [
    http_sleep_runs_anonymous,
    http_anonymous_sweep,
    http_chat_deep_json,
    http_restore_huge_id,
    http_memories_huge_offset,
    http_sleep_chunked_dry_run,
    http_token_race,
    http_access_log,
    http_partial_connections,
    http_rate_limit_loopback,
    http_is_loopback,
    http_garbage_is_json,
    http_trailing_slash_is_json,
    http_chat_while_loading,
]
