"""Where the whole app's memory goes (issue 32 item 3): resident memory after each stage of a
session, with the app's own wiring and the real default models.

    python -m bench.footprint [--turns 20] [--model NAME] [--embedder SPEC] [--context-size N]
                              [--no-night] [--out FILE]

The app as ``eva`` brings it up (:class:`eva_runtime.services.Services` over a fresh data dir and
the default config; no TUI): ``open_memory`` (the embedders, then the store), ``load_model`` and
``finish`` (the conversation and the sleeper), the warm-up of the prompt prefix. Then owner
turns (``bench.chat``'s twenty Russian/English messages, over ``bench.chat``'s ten memories
saved first), each followed by the summariser as the app's background worker runs it, and one
night of sleep (``sleeper.run``; ``[sleep] min_memories = 5`` so the turns' store of some 15
memories is consolidated rather than skipped).

Prints JSON: per stage ``rss_mb`` (VmRSS), ``delta_mb`` (from the stage before), ``seconds``
and where the resident pages are (``/proc/self/smaps``): ``gguf_mb`` (the chat model's mapped
weights: file pages, shared and reclaimable), ``files_mb`` (libraries and other mapped files),
``anon_mb`` (the heap: KV cache, llama.cpp's buffers, numpy and onnxruntime); and the chat
model's ``kv_snapshots_mb`` (``models.kv_snapshots.KVSnapshots``). ``peak_rss_mb`` is VmHWM; the
target is ``rss_mb`` after the turns ≤ 2000 with the default model.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import emit, environment, rounded

TARGET_MB = 2000


def _status_mb(key: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def where(gguf: str | None = None) -> dict[str, float]:
    """Resident memory by kind of mapping (Linux ``/proc/self/smaps``), in MB."""
    out = {"gguf_mb": 0.0, "files_mb": 0.0, "anon_mb": 0.0}
    try:
        text = Path("/proc/self/smaps").read_text()
    except OSError:
        return out
    path = ""
    for line in text.splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
            path = head[5].strip() if len(head) == 6 else ""
        elif line.startswith("Rss:"):
            mb = int(line.split()[1]) / 1024.0
            if gguf and path == gguf:
                out["gguf_mb"] += mb
            elif path.startswith("/"):
                out["files_mb"] += mb
            else:
                out["anon_mb"] += mb
    return out


class Stages:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._last: float | None = None
        self._t = time.perf_counter()
        self.gguf: str | None = None
        self.model: Any = None

    def mark(self, stage: str, **extra: Any) -> dict[str, Any]:
        gc.collect()
        rss = _status_mb("VmRSS") or 0.0
        now = time.perf_counter()
        row: dict[str, Any] = {
            "stage": stage,
            "rss_mb": rss,
            "delta_mb": None if self._last is None else rss - self._last,
            "seconds": now - self._t,
            **where(self.gguf),
        }
        snaps = getattr(self.model, "snapshots", None)
        if snaps is not None:
            row["kv_snapshots"] = len(snaps)
            row["kv_snapshots_mb"] = sum(len(b) for _, b in snaps._items) / 2**20
            row["kv_snapshot_tokens"] = [len(t) for t, _ in snaps._items]
        row.update(extra)
        self._last, self._t = rss, now
        self.rows.append(row)
        print(f"[footprint] {stage}: {rss:.0f} MB", file=sys.stderr, flush=True)
        return row


def run(
    turns: int, model: str | None, embedder: str | None, context_size: int | None, night: bool
) -> dict[str, Any]:
    stages = Stages()
    from core import OWNER_TRUSTED
    from core.chat.events import Token, TurnDone, TurnError
    from eva_runtime import config as cfg
    from eva_runtime.services import Services
    from eva_tui import app as _app  # noqa: F401 - the TUI's modules are part of the app's start

    stages.mark("start")
    from bench.chat import MEMORIES, MESSAGES

    # the night consolidates the turns' store: the default min_memories (20) would skip a store
    # of some 15 memories without a model call
    table: dict[str, Any] = {"sleep": {"min_memories": 5}}
    if model:
        table.setdefault("llm", {})["model"] = {"general": model}
    if context_size:
        table.setdefault("llm", {})["context_size"] = context_size
    if embedder:
        table["memory"] = {"embedding_model": embedder}
    config = cfg.from_mapping(table)
    with tempfile.TemporaryDirectory() as tmp:
        s = Services(config, Path(tmp) / "data")
        mem = s.open_memory()
        stages.mark("embedders", embedder=s.embedder.name, embedder_state=s.embedder.state)
        for content, kind, imp in MEMORIES:
            mem.save(content, OWNER_TRUSTED, kind=kind, importance=imp)
        chat = s.load_model()
        if chat is None:
            raise SystemExit(f"the chat model did not load: {s.model.detail}")
        stages.model = chat
        stages.gguf = str(getattr(chat, "path", "")) or None
        s.finish()
        assert s.conversation is not None
        stages.mark(
            "model",
            model=s.model.name,
            context_size=chat.context_size,
            threads=getattr(chat, "threads", None),
        )
        s.warm_up()
        stages.mark("warm_up")
        rows: list[dict[str, Any]] = []
        conv = s.conversation
        for i in range(turns):
            text = MESSAGES[i % len(MESSAGES)]
            t0 = time.perf_counter()
            first = done = None
            for ev in conv.turn(text, s.turn_context()):
                if isinstance(ev, Token) and first is None:
                    first = time.perf_counter() - t0
                elif isinstance(ev, TurnDone):
                    done = ev
                elif isinstance(ev, TurnError):
                    rows.append({"turn": i + 1, "error": ev.message})
            if done is not None:
                rows.append(
                    {
                        "turn": i + 1,
                        "prompt_tokens": done.prompt_tokens,
                        "evaluated_tokens": done.evaluated_tokens,
                        "model_calls": done.model_calls,
                        "ttft_s": None if first is None else round(first, 2),
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
            conv.summarise()  # what the app's background worker does after a reply
            if i == 0:
                stages.mark("first_turn")
        prompts = [r["prompt_tokens"] for r in rows if "prompt_tokens" in r]
        stages.mark(
            f"after_{turns}_turns",
            max_prompt_tokens=max(prompts, default=None),
            memories=mem.live_count(),
        )
        after_turns = stages.rows[-1]["rss_mb"]
        if night and s.sleeper is not None:
            result = s.sleeper.run(reason="manual")
            stages.mark(
                "night",
                status=getattr(result, "status", None),
                stages_run=getattr(result, "stages", None),
                memories=mem.live_count(),
            )
        s.close()
    return {
        "bench": "footprint",
        "model": model or cfg.DEFAULT_CHAT_MODEL,
        "embedder": embedder or cfg.DEFAULT_EMBEDDER,
        "turns": turns,
        "stages": stages.rows,
        "turn_rows": rows,
        "rss_after_turns_mb": after_turns,
        "peak_rss_mb": _status_mb("VmHWM"),
        "target_mb": TARGET_MB,
        "meets_target": after_turns <= TARGET_MB,
        "environment": environment(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.footprint", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--model", help="chat model (default: the app's default)")
    ap.add_argument("--embedder", help="embedding model (default: the app's default)")
    ap.add_argument("--context-size", type=int, help="[llm] context_size (default: the app's)")
    ap.add_argument("--no-night", action="store_true", help="skip the night of sleep")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)
    if not Path("/proc/self/status").exists():
        raise SystemExit("bench.footprint reads /proc (Linux)")
    result = run(args.turns, args.model, args.embedder, args.context_size, not args.no_night)
    emit(rounded(result, 1), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
