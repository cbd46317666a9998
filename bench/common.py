"""Shared helpers of the benchmarks: timing, percentiles, peak RSS, JSON output, a no-op sleep
planner."""

from __future__ import annotations

import hashlib
import json
import math
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core.llm import ToolCall
from core.store.records import GLOBAL_SCOPE, Kind, Record, Source


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation; None for no values."""
    xs = sorted(float(v) for v in values)
    if not xs:
        return None
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def latency_summary(seconds: Iterable[float], digits: int = 3) -> dict[str, Any]:
    """p50 / p95 / max / mean of durations given in seconds, reported in milliseconds."""
    ms = [s * 1000.0 for s in seconds]
    if not ms:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None, "mean_ms": None}
    p50, p95 = percentile(ms, 50), percentile(ms, 95)
    assert p50 is not None and p95 is not None  # there are values
    return {
        "n": len(ms),
        "p50_ms": round(p50, digits),
        "p95_ms": round(p95, digits),
        "max_ms": round(max(ms), digits),
        "mean_ms": round(sum(ms) / len(ms), digits),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (ru_maxrss: KB on Linux, bytes on
    macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin":
        return round(rss / (1024 * 1024), 1)
    return round(rss / 1024, 1)


class Timer:
    """``with Timer() as t: ...`` then ``t.seconds``."""

    def __enter__(self) -> Timer:
        self._t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._t0


def environment() -> dict[str, Any]:
    import os

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": load_average(),
        "code": code_version(),
    }


def load_average() -> list[float] | None:
    """1/5/15-minute load average: other work on the machine makes tail latencies lie."""
    import os

    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


ROOT = Path(__file__).resolve().parent.parent


def code_version() -> dict[str, Any]:
    """Which code was measured: git HEAD, whether core/ differs from it, and a hash of the
    core sources (other work may be in flight; numbers belong to this exact core)."""
    digest = hashlib.sha256()
    for f in sorted((ROOT / "core").glob("*.py")):
        digest.update(f.name.encode())
        digest.update(f.read_bytes())
    out: dict[str, Any] = {"core_sha256": digest.hexdigest()[:16]}
    try:
        out["git_head"] = (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            or None
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "core"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        out["core_modified_since_head"] = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        out["git_head"] = None
    return out


def rounded(obj: Any, digits: int = 4) -> Any:
    """Round floats inside nested dicts/lists (for readable JSON)."""
    if isinstance(obj, float):
        return round(obj, digits)
    if isinstance(obj, dict):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [rounded(v, digits) for v in obj]
    return obj


def emit(result: Any, out: str | Path | None = None) -> None:
    """Print the result as JSON on stdout and, if ``out`` is given, write it there too."""
    text = json.dumps(result, indent=2, ensure_ascii=False, sort_keys=False)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    print(text)
    sys.stdout.flush()


def parse_int_list(value: str) -> list[int]:
    """ "1,5,10" -> [1, 5, 10]; accepts "10k"/"1m" suffixes."""
    out = []
    for part in value.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        mult = 1
        if part.endswith("k"):
            mult, part = 1000, part[:-1]
        elif part.endswith("m"):
            mult, part = 1_000_000, part[:-1]
        out.append(int(part) * mult)
    if not out:
        raise ValueError("empty list")
    return out


class NoopPlanner:
    """Answers every planning call with an empty plan; counts the calls. ``reasoning`` is what
    each plan says (a subclass may set its own)."""

    name = "noop"
    context_size = 32_768
    reasoning = "nothing to change"

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream_chat(self, *a: Any, **k: Any):  # pragma: no cover - not used by sleep
        raise NotImplementedError

    def warm_up(self, messages, tools=None) -> None:
        """Nothing to read in: there is no cache."""

    def force_tool_call(self, messages, tool, timeout=None, cancel=None) -> ToolCall:
        self.calls += 1
        return ToolCall("sleep_finish", {"reasoning": self.reasoning, "ops": []})

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None) -> dict:
        """A plan with no ops; a small decision (issue 17) answered "change nothing": both
        records stay true, different facts, no derived fact, keep, no new text."""
        self.calls += 1
        props = schema.get("properties", {})
        if "old" in props:
            return {"old": "still true"}
        if "core" in props or "importance" in props:
            return keep_calibration(props)
        for key, value in (("same", "different facts"), ("fact", "none"), ("fate", "keep")):
            if key in props:
                return {key: value}
        if "text" in props:
            return {"text": "none"}
        return {"reasoning": "", "ops": []}


def keep_calibration(props: dict[str, Any]) -> dict[str, Any]:
    """Phase 5's questions answered "change nothing"."""
    if "core" in props:
        options = props["core"]["enum"]
        return {"core": "leave as is" if "leave as is" in options else "essential"}
    return {"importance": max(props["importance"]["enum"])}


def chat_model(model: Any, threads: int | None) -> tuple[Any, float, int | None]:
    """``model`` as a chat model: a packaged name or a GGUF path is loaded here (n_ctx 8192,
    ``threads``), an object is used as it is. Returns the model, the seconds its load took and
    the threads it runs with."""
    if not isinstance(model, str | Path):
        return model, 0.0, threads
    from models.llama import load_chat_model  # the benches are the one place with a real model

    t0 = time.perf_counter()
    loaded = load_chat_model(str(model), n_ctx=8192, n_threads=threads)
    return loaded, time.perf_counter() - t0, loaded.threads


def fact_record(rid: int, content: str, at: float) -> Record:
    """A fact the owner said at ``at``, as a record outside any store: what a bench shows one
    of the model's questions (sleep's "same fact?", "is OLD still true?") about."""
    return Record(
        rid, content, Kind.FACT, 3, False, False, GLOBAL_SCOPE, at, at, None, 0, None,
        Source.TOOL, None,
    )  # fmt: skip
