"""Shared pieces of the sleep tests (SPEC §7): a scripted planner that answers each phase from
its own queue, plan/op builders, and a small dated corpus. The kit's own test is in
tests/test_sleep.py (test_planner_answers_each_phase_from_its_queue)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core import ManualClock, Memory, MemoryConfig
from core.config import SleepConfig
from core.llm import ToolCall
from core.sleep import Sleeper
from core.sleep.journal import PhaseLog
from tests.fake_llm import ScriptedLLM

DAY = 86_400.0
T0 = 1_780_000_000.0
OLD = T0 - 60 * DAY  # older than keep_recent, younger than two fact half-lives
ANCIENT = T0 - 400 * DAY  # past two half-lives of a fact: a forgetting candidate if trivial

Reply = ToolCall | Exception | Callable[[list, dict], Any]


def plan(*ops: dict[str, Any], reasoning: str = "looked at it") -> ToolCall:
    return ToolCall("sleep_finish", {"reasoning": reasoning, "ops": list(ops)})


def merge(ids, content: str, why: str = "duplicates") -> dict[str, Any]:
    return {"op": "merge", "ids": list(ids), "content": content, "why": why}


def resolve(keep: int, drop, why: str = "the newer one is true") -> dict[str, Any]:
    return {"op": "resolve", "keep": keep, "drop": list(drop), "why": why}


def rewrite(rid: int, content: str, why: str = "dated") -> dict[str, Any]:
    return {"op": "rewrite", "id": rid, "content": content, "why": why}


def split(rid: int, parts, why: str = "two topics") -> dict[str, Any]:
    return {"op": "split", "id": rid, "parts": list(parts), "why": why}


def derive(ids, content: str, why: str = "a habit", **extra: Any) -> dict[str, Any]:
    return {
        "op": "derive",
        "from": list(ids),
        "content": content,
        "kind": "fact",
        "why": why,
        **extra,
    }


def forget(rid: int, why: str = "faded trivia") -> dict[str, Any]:
    return {"op": "forget", "id": rid, "why": why}


def set_kind(rid: int, kind: str, why: str = "recalibrated") -> dict[str, Any]:
    return {"op": "set_kind", "id": rid, "kind": kind, "why": why}


def set_importance(rid: int, importance: int, why: str = "recalibrated") -> dict[str, Any]:
    return {"op": "set_importance", "id": rid, "importance": importance, "why": why}


def phase(run, name: str) -> PhaseLog:
    return next(p for p in run.phases if p.name == name)


def phase_of(tool: dict[str, Any]) -> str:
    d = tool.get("description", "")
    if "forgetting" in d:
        return "forgetting"
    if "kinds" in d:
        return "calibrate"
    return "review"


class PlannerLLM(ScriptedLLM):
    """A scripted sleep planner. Each phase has its own queue of replies (a ToolCall, an
    exception to raise, or a function ``(messages, tool) -> reply``); a plan is handed to the
    first call whose ids it names (so tests need not know the order clusters are reviewed
    in); an empty queue answers with an empty plan. Every call is recorded with its phase."""

    name = "scripted-planner"

    def __init__(
        self,
        review: list[Reply] | None = None,
        forgetting: list[Reply] | None = None,
        calibrate: list[Reply] | None = None,
    ) -> None:
        super().__init__([])
        self.queues: dict[str, list[Reply]] = {
            "review": list(review or []),
            "forgetting": list(forgetting or []),
            "calibrate": list(calibrate or []),
        }
        self.tool_calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @staticmethod
    def _named(reply: Reply) -> set[int]:
        if not isinstance(reply, ToolCall) or not isinstance(reply.arguments, dict):
            return set()
        out: set[int] = set()
        for op in reply.arguments.get("ops", []):
            if isinstance(op, dict):
                for key in ("ids", "from", "drop", "id", "keep"):
                    v = op.get(key)
                    out.update(x for x in (v if isinstance(v, list) else [v]) if isinstance(x, int))
        return out

    def _pick(self, q: list[Reply], enum: set[int]) -> Reply:
        """The first queued reply for this call: a non-plan (exception, function), a plan
        naming no ids, or a plan naming an id of this call; plans about other clusters
        wait for theirs."""
        for i, reply in enumerate(q):
            named = self._named(reply)
            if not named or named & enum:
                return q.pop(i)
        return plan(reasoning="nothing to change")

    def force_tool_call(self, messages, tool, timeout=None) -> ToolCall:
        phase = phase_of(tool)
        with self.lock:
            self.tool_calls.append(
                {"phase": phase, "messages": messages, "tool": tool, "timeout": timeout}
            )
            reply = self._pick(self.queues[phase], set(self.enum_ids(-1)))
        if callable(reply) and not isinstance(reply, ToolCall | Exception):
            reply = reply(messages, tool)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def count(self, phase: str | None = None) -> int:
        return sum(phase is None or c["phase"] == phase for c in self.tool_calls)

    def enum_ids(self, i: int = -1) -> list[int]:
        """The ids the i-th call's tool lets the model name."""
        return tool_ids(self.tool_calls[i]["tool"])


def tool_ids(tool: dict[str, Any]) -> list[int]:
    """The ids a sleep_finish tool lets the model name (its enum)."""
    ops = tool["parameters"]["properties"]["ops"]["items"]["anyOf"]
    for op in ops:
        for key in ("ids", "id", "from"):
            prop = op["properties"].get(key)
            if prop is None:
                continue
            if prop.get("type") == "array":
                return list(prop["items"]["enum"])
            return list(prop["enum"])
    return []


def open_memory(
    tmp_path: Path, clock: ManualClock, embedder=None, name: str = "memory.db", **config: Any
) -> Memory:
    return Memory.open(tmp_path / name, MemoryConfig(**config), clock, embedder=embedder)


def sleeper(mem: Memory, planner, clock: ManualClock, **config: Any) -> Sleeper:
    config.setdefault("min_memories", 0)
    # these tests script whole plans: the planner protocol of review="plan" (the decisions of
    # review="decide" are tested with tests/decide_kit.py in test_sleep_decisions.py and the
    # rule modules it names)
    config.setdefault("review", "plan")
    return Sleeper(mem, planner, SleepConfig(**config), clock)


# A small corpus: pairs that cluster lexically (Jaccard well above 0.5) and fillers that share
# nothing with anything else. Keys name records in the tests.
CORPUS: dict[str, dict[str, Any]] = {
    "cat_a": {"content": "The owner's cat is called Murka and she likes fish"},
    "cat_b": {"content": "Owner's cat Murka likes fish a lot, she is called Murka"},
    "city_old": {
        "content": "The owner lives in Kazan, in a flat near the Kremlin",
        "kind": "fact",
        "created_at": OLD - 30 * DAY,
    },
    "city_new": {"content": "The owner lives in Moscow now, in a flat near the Kremlin"},
    "fill_1": {"content": "Likes green tea without sugar in the mornings"},
    "fill_2": {"content": "Works as a backend developer writing Go services"},
    "fill_3": {"content": "Plays chess online on weekends against strangers"},
    "fill_4": {"content": "Her brother Pavel is a surgeon in Novosibirsk", "private": True},
}


def load(
    mem: Memory, corpus: dict[str, dict[str, Any]] | None = None, default_at: float = OLD
) -> dict[str, int]:
    corpus = CORPUS if corpus is None else corpus
    items = []
    for spec in corpus.values():
        it = {"kind": "fact", "importance": 3, "created_at": default_at}
        it.update(spec)
        items.append(it)
    ids = mem.import_records(items)
    return dict(zip(corpus, ids, strict=True))
