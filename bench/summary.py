"""Rolling summaries on a long real conversation (SPEC §8.3, issue 12).

    python -m bench.summary --data ../shared/data/locomo/locomo-dev.json --conversation 0
                            --messages 120 [--model NAME_OR_GGUF] [--chunk-messages 16]
                            [--probes 6] [--pause 3] [--threads N]

One LoCoMo conversation (its first ``--messages`` turns, "Speaker: text", the first speaker as
the owner, the other as Eva, dated by their sessions) is stored as one chat whose messages have
all left the live window; then the real summariser (:class:`core.chat.summarizer.Summarizer`, the
default model unless ``--model``) summarises it the way the app's background worker does — chunk
after chunk, 4 recent → merged, 4 merged → long-term.

Reports (JSON on stdout):

- ``fidelity``: the share of the source's names, numbers and dates
  (:func:`core.chat.summary_fidelity.salient_terms`) present in the summaries in use plus their verbatim
  lists — what the prompt would carry;
- ``model_fidelity``: the same share over the chunks whose summary the model wrote and the check
  accepted, and ``fallback_chunks``: how many chunks ended as the extractive fallback (whose
  verbatim list keeps every term by construction), ``rejected``: attempts the check rejected;
- ``seconds_per_chunk`` (p50/mean/max of the chunk steps; merges separately), the ``tiers``
  produced (created and in use), model calls;
- ``first_token``: ``--probes`` owner turns (LoCoMo questions) in that chat, with ``--pause``
  seconds between them (the owner typing), without any summarising, then the same number while
  a background worker summarises a copy of the conversation (interrupted by each turn, as in the
  app): p50/p95 of each and ``p95_worse_share``.

``environment`` includes the load average at start and end: timings under load are not
comparable with an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import chat_model, environment, peak_rss_mb, percentile
from bench.locomo import load as load_locomo
from core.chat import summaries as rolling
from core.chat import summarizer
from core.chat import summary_fidelity as fidelity
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import Token, TurnDone
from core.chat.transcript import Transcript
from core.clock import ManualClock
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from models.packaged import DEFAULT_CHAT_MODEL


def _round(x: float | None, d: int = 3) -> float | None:
    return None if x is None else round(x, d)


def _loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def store_chat(mem: Memory, conv: Conversation, chat_id: int, turns: list[Any]) -> list[int]:
    """Store LoCoMo turns as a chat's messages (first speaker → user); all left the window."""
    tr = mem.attach(Transcript)
    first_speaker = turns[0].text.split(":", 1)[0]
    ids = []
    for i, t in enumerate(turns):
        role = "user" if t.text.split(":", 1)[0] == first_speaker else "assistant"
        ids.append(
            tr.add(
                "default",
                "tui",
                f"locomo-{i}",
                role,
                t.text,
                private_ok=True,
                status="ok",
                tokens=conv.model.count_tokens(t.text),
                at=t.at,
                meta={"owner": True} if role == "user" else {},
                chat_id=chat_id,
            )
        )
    conv.chats.set_window_start(chat_id, ids[-1] + 1)
    return ids


def probe(conv: Conversation, text: str) -> float | None:
    start = time.perf_counter()
    first = None
    for ev in conv.turn(text, OWNER_TRUSTED):
        if isinstance(ev, Token) and first is None:
            first = time.perf_counter() - start
        elif isinstance(ev, TurnDone) and first is None and ev.first_token_seconds is not None:
            first = ev.first_token_seconds
    return first


def run(
    model: Any,
    data: str,
    conversation: int,
    messages: int,
    *,
    chunk_messages: int = 16,
    probes: int = 6,
    pause: float = 3.0,
    threads: int | None = None,
    log=lambda msg: None,
) -> dict[str, Any]:
    env_start = {"loadavg_start": _loadavg()}
    model, load_s, threads = chat_model(model, threads)
    convs = load_locomo(data)
    c = convs[conversation]
    turns = c.turns[:messages]
    source = "\n".join(t.text for t in turns)
    terms = fidelity.salient_terms(source)
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(c.end)
        mem = Memory.open(Path(tmp) / "memory.db", clock=clock)
        try:
            conv = Conversation(
                mem,
                model,
                config=ConversationConfig(learning=False, max_answer_tokens=120),
                clock=clock,
            )
            chat = conv.chat_id
            store_chat(mem, conv, chat, turns)
            conv._window_start = conv.chats.get(chat).window_start
            summ = conv.summarizer
            summ.chunk_messages = chunk_messages
            steps: list[summarizer.StepResult] = []
            t0 = time.perf_counter()

            def progress(r: summarizer.StepResult) -> None:
                steps.append(r)
                log(
                    f"{r.action} {r.seconds:.1f}s calls={r.model_calls} rejected={r.rejected} "
                    f"{r.summary.status if r.summary else ''} {r.note}"
                )

            summ.run(chat, conv.chats.get(chat).window_start, progress=progress)
            summarise_s = time.perf_counter() - t0
            active = conv.summaries.active(chat)
            allx = conv.summaries.all(chat)
            carried = "\n".join(s.text() for s in active)
            kept = sum(fidelity.present(t, carried) for t in terms)
            chunks = [r for r in steps if r.action == "chunk"]
            model_chunks = [r.summary for r in chunks if r.summary and r.summary.status == "ok"]
            model_terms = model_kept = 0
            msgs = {m.id: m.content for m in conv.history(limit=100_000)}
            for s in model_chunks:
                src = "\n".join(msgs[i] for i in conv.summaries.covers(s.id) if i in msgs)
                ts = fidelity.salient_terms(src)
                model_terms += len(ts)
                model_kept += sum(fidelity.present(t, s.text()) for t in ts)
            chunk_s = [r.seconds for r in chunks]
            notes = [r.note for r in steps if "rejected" in r.note]
            merge_s = [r.seconds for r in steps if r.action == "merge"]
            result: dict[str, Any] = {
                "model": getattr(model, "name", str(model)),
                "threads": threads,
                "conversation": c.sample_id,
                "messages": len(turns),
                "chunk_messages": chunk_messages,
                "source_terms": len(terms),
                "fidelity": _round(kept / len(terms) if terms else 1.0),
                "dropped_terms": sorted(t for t in terms if not fidelity.present(t, carried))[:40],
                "model_fidelity": _round(model_kept / model_terms if model_terms else None),
                "chunks": len(chunks),
                "fallback_chunks": sum(
                    1 for r in chunks if r.summary and r.summary.status == "fallback"
                ),
                "rejected": sum(r.rejected for r in steps),
                "model_calls": sum(r.model_calls for r in steps),
                "rejections": notes,
                "seconds_per_chunk": {
                    "p50": _round(percentile(chunk_s, 50)),
                    "mean": _round(sum(chunk_s) / len(chunk_s) if chunk_s else None),
                    "max": _round(max(chunk_s) if chunk_s else None),
                },
                "seconds_per_merge": _round(sum(merge_s) / len(merge_s) if merge_s else None),
                "summarise_s": round(summarise_s, 2),
                "tiers_created": {
                    rolling.TIER_NAMES[t]: sum(1 for s in allx if s.tier == t)
                    for t in rolling.TIER_NAMES
                },
                "tiers_in_use": {
                    rolling.TIER_NAMES[t]: sum(1 for s in active if s.tier == t)
                    for t in rolling.TIER_NAMES
                },
                "summary_tokens_in_prompt": model.count_tokens(rolling.render(active)),
                "source_tokens": model.count_tokens(source),
                "summaries": [
                    {
                        "id": s.id,
                        "tier": s.tier_name,
                        "status": s.status,
                        "prose": s.prose,
                        "verbatim": list(s.verbatim),
                    }
                    for s in active
                ],
            }
            if probes:
                result["first_token"] = first_token(
                    conv, mem, turns, c.questions, probes, pause, log
                )
        finally:
            mem.close()
    result["environment"] = {**environment(), **env_start, "loadavg_end": _loadavg()}
    result["load_s"] = round(load_s, 2)
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def first_token(
    conv: Conversation,
    mem: Memory,
    turns: list[Any],
    questions: list[Any],
    n: int,
    pause: float,
    log,
) -> dict[str, Any]:
    """First-token time of ``n`` owner turns without summarising, then of ``n`` more while a
    background worker keeps summarising a copy of the conversation (a second chat), as the
    app's worker does (each turn interrupts its model call; it resumes after)."""
    asks = [q.text for q in questions[: 2 * n]] or ["What did we talk about?"] * (2 * n)
    while len(asks) < 2 * n:
        asks += asks
    conv.warm_up(OWNER_TRUSTED)
    without: list[float] = []
    for text in asks[:n]:
        time.sleep(pause)
        ft = probe(conv, text)
        log(f"probe without: {ft}")
        if ft is not None:
            without.append(ft)
    copy = conv.chats.create("default", "tui", conv.clock.now(), "copy").id
    store_chat(mem, conv, copy, turns)
    stop = threading.Event()
    busy_steps: list[str] = []

    def background() -> None:
        summ = conv.summarizer
        while not stop.is_set():
            while summ.interrupt.is_set() and not stop.is_set():
                time.sleep(0.02)
            res = conv.summarise(chat_id=copy)
            busy_steps.extend(r.action for r in res)
            if not res or res[-1].action != "paused":
                conv.summaries.rebuild(copy, conv.clock.now())  # keep it busy

    worker = threading.Thread(target=background, daemon=True)
    worker.start()
    with_: list[float] = []
    try:
        for text in asks[n : 2 * n]:
            time.sleep(pause)
            ft = probe(conv, text)
            log(f"probe with: {ft}")
            if ft is not None:
                with_.append(ft)
    finally:
        stop.set()
        conv.summarizer.interrupt.set()
        worker.join(timeout=600)
        conv.summarizer.interrupt.clear()
    p95a, p95b = percentile(without, 95), percentile(with_, 95)
    return {
        "probes": n,
        "pause_s": pause,
        "without_s": [round(x, 3) for x in without],
        "with_s": [round(x, 3) for x in with_],
        "without_p50": _round(percentile(without, 50)),
        "without_p95": _round(p95a),
        "with_p50": _round(percentile(with_, 50)),
        "with_p95": _round(p95b),
        "p95_worse_share": _round((p95b - p95a) / p95a if p95a and p95b else None),
        "background_steps": {a: busy_steps.count(a) for a in sorted(set(busy_steps))},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a JSON file in LoCoMo's format")
    p.add_argument("--conversation", type=int, default=0)
    p.add_argument("--messages", type=int, default=120)
    p.add_argument("--model", default=DEFAULT_CHAT_MODEL)
    p.add_argument("--chunk-messages", type=int, default=16)
    p.add_argument("--probes", type=int, default=6, help="turns with and without (0: none)")
    p.add_argument("--pause", type=float, default=3.0, help="seconds between probe turns")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a = p.parse_args(argv)

    def log(msg: str) -> None:
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    result = run(
        a.model,
        a.data,
        a.conversation,
        a.messages,
        chunk_messages=a.chunk_messages,
        probes=a.probes,
        pause=a.pause,
        threads=a.threads,
        log=log,
    )
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
