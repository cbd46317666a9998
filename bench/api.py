"""``eva serve`` under a bounded loopback load (issue 14): N concurrent clients for T seconds.

    python -m bench.api [--clients 50] [--seconds 20] [--interval 0.25] [--memories 10000]

A store of ``--memories`` records (the scale bench's synthetic corpus, 10 % private, lexical
recall) is served by a real uvicorn in a separate process (``--worker serve``: the clients must
not share the server's interpreter). Each client, from one asyncio loop in this process, asks
``GET /v1/memories/prompt`` with a half-remembered query (anonymous: public or untrusted owner
audience), then waits until ``--interval`` has passed since it started the request
(``--interval 0``: back to back, a saturation run). Meanwhile one chat client posts
``/v1/chat`` once a second and times the Server-Sent Events: the first event (the ``memory``
note, after recall) and ``done``. The chat model is a stand-in that streams a fixed reply (the
HTTP, SSE and recall path is what is measured; real generation is ``bench.chat``'s).

Everything is on 127.0.0.1 and stops after ``--seconds``. The server's rate limit is off for
the run (all clients come from one address; the limit is a policy, not a cost), and the JSON
says so. Output: prompt p50/p95/max, requests/s, errors by kind, chat time to first event and to
done, the server's RSS (now and peak), load average before and after.

Target: 50 clients, prompt p95 <= 50 ms (lexical), 0 errors.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.common import emit, environment, latency_summary, load_average

TARGET_P95_MS = 50.0
ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------ the store
def build_store(db: Path, size: int, seed: int) -> list[str]:
    """``size`` records by bulk import (fast; dedup is not what is measured); returns queries."""
    import numpy as np

    from bench.scale import Corpus
    from core.memory.facade import Memory
    from core.store.records import Source

    corpus = Corpus(seed)
    texts = corpus.records(size, seed)
    rng = np.random.default_rng(seed + 3)
    now = time.time()
    items = [
        {
            "content": t,
            "kind": "event" if rng.random() < 0.3 else "fact",
            "importance": int(rng.integers(1, 6)),
            "private": bool(rng.random() < 0.1),
            "created_at": now - float(rng.random()) * 2 * 365 * 86400,
        }
        for t in texts
    ]
    with Memory.open(db) as mem:
        mem.import_records(items, source=Source.INIT)
    return [corpus.query(rng, texts[int(rng.integers(len(texts)))]) for _ in range(2000)]


# ------------------------------------------------------------------------------ the server
class StandIn:
    """A chat model that streams a fixed reply (no generation cost)."""

    name = "stand-in"
    context_size = 8192

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def warm_up(self, messages, tools=None) -> None:
        return None

    def stream_chat(self, messages, tools=None, cancel=None, max_tokens=None, temperature=0.7):
        from core.llm import Done, TextDelta

        n = 0
        for piece in ("I ", "remember ", "that."):
            n += 1
            yield TextDelta(piece)
        yield Done(100, 10, n, stopped=False)

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        return {"ops": []}

    def force_tool_call(self, messages, tool, timeout=None, cancel=None):
        raise NotImplementedError


def worker_serve(data: Path, port: int) -> int:
    from dataclasses import replace

    from core.config import MemoryConfig
    from core.memory.facade import Memory
    from eva_api.app import serve
    from eva_api.guard import ServeSettings
    from eva_api.token import ensure_token
    from eva_runtime import config as cfg
    from eva_runtime.services import Services

    config = cfg.from_mapping({}, None)
    config = replace(config, memory=MemoryConfig(embedding_model=None))
    mem = Memory.open(data / "memory.db", config.memory)
    s = Services(config, data, memory=mem, chat_model=StandIn())
    token, _ = ensure_token(data)
    settings = ServeSettings(port=port, rate=0)
    print("ready", flush=True)
    serve(s, settings, token)
    s.close()
    return 0


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _rss(pid: int) -> dict[str, float | None]:
    out: dict[str, float | None] = {"rss_mb": None, "peak_rss_mb": None}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out["rss_mb"] = round(int(line.split()[1]) / 1024, 1)
            elif line.startswith("VmHWM:"):
                out["peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return out


# ------------------------------------------------------------------------------ the load
async def _get(
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], host: str, target: str
) -> int:
    """One GET on a keep-alive connection; returns the status (the body is read and dropped)."""
    reader, writer = conn
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = next(
        (int(x.split(":", 1)[1]) for x in lines[1:] if x.lower().startswith("content-length:")),
        None,
    )
    if length is None:
        raise ValueError("no Content-Length")
    await reader.readexactly(length)
    return status


async def _load(
    url: str,
    token: str,
    queries: list[str],
    clients: int,
    seconds: float,
    interval: float,
    chat_every: float,
) -> dict[str, Any]:
    import httpx

    deadline = time.monotonic() + seconds
    host, port = url.removeprefix("http://").split(":")
    host_header = f"{host}:{port}"
    lat: list[float] = []
    errors: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:

        async def client(i: int) -> None:
            # a bare HTTP/1.1 keep-alive connection per client: httpx's pool costs more CPU
            # per request than the server does, and would measure the client
            rnd = random.Random(i)
            await asyncio.sleep(rnd.random() * max(interval, 0.01))  # spread the starts
            conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
            while time.monotonic() < deadline:
                q = rnd.choice(queries)
                params = {"q": q, "public": "true"} if rnd.random() < 0.5 else {"q": q}
                t0 = time.perf_counter()
                try:
                    if conn is None:
                        conn = await asyncio.open_connection(host, port)
                    status = await _get(
                        conn, host_header, "/v1/memories/prompt?" + urlencode(params)
                    )
                    took = time.perf_counter() - t0
                    if status == 200:
                        lat.append(took)
                    else:
                        errors[f"http_{status}"] += 1
                except (OSError, asyncio.IncompleteReadError, ValueError) as e:
                    took = time.perf_counter() - t0
                    errors[type(e).__name__] += 1
                    if conn is not None:
                        conn[1].close()
                    conn = None
                if interval > took:
                    await asyncio.sleep(interval - took)
            if conn is not None:
                conn[1].close()

        first: list[float] = []
        whole: list[float] = []

        async def chatter() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            rnd = random.Random(-1)
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                got_first = None
                try:
                    async with http.stream(
                        "POST",
                        "/v1/chat",
                        headers=headers,
                        json={"message": rnd.choice(queries) + "?"},
                    ) as r:
                        if r.status_code != 200:
                            errors[f"chat_http_{r.status_code}"] += 1
                        else:
                            async for line in r.aiter_lines():
                                if line.startswith("event:") and got_first is None:
                                    got_first = time.perf_counter() - t0
                                if line.startswith("event: done"):
                                    break
                            if got_first is None:
                                errors["chat_no_events"] += 1
                            else:
                                first.append(got_first)
                                whole.append(time.perf_counter() - t0)
                except httpx.HTTPError as e:
                    errors["chat_" + type(e).__name__] += 1
                await asyncio.sleep(max(0.0, chat_every - (time.perf_counter() - t0)))

        t_start = time.monotonic()
        tasks = [client(i) for i in range(clients)]
        if chat_every > 0:
            tasks.append(chatter())
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - t_start
    return {
        "prompt": latency_summary(lat),
        "requests": len(lat) + sum(v for k, v in errors.items() if not k.startswith("chat")),
        "requests_per_second": round(len(lat) / elapsed, 1) if elapsed else None,
        "errors": sum(errors.values()),
        "errors_by_kind": dict(errors),
        "chat": {
            "turns": len(first),
            "first_event": latency_summary(first),
            "done": latency_summary(whole),
        },
    }


def run(
    clients: int, seconds: float, interval: float, memories: int, seed: int, chat_every: float, log
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="eva-bench-api-") as d:
        data = Path(d)
        log(f"building a store of {memories} records…")
        t0 = time.perf_counter()
        queries = build_store(data / "memory.db", memories, seed)
        built = time.perf_counter() - t0
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.api",
                "--worker",
                "serve",
                "--data",
                str(data),
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            url = f"http://127.0.0.1:{port}"
            import httpx

            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(url + "/v1/health", timeout=2).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("the server did not come up") from None
                    time.sleep(0.1)
            token = (data / "serve.token").read_text().strip()
            rss_idle = _rss(proc.pid)
            load_before = load_average()
            cpu_before = _cpu_seconds(proc.pid)
            log(f"{clients} clients for {seconds:.0f} s (interval {interval} s)…")
            res = asyncio.run(_load(url, token, queries, clients, seconds, interval, chat_every))
            load_after = load_average()
            cpu_after = _cpu_seconds(proc.pid)
            rss = _rss(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    p95 = res["prompt"]["p95_ms"]
    return {
        "bench": "api",
        "params": {
            "clients": clients,
            "seconds": seconds,
            "interval_s": interval,
            "memories": memories,
            "seed": seed,
            "chat_every_s": chat_every,
            "recall": "lexical",
            "rate_limit": "off for the run (one client address)",
            "chat_model": "stand-in (fixed 3-token reply)",
        },
        "store_build_seconds": round(built, 2),
        **res,
        "server": {
            "idle": rss_idle,
            "after": rss,
            "cpu_ms_per_request": (
                round(
                    1000
                    * (cpu_after - cpu_before)
                    / max(1, res["requests"] + res["chat"]["turns"]),
                    2,
                )
                if cpu_before is not None and cpu_after is not None
                else None
            ),
        },
        "load_average": {"before": load_before, "after": load_after},
        "target": {
            "prompt_p95_ms": TARGET_P95_MS,
            "errors": 0,
            "met": bool(p95 is not None and p95 <= TARGET_P95_MS and res["errors"] == 0),
        },
        "environment": environment(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.api", description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument(
        "--interval",
        type=float,
        default=0.25,
        help="each client's request period in seconds (0: back to back)",
    )
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--chat-every",
        type=float,
        default=1.0,
        help="seconds between chat turns of the one chat client (0: no chat)",
    )
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--worker", choices=("serve",), help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker == "serve":
        return worker_serve(Path(args.data), args.port)
    if not 1 <= args.clients <= 1000 or not 0 < args.seconds <= 3600:
        ap.error("--clients must be 1..1000 and --seconds 0..3600")

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    emit(
        run(
            args.clients,
            args.seconds,
            args.interval,
            args.memories,
            args.seed,
            args.chat_every,
            log,
        ),
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
