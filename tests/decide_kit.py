"""The pieces of the tests of sleep's review="decide" (SPEC §7.3–7.4, issue 17 item 1:
"arithmetic proposes, the model decides"): a fake that answers each grammar-forced question by
rules about the quoted records and records every question (DecidingLLM), the corpus its nights
run on (a pair for each kind of question, a decoy, a run of events, faded trivia), a night on
it, and small record builders. Used by tests/test_sleep_decisions.py, test_sleep_supersede.py,
test_sleep_duplicates.py, test_sleep_forgetting.py and test_sleep_decisions_real.py."""

from __future__ import annotations

import re
from typing import Any

from core.privacy import OWNER_TRUSTED
from core.store.records import Kind
from tests.sleep_kit import ANCIENT, DAY, OLD, load, open_memory, sleeper

CORPUS: dict[str, dict[str, Any]] = {
    "cat_a": {
        "content": "The owner's cat is called Murka and she likes fish",
        "created_at": OLD - 90 * DAY,
    },
    "cat_b": {"content": "Owner's cat Murka likes fish a lot, she is called Murka"},
    "city_old": {
        "content": "The owner lives in Kazan, in a flat near the Kremlin",
        "created_at": OLD - 200 * DAY,
    },
    "city_new": {"content": "The owner lives in Moscow now, in a flat near the Kremlin"},
    "anna_sis": {
        "content": "Anna is the owner's sister and lives in Tver",
        "created_at": OLD - 30 * DAY,
    },
    "anna_mgr": {"content": "Anna is the owner's manager and lives in Tver"},
    "swim_1": {
        "content": "Swam at the Olymp pool on Sunday morning",
        "kind": "event",
        "importance": 2,
        "created_at": OLD - 14 * DAY,
    },
    "swim_2": {
        "content": "Sunday morning: swam at the Olymp pool again",
        "kind": "event",
        "importance": 2,
        "created_at": OLD - 7 * DAY,
    },
    "swim_3": {
        "content": "Swam at the Olymp pool, Sunday morning as usual",
        "kind": "event",
        "importance": 2,
    },
    "trivia_1": {
        "content": "Saw a yellow umbrella at the bus stop",
        "importance": 1,
        "created_at": ANCIENT,
    },
    "trivia_2": {
        "content": "Watched a documentary about volcanoes on a rainy evening",
        "importance": 2,
        "created_at": ANCIENT,
    },
    "filler": {"content": "Works as a backend developer writing Go services"},
}


class DecidingLLM:
    """Answers sleep's decisions by rules over the quoted texts; records every question."""

    name = "deciding-fake"
    context_size = 32_768

    def __init__(
        self,
        same=(),
        replaces=(),
        fact: str = "none",
        keep=(),
        merged=None,
        fail: str | None = None,
    ) -> None:
        self.same = {frozenset(p) for p in same}  # pairs of texts that are the same fact
        self.replaces = set(replaces)  # (old text, new text)
        self.fact = fact
        self.keep = set(keep)  # faded texts to keep
        self.merged = merged  # the merged text to write (None: the longest member)
        self.fail = fail  # a schema key whose question raises
        self.core: set[str] = set()  # texts to make (or keep) core
        self.questions: list[dict[str, Any]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def force_tool_call(self, messages, tool, timeout=None, cancel=None):
        from core.llm import ToolCall  # the calibrate phase still plans

        self.questions.append({"key": "plan", "user": messages[-1]["content"]})
        return ToolCall("sleep_finish", {"reasoning": "nothing", "ops": []})

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        user = messages[-1]["content"]
        key = next(iter(schema["properties"]))
        quoted = re.findall(r"«([^»]*)»", user)
        self.questions.append({"key": key, "user": user, "schema": schema, "quoted": quoted})
        if key == self.fail:
            raise RuntimeError("the model broke")
        if key == "same":
            return {
                "same": "same fact" if frozenset(quoted[:2]) in self.same else "different facts"
            }
        if key == "old":  # "given NEW, is OLD still true today?"
            return {
                "old": "no longer true" if tuple(quoted[-2:]) in self.replaces else "still true"
            }
        if key == "fact":
            return {"fact": self.fact}
        if key == "text":
            return {"text": self.merged or max(quoted[:-1], key=len)}
        if key == "fate":
            return {"fate": "keep" if quoted[0] in self.keep else "forget"}
        if key == "core":  # phase 5: promote (or keep in core) what self.core names
            yes, no = schema["properties"]["core"]["enum"]
            return {"core": yes if quoted[0] in self.core else no}
        if key == "importance":
            return {"importance": 3}
        raise AssertionError(f"unexpected question {key}")

    def asked(self, key: str) -> list[dict[str, Any]]:
        return [q for q in self.questions if q["key"] == key]


def text_of(key: str) -> str:
    return CORPUS[key]["content"]


def night(tmp_path, clock, llm, **config):
    mem = open_memory(tmp_path, clock)
    ids = load(mem, CORPUS)
    config.setdefault("review", "decide")
    s = sleeper(mem, llm, clock, **config)
    return mem, ids, s, s.run()


def live(mem) -> dict[int, Any]:
    return {r.id: r for r in mem.list(OWNER_TRUSTED, limit=1000)}


def _rec(
    rid: int,
    content: str,
    *,
    kind: Kind = Kind.FACT,
    importance: int = 3,
    recalls: int = 0,
    recalled_at: float = ANCIENT,
    pinned: bool = False,
):
    from core.store.records import Record

    return Record(
        id=rid,
        content=content,
        kind=kind,
        importance=importance,
        created_at=ANCIENT,
        updated_at=ANCIENT,
        private=False,
        pinned=pinned,
        scope="global",
        last_access_at=recalled_at if recalls else None,
        access_count=recalls,
        consolidated_at=None,
        source="test",
        source_turn=None,
    )


def use_like_memory(tmp_path, clock, name: str = "memory.db"):
    """A store whose (fake) vectors pass for USE vectors, so the supersession gate
    (core.sleep.gate) scores the night's supersessions."""
    from core.learned import USE_NAME
    from tests.fakes import HashEmbedder

    return open_memory(tmp_path, clock, embedder=HashEmbedder(name=USE_NAME), name=name)
