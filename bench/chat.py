"""Chat turns with a real model: prompt size, KV-cache prefix reuse, time to first token.

    python -m bench.chat --model qwen2.5-coder-1.5b --turns 20

Runs a scripted Russian/English conversation against a store with a few dozen memories and
prints JSON: per turn the prompt tokens, the tokens actually evaluated (the rest came from the
KV cache), the reuse share, time to first token, generation tok/s, and the same per model call
(``calls``: the reply, a tool round, a nudge, a retry and its form; ``reuse_by_call`` sums them
up from turn 3); and peak RSS.
Targets (issue 4): ≥ 80 % of prompt tokens reused from turn 3 on; time to first token at turn
20 ≤ 3 s with the default model on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from core import OWNER_TRUSTED, Memory
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import CallFigures, Token, TurnDone, TurnError

MEMORIES = [
    ("Владелец живёт в Казани с 2021 года", "fact", 4),
    ("Owner's sister Anna is a doctor in Moscow", "fact", 4),
    ("Owner prefers short answers in the morning", "core", 5),
    ("Владелец пьёт зелёный чай без сахара", "fact", 2),
    ("Owner is learning to play the cello since March", "fact", 3),
    ("Кошку владельца зовут Мурка, ей 7 лет", "fact", 3),
    ("Owner runs 5 km every Saturday at 8 am", "fact", 3),
    ("Owner works as a backend engineer on payment systems", "core", 5),
    ("Владелец собирается в отпуск в Грузию в сентябре", "event", 3),
    ("Owner dislikes small talk about the weather", "fact", 2),
]
MESSAGES = [
    "Привет, Ева! Как дела?",
    "What do you remember about my sister?",
    "Я сегодня пробежал свои 5 км, устал.",
    "Recommend me a short cello exercise for beginners.",
    "Что мне взять с собой в Грузию?",
    "How is Murka doing, do you think she needs a vet check at her age?",
    "Напомни, какой чай я люблю?",
    "I had a rough day at work, the payment service went down.",
    "Давай составим план на субботу.",
    "What should I cook tonight, something quick?",
    "Я думаю поменять работу. Что скажешь?",
    "Tell me a fun fact about Kazan.",
    "Как лучше учить ноты для виолончели?",
    "My sister Anna is visiting next week, any ideas what to do?",
    "Спасибо, ты очень помогаешь.",
    "Summarise what we talked about today in two sentences.",
    "Какая погода обычно в Тбилиси в сентябре?",
    "Remind me why I started the cello.",
    "Мурка опять разбила чашку.",
    "Good night, Eva.",
]


def _call(c: CallFigures) -> dict[str, Any]:
    """One model call of a turn's reply: what it was for and its share from the KV cache."""
    return {
        "purpose": c.purpose,
        "prompt_tokens": c.prompt_tokens,
        "evaluated_tokens": c.evaluated_tokens,
        "reuse_share": c.reuse,
    }


def _by_purpose(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per kind of call, from turn 3: how many (and how many were cut off without figures),
    and the min and mean reuse of the rest."""
    shares: dict[str, list[float | None]] = {}
    for r in rows:
        if r.get("turn", 0) >= 3:
            for c in r.get("calls", []):
                shares.setdefault(c["purpose"].split(":")[0], []).append(c["reuse_share"])
    out: dict[str, dict[str, Any]] = {}
    for kind, v in sorted(shares.items()):
        got = [x for x in v if x is not None]
        out[kind] = {
            "calls": len(v),
            "cut_off": len(v) - len(got),
            "min_reuse": min(got) if got else None,
            "mean_reuse": round(sum(got) / len(got), 3) if got else None,
        }
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(model_name: str, turns: int, n_ctx: int, max_answer_tokens: int) -> dict:
    from models.llama import load_chat_model  # the bench is the one place that needs a real model

    t0 = time.perf_counter()
    model = load_chat_model(model_name, n_ctx=n_ctx)
    load_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp) / "memory.db")
        for content, kind, imp in MEMORIES:
            mem.save(content, OWNER_TRUSTED, kind=kind, importance=imp)
        conv = Conversation(
            mem,
            model,
            config=ConversationConfig(max_answer_tokens=max_answer_tokens, temperature=0.2),
        )
        rows: list[dict[str, Any]] = []
        for i in range(turns):
            text = MESSAGES[i % len(MESSAGES)]
            start = time.perf_counter()
            first = None
            done = None
            for ev in conv.turn(text, OWNER_TRUSTED):
                if isinstance(ev, Token) and first is None:
                    first = time.perf_counter() - start
                elif isinstance(ev, TurnDone):
                    done = ev
                elif isinstance(ev, TurnError):
                    rows.append({"turn": i + 1, "error": ev.message})
            if done is None:
                continue
            total = time.perf_counter() - start
            gen_s = max(1e-9, total - (first or 0.0))
            rows.append(
                {
                    "turn": i + 1,
                    "prompt_tokens": done.prompt_tokens,
                    "evaluated_tokens": done.evaluated_tokens,
                    # None when no call reported figures (not 1.0: nothing was measured)
                    "reuse_share": round(1 - done.evaluated_tokens / done.prompt_tokens, 3)
                    if done.prompt_tokens
                    else None,
                    "model_calls": done.model_calls,
                    "calls": [_call(c) for c in done.calls],
                    "ttft_s": round(first, 3) if first is not None else None,
                    "completion_tokens": done.completion_tokens,
                    "gen_tok_s": round(done.completion_tokens / gen_s, 2),
                    "seconds": round(total, 2),
                }
            )
        mem.close()
    later = [r for r in rows if r.get("reuse_share") is not None and r["turn"] >= 3]
    return {
        "model": model_name,
        "n_ctx": n_ctx,
        "load_s": round(load_s, 2),
        "turns": rows,
        "min_reuse_from_turn_3": min((r["reuse_share"] for r in later), default=None),
        "mean_reuse_from_turn_3": round(sum(r["reuse_share"] for r in later) / len(later), 3)
        if later
        else None,
        "reuse_by_call": _by_purpose(rows),
        "ttft_last_turn_s": rows[-1].get("ttft_s") if rows else None,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--n-ctx", type=int, default=8192)
    p.add_argument("--max-answer-tokens", type=int, default=256)
    a = p.parse_args(argv)
    json.dump(
        run(a.model, a.turns, a.n_ctx, a.max_answer_tokens),
        sys.stdout,
        indent=2,
        ensure_ascii=False,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
