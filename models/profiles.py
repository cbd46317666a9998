"""A profile per chat model (issue 9): context, default threads, sampling (top-k/p, min-p,
repeat penalty, the temperature of grammar-forced JSON; a reply's temperature is the chat's
setting), and whether it can drive free-form tool calls — chosen by measurement.

A packaged model has its own profile; a local GGUF the owner points at gets the generic one
(structured memory writes work on any model that llama.cpp's grammar can steer).

Threads: llama.cpp splits every matrix product across its threads and waits for the slowest.
Measured with ``bench.llm`` (the 1.5B model, this 2-core machine): idle, 2 threads ran the prompt
at 86 tok/s and generated 11.4 tok/s against 46 and 6.4 with 1 thread (first token of a 944-token
prompt 11.0 s against 20.3 s); with one other process keeping a core busy, 2 threads fell to 39
and 3.4 tok/s while 1 thread kept 46 and 5.8. So the default reads the machine when the model
loads: all cores when they are idle, one fewer when they are not (1-minute load average ≥ 0.75).
``[llm] threads`` / ``EVA_LLM_THREADS`` override it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelProfile:
    name: str
    context_size: int = 8192
    top_k: int = 20
    top_p: float = 0.8
    min_p: float = 0.05
    repeat_penalty: float = 1.05
    structured_temperature: float = 0.2  # grammar-forced JSON (memory step, sleep plans)
    tool_calls: bool = False  # drives free-form tool calls reliably (then memory_writes=tools)
    note: str = ""


PROFILES: dict[str, ModelProfile] = {
    # Measured (issue 9): with tool schemas in the prompt it saved 1 of 9 told facts and answered
    # with "<tools>" markup; without them, 8 of 9 questions answered from memory. No repeat
    # penalty: it made the model spell a remembered "арахис" as "Araхис" (the memory's tokens
    # were penalised); echoes are caught by the reply guard instead.
    # Grammar-forced JSON is greedy (structured_temperature 0): at 0.2 the same sleep pair was
    # "same fact" one night and "different facts" the next (issue 17, two runs of one corpus).
    "qwen2.5-coder-1.5b": ModelProfile(
        "qwen2.5-coder-1.5b",
        repeat_penalty=1.0,
        tool_calls=False,
        structured_temperature=0.0,
        note="the default: replies without tools, memory by the structured step",
    ),
    "qwen2.5-coder-0.5b": ModelProfile(
        "qwen2.5-coder-0.5b", repeat_penalty=1.1, tool_calls=False, note="the test model"
    ),
    "smollm2-135m": ModelProfile(
        "smollm2-135m",
        context_size=2048,
        repeat_penalty=1.15,
        tool_calls=False,
        note="a smoke-test model; not a companion",
    ),
}
GENERIC = ModelProfile("generic", note="a local GGUF: structured memory writes by default")


def profile_for(spec: str | None) -> ModelProfile:
    """The profile of a packaged model name, else the generic one (any local GGUF path)."""
    return PROFILES.get(spec or "", GENERIC)


def auto_threads(cpus: int | None = None, load: float | None = None) -> int:
    """All cores when the machine is idle, one fewer when something else is running.
    ``$EVA_LLM_THREADS`` wins."""
    env = os.environ.get("EVA_LLM_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:  # never silently ignored (issue 15)
            raise ValueError(f"EVA_LLM_THREADS must be a whole number >= 1 (got {env!r})")
        return int(env)
    cpus = cpus or os.cpu_count() or 2
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (OSError, AttributeError):
            load = 0.0
    busy = load >= 0.75  # at least one core's worth of other work, averaged over a minute
    return max(1, cpus - 1) if busy else cpus
