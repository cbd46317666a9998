"""TUI latency, measured as a user would feel it: the real ``eva`` process in a pseudo-terminal.

- **first paint**: from spawning ``eva`` (with the real default models) to the first screen on
  the terminal — while the chat model is still loading (target ≤ 1 s);
- **keypress latency while a reply streams**: a reply streams into the chat (a fake model at a
  steady token rate, or the real model with ``--stream real``); the owner types in the message
  box; each keypress is timed from the byte written to the terminal until the typed character
  is drawn (target p95 ≤ 50 ms);
- **start-up** (issue 32 item 7), on a warm machine (one untimed start first, so the weights
  are assembled and in the page cache): from spawning ``eva`` (real default models, a fresh
  data dir) to a ready chat — the greeting drawn, which the chat shows once the memory is open
  and the model loaded (target ≤ 5 s) — and to the first token of a first message typed as
  soon as the screen painted (it waits in the box's queue meanwhile, as the owner's would).
  The token's moment is taken inside the app (``Conversation.turn`` yields it; the screen
  draws it within one frame).

Prints JSON on stdout::

    python -m bench.tui                       # both, fake streaming model
    python -m bench.tui --stream real         # stream from the real chat model
    python -m bench.tui --runs 5 --keys 60
    python -m bench.tui --skip-keypress        # first paint and start-up only
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import emit, environment, latency_summary, rounded

COLS, ROWS = 120, 36
ANSI = re.compile(
    rb"\x1b\[[0-9;?<>=!]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|"
    rb"\x1bP[^\x1b]*\x1b\\|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMNOZc]"
)
FIRST_PAINT_MARK = b"Alt+1"  # the Chat tab's key in the tab bar: the first screen is drawn
STREAM_MARK = b"Streaming"
ANSWER_MARK = "╭─ Eva".encode()
READY_MARK = re.compile(rb"model: (?!\S+ loading)\S+ +\xe2\x94\x82")  # "model: X  │"
CHAT_READY_MARK = b"Hello, I'm Eva"  # the greeting or the first run's welcome: chat is ready
FIRST_MESSAGE = b"Hi Eva! What can you do for me?\r"
KEYS = "123456789"
PARAGRAPH = (
    "More prose follows here, word after word, the way a long answer arrives: a "
    "sentence about the sea, another about the sky, and a third that ties them "
    "together before the paragraph ends. "
)
FAKE_TEXT = (
    "Streaming a long answer, as Eva does on a slow machine. " * 2
    + "\n\n## A heading\n\n"
    + "".join(f"- an item about the sea and the sky, line {'xyz'[i % 3]}\n" for i in range(12))
    + "\n```python\ndef hello():\n    return 'world'\n```\n\n"
    + "".join(PARAGRAPH * 3 + "\n\n" for _ in range(30))
)


def plain(data: bytes) -> bytes:
    return ANSI.sub(b"", data)


class Term:
    """A child process on a pseudo-terminal of COLS×ROWS, its output read in a thread."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.t0 = time.perf_counter()
        self.wall0 = time.time()  # the same moment on the clock another process can read
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        self.fd = master
        self.chunks: list[tuple[float, bytes]] = []
        self._lock = threading.Lock()
        self._new = threading.Condition(self._lock)
        self._alive = True
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while self._alive:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.05)
                if not r:
                    continue
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            now = time.perf_counter()
            with self._new:
                self.chunks.append((now, data))
                self._new.notify_all()

    def mark(self) -> int:
        with self._lock:
            return len(self.chunks)

    def wait_for(self, pred, since: int = 0, timeout: float = 60.0) -> float | None:
        """The time of the first chunk (from ``since``) after which the stripped output
        received since ``since`` satisfies ``pred``; None on timeout."""
        deadline = time.perf_counter() + timeout
        seen = b""
        i = since
        with self._new:
            while True:
                while i < len(self.chunks):
                    t, data = self.chunks[i]
                    seen += plain(data)
                    i += 1
                    if pred(seen):
                        return t
                left = deadline - time.perf_counter()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self._new.wait(min(left, 0.05))

    def write(self, data: bytes) -> float:
        t = time.perf_counter()
        os.write(self.fd, data)
        return t

    def close(self) -> None:
        try:
            self.write(b"\x11")  # ctrl+q
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._alive = False
        self._thread.join(timeout=2)
        os.close(self.fd)


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (Linux /proc), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVA_")}
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        COLUMNS=str(COLS),
        LINES=str(ROWS),
        XDG_CONFIG_HOME=str(home / "config"),
    )
    env.pop("TEXTUAL", None)
    return env


# ---------------------------------------------------------------------------- first paint
def first_paint(runs: int) -> dict[str, Any]:
    """Spawn the real ``eva`` (default models) and time its first screen."""
    paints, readies, loading_at_paint = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            term = Term(
                [sys.executable, "-m", "eva_tui.cli", "--data", str(home / "data")], _env(home)
            )
            try:
                t = term.wait_for(lambda s: FIRST_PAINT_MARK in s, timeout=60)
                if t is None:
                    raise RuntimeError("eva never painted its first screen")
                paints.append(t - term.t0)
                # the first frame arrives in several reads: take what came within 250 ms
                time.sleep(0.3)
                with term._lock:
                    frame = b"".join(plain(c) for at, c in term.chunks if at <= t + 0.25)
                loading_at_paint.append(b"loading" in frame)
                r = term.wait_for(
                    lambda s: READY_MARK.search(s) is not None or b"no model" in s, timeout=600
                )
                readies.append(None if r is None else r - term.t0)
            finally:
                term.close()
    return {
        "runs": runs,
        "first_paint": latency_summary(paints),
        "model_still_loading_at_first_paint": all(loading_at_paint),
        "model_ready_seconds": [None if r is None else round(r, 2) for r in readies],
        "target_first_paint_ms": 1000,
        "meets_target": bool(paints) and max(paints) <= 1.0,
    }


# ---------------------------------------------------------------------------- start-up
def _child_eva(data: str, stamp: str) -> int:
    """``eva --data DATA`` itself, with the wall-clock moment of the first reply token written
    to ``stamp`` (run inside the pseudo-terminal by the parent)."""
    from core.chat import conversation
    from core.chat.events import Token
    from eva_tui import cli

    turn = conversation.Conversation.turn

    def timed(self, *a, **k):
        seen = False
        for ev in turn(self, *a, **k):
            if not seen and isinstance(ev, Token):
                seen = True
                Path(stamp).write_text(repr(time.time()))
            yield ev

    conversation.Conversation.turn = timed  # type: ignore[method-assign]
    return cli.main(["--data", data])


def _wait_file(path: Path, term: Term, timeout: float) -> float | None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline and term.proc.poll() is None:
        try:
            return float(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def startup(runs: int) -> dict[str, Any]:
    """Warm start to a ready chat, and to the first token of a message typed at first paint."""
    ready, first_token, paint_to_ready = [], [], []
    for i in range(runs + 1):  # the first start warms the machine up: not timed
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            stamp = home / "first-token"
            term = Term(
                [
                    sys.executable,
                    "-m",
                    "bench.tui",
                    "--child-eva",
                    str(home / "data"),
                    "--stamp",
                    str(stamp),
                ],
                _env(home),
            )
            try:
                p = term.wait_for(lambda s: FIRST_PAINT_MARK in s, timeout=60)
                if p is None:
                    raise RuntimeError("eva never painted its first screen")
                term.write(FIRST_MESSAGE)  # typed at once: it waits for the chat
                r = term.wait_for(lambda s: CHAT_READY_MARK in s, timeout=600)
                t = _wait_file(stamp, term, 900)
                if i == 0:
                    continue
                ready.append(None if r is None else r - term.t0)
                paint_to_ready.append(None if r is None else r - p)
                first_token.append(None if t is None else t - term.wall0)
            finally:
                term.close()
    done = [r for r in ready if r is not None]
    return {
        "runs": runs,
        "ready_chat_seconds": [None if r is None else round(r, 2) for r in ready],
        "ready_chat": latency_summary(done),
        "paint_to_ready_seconds": [None if r is None else round(r, 2) for r in paint_to_ready],
        "first_token_seconds": [None if t is None else round(t, 2) for t in first_token],
        "first_token": latency_summary([t for t in first_token if t is not None]),
        "target_ready_chat_s": 5,
        "meets_target": len(done) == runs and max(done) <= 5.0,
    }


# ---------------------------------------------------------------------------- keypress latency
def _child_fake(rate: float) -> None:
    """The app on a temporary store with a model that streams FAKE_TEXT at ``rate`` tokens/s
    (run inside the pseudo-terminal by the parent)."""
    from core import Memory, MemoryConfig
    from core.llm import Done, TextDelta
    from eva_runtime import config as cfg
    from eva_runtime.services import Services
    from eva_tui.app import create_app

    class Steady:
        name = "steady-stream"
        context_size = 32_768

        def count_tokens(self, text: str) -> int:
            return len(text.split())

        def stream_chat(self, messages, tools=None, cancel=None, max_tokens=None, temperature=0.7):
            words = re.findall(r"\S+\s*|\s+", FAKE_TEXT)
            for w in words:
                if cancel is not None and cancel.is_set():
                    yield Done(stopped=True)
                    return
                yield TextDelta(w)
                time.sleep(1.0 / rate)
            yield Done()

        def warm_up(self, messages, tools=None) -> None:
            """Nothing to read in: there is no cache."""

        def force_tool_call(self, messages, tool, timeout=None, cancel=None):
            raise NotImplementedError("the steady stream only streams")

        def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
            raise NotImplementedError("the steady stream only streams")

    tmp = Path(tempfile.mkdtemp())
    mem = Memory.open(tmp / "memory.db", MemoryConfig())
    config = cfg.from_mapping({"memory": {"embedding_model": "none"}})
    services = Services(config, tmp, memory=mem, chat_model=Steady())
    create_app(services, tick_seconds=None).run()


def _type_keys(term: Term, keys: int, out: list[float]) -> int:
    """Type digits one at a time (each erased again), timing each until it is drawn."""
    missed = 0
    for i in range(keys):
        ch = KEYS[i % len(KEYS)].encode()
        since = term.mark()
        t0 = term.write(ch)
        t = term.wait_for(lambda s, ch=ch: ch in s, since=since, timeout=2.0)
        if t is None:
            missed += 1
        else:
            out.append(t - t0)
        time.sleep(0.03)
        term.write(b"\x7f")  # backspace: the box is empty again
        time.sleep(0.07)
    return missed


def keypress_latency(keys: int, stream: str, rate: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        if stream == "fake":
            argv = [sys.executable, "-m", "bench.tui", "--child", "--rate", str(rate)]
            ask = b"go\r"
            mark = STREAM_MARK
        else:
            argv = [sys.executable, "-m", "eva_tui.cli", "--data", str(home / "data")]
            ask = (
                b"Write a long story about the sea, in many paragraphs, using words only "
                b"and no numbers.\r"
            )
            mark = ANSWER_MARK  # the new answer's box (the greeting above does not repaint)
        term = Term(argv, _env(home))
        lat: list[float] = []
        idle: list[float] = []
        missed = 0
        try:
            if term.wait_for(lambda s: FIRST_PAINT_MARK in s, timeout=60) is None:
                raise RuntimeError("the app never painted")
            if term.wait_for(lambda s: READY_MARK.search(s) is not None, timeout=600) is None:
                raise RuntimeError("the chat model never became ready")
            time.sleep(0.5)
            idle_missed = _type_keys(term, max(10, keys // 3), idle)
            since = term.mark()
            term.write(ask)
            ok = term.wait_for(lambda s: mark in s, since=since, timeout=600)
            if ok is None:
                raise RuntimeError("no reply started streaming")
            time.sleep(0.3)
            cpu0, wall0 = _cpu_seconds(term.proc.pid), time.perf_counter()
            missed += _type_keys(term, keys, lat)
            streaming_at_end = term.proc.poll() is None
            cpu1, wall1 = _cpu_seconds(term.proc.pid), time.perf_counter()
        finally:
            term.close()
    summary = latency_summary(lat)
    return {
        "idle_baseline": {**latency_summary(idle), "missed": idle_missed},
        "stream": stream,
        "tokens_per_second": rate if stream == "fake" else None,
        "keys": keys,
        "missed": missed,
        "latency": summary,
        "app_alive": streaming_at_end,
        # CPU the app used per second of streaming while keys were typed (all its threads):
        # a load-independent cost; 1.0 = one core fully busy
        "app_cpu_per_second": None
        if cpu0 is None or cpu1 is None
        else round((cpu1 - cpu0) / (wall1 - wall0), 3),
        "target_p95_ms": 50,
        "meets_target": summary["p95_ms"] is not None and summary["p95_ms"] <= 50 and not missed,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tui", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="first-paint runs")
    ap.add_argument("--keys", type=int, default=40, help="keypresses timed while streaming")
    ap.add_argument(
        "--stream",
        choices=("fake", "real"),
        default="fake",
        help="who streams the reply: a steady fake model or the real chat model",
    )
    ap.add_argument("--rate", type=float, default=40.0, help="fake model tokens per second")
    ap.add_argument("--skip-first-paint", action="store_true")
    ap.add_argument("--skip-startup", action="store_true", help="no start-up runs")
    ap.add_argument(
        "--startup-runs",
        type=int,
        default=3,
        help="timed warm starts (to a ready chat and to a first token)",
    )
    ap.add_argument("--skip-keypress", action="store_true", help="no keypress latency")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-eva", metavar="DATA", help=argparse.SUPPRESS)
    ap.add_argument("--stamp", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)
    if args.child:
        _child_fake(args.rate)
        return 0
    if args.child_eva:
        return _child_eva(args.child_eva, args.stamp)
    result: dict[str, Any] = {
        "bench": "tui",
        "terminal": f"{COLS}x{ROWS}",
        "environment": environment(),
        "load_average": os.getloadavg(),
    }
    if not args.skip_first_paint:
        result["first_paint"] = first_paint(args.runs)
    if not args.skip_startup:
        result["startup"] = startup(args.startup_runs)
    if not args.skip_keypress:
        result["keypress_while_streaming"] = keypress_latency(args.keys, args.stream, args.rate)
    emit(rounded(result, 3), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
