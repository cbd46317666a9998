"""The raw chat model: load time, prompt and generation speed, KV-cache prefix reuse, peak RSS.

    python -m bench.llm                               # the default model (qwen2.5-coder-1.5b)
    python -m bench.llm --model qwen2.5-coder-0.5b --turns 10 --n-ctx 8192

Runs a growing conversation (the memory tools in the system prompt, as in an owner turn) through
``models.llama.LlamaChatModel.stream_chat`` — a turn whose answer calls tools gets the tool
results and one more model call, as the chat layer does — and prints JSON on stdout: per model
call the prompt tokens, the tokens actually evaluated (the rest came from the KV cache), the
reuse share, prompt tok/s (evaluated tokens / time to first token), generation tok/s, time to
first token; a forced ``memory_save`` call; and peak RSS. Greedy decoding, fixed seed.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bench.common import emit, environment, peak_rss_mb, rounded

SYSTEM = (
    "You are Eva, a warm and attentive companion who lives in the owner's terminal. You keep a "
    "long-term memory: when the owner tells you something the next Eva would be poorer without, "
    "save it with memory_save, one topic per call, without asking. Answer briefly."
)
USER_TURNS = [
    "Hi Eva! I just got back from a long walk in the park.",
    "Моя сестра Анна переехала в Казань в прошлом месяце.",
    "What's a good quick dinner with rice and eggs?",
    "I'm learning the cello, lesson every Tuesday.",
    "Как думаешь, стоит ли мне взять отпуск в мае?",
    "Remind me, what did I say about my sister?",
    "I had coffee with Oleg, he's starting a new job.",
    "Посоветуй книгу на выходные, что-нибудь лёгкое.",
    "My back hurts after the gym, any tips?",
    "Thanks, that's all for today. Good night!",
]


def run(model_spec: str, turns: int, n_ctx: int, max_tokens: int, threads: int | None) -> dict:
    from core.llm import Done, TextDelta, ToolCall
    from core.memory import tools as memtools
    from models.llama import load_chat_model

    t0 = time.perf_counter()
    kwargs = {"n_ctx": n_ctx, "seed": 0}
    if threads:
        kwargs["n_threads"] = threads
    model = load_chat_model(model_spec, **kwargs)
    load_seconds = time.perf_counter() - t0
    tools = [
        memtools.SCHEMAS[n]
        for n in ("memory_save", "memory_search", "memory_update", "memory_forget")
    ]
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    rows: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append({"role": "user", "content": USER_TURNS[i % len(USER_TURNS)]})
        # as the chat layer does: after tool calls, answer them and let the model go on (once)
        for step in range(2):
            text, calls, done = [], [], None
            for ev in model.stream_chat(
                messages, tools=tools, max_tokens=max_tokens, temperature=0.0
            ):
                if isinstance(ev, TextDelta):
                    text.append(ev.text)
                elif isinstance(ev, ToolCall):
                    calls.append(ev)
                elif isinstance(ev, Done):
                    done = ev
            assert done is not None
            msg: dict = {"role": "assistant", "content": "".join(text)}
            if calls:
                msg["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in calls]
            messages.append(msg)
            for _ in calls:
                messages.append({"role": "tool", "content": '{"ok": true, "id": 1}'})
            ttft = done.first_token_seconds or done.seconds
            gen_seconds = max(done.seconds - ttft, 1e-9)
            rows.append(
                {
                    "turn": i + 1,
                    "step": step + 1,
                    "prompt_tokens": done.prompt_tokens,
                    "evaluated_tokens": done.evaluated_tokens,
                    "reused_share": 1 - done.evaluated_tokens / max(done.prompt_tokens, 1),
                    "first_token_s": ttft,
                    "prompt_tok_per_s": done.evaluated_tokens / ttft if ttft else None,
                    "completion_tokens": done.completion_tokens,
                    "gen_tok_per_s": (done.completion_tokens - 1) / gen_seconds
                    if done.completion_tokens > 1
                    else None,
                    "tool_calls": [c.name for c in calls],
                }
            )
            if not calls:
                break
    forced_t0 = time.perf_counter()
    forced = model.force_tool_call(
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "I'm allergic to peanuts, please remember."},
        ],
        memtools.SCHEMAS["memory_save"],
        timeout=600,
    )
    forced_seconds = time.perf_counter() - forced_t0
    # the first turn has a cold cache: its prompt rate is the honest full-prompt speed
    cold = rows[0]
    later = [r for r in rows if r["turn"] >= 3] or rows
    total_gen = sum(r["completion_tokens"] for r in rows)
    return {
        "bench": "llm",
        "model": model_spec,
        "path": str(model.path),
        "n_ctx": n_ctx,
        "threads": threads,
        "load_seconds": load_seconds,
        "prompt_tok_per_s_cold": cold["prompt_tok_per_s"],
        "gen_tok_per_s_mean": (
            sum((r["gen_tok_per_s"] or 0) * r["completion_tokens"] for r in rows) / total_gen
        )
        if total_gen
        else None,
        "reused_share_from_turn_3": sum(r["evaluated_tokens"] for r in later)
        and (
            1 - sum(r["evaluated_tokens"] for r in later) / sum(r["prompt_tokens"] for r in later)
        ),
        "first_token_s_last_turn": rows[-1]["first_token_s"],
        "turns": rows,
        "forced_tool_call": {
            "name": forced.name,
            "arguments": forced.arguments,
            "seconds": forced_seconds,
            "evaluated_tokens": model.last_done.evaluated_tokens if model.last_done else None,
        },
        "peak_rss_mb": peak_rss_mb(),
        "environment": environment(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model",
        default=None,
        help="packaged model name or .gguf path (default: qwen2.5-coder-1.5b)",
    )
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--max-tokens", type=int, default=64, help="per turn")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    from models.packaged import DEFAULT_CHAT_MODEL

    spec = args.model or DEFAULT_CHAT_MODEL
    try:
        result = run(spec, args.turns, args.n_ctx, args.max_tokens, args.threads)
    except Exception as e:  # a missing model: say how to install it
        print(f"error: {e}", file=sys.stderr)
        return 1
    emit(rounded(result, 3), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
