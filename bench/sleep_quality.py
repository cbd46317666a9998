"""How well a night of sleep consolidates a labelled corpus (SPEC §7).

    python -m bench.sleep_quality --data bench/data/sleep_corpus.json [--model NAME]
                                  [--embedder SPEC] [--nights 1] [--dry-run] [--threads N]

The corpus file::

    {"now": "2026-06-01T12:00:00Z",
     "memories": [{"key", "content", "kind", "importance", "created_at", "last_access_at",
                   "recalls", "private", "pinned"}, ...],
     "expect": {"duplicates": [[k, k]], "contradictions": [{"old": k, "new": k}],
                "event_runs": [[k, k, k]], "trivia": [k], "keep": [k], "current": [k],
                "decoys": [[k, k]]}}

A fresh store (temp file, :class:`ManualClock` at ``now``) gets the memories with their dates
and access histories (``recalls`` reinforcements spread before ``last_access_at``); then
``--nights`` nights run with the planner: ``--model NAME`` resolves a packaged model or a GGUF
path through ``models.llama`` (imported lazily); without it a no-op planner (every call answers
"no changes") gives the baseline of what the arithmetic alone does, and ``--model oracle``
plans exactly what ``expect`` says (the ceiling, through the same safeguards). Prints JSON:

* ``duplicates_merged`` — share of duplicate pairs now one live record (merged into the same
  survivor);
* ``contradictions_resolved`` — share of pairs whose old record is no longer live as it was
  (forgotten or rewritten, e.g. dated) while the new record is still live — or, when the two
  were merged, whose survivor carries what only the new record said;
* ``events_derived`` — share of event runs from which a fact was derived (a derive op naming at
  least two of the run's events);
* ``trivia_forgotten`` — share of trivia records forgotten (archived, not merged);
* ``wrongly_lost`` — count of ``keep`` records that are neither live nor merged into a live one;
* ``decoys_kept_apart`` (when the corpus labels ``decoys``) — share of look-alike pairs that are
  both true and still two live records;
* ``wrongly_outdated`` — count of records that must stay current (every ``keep`` record, every
  ``current`` record, and the new side of each contradiction — never an old side) that are no
  longer current: archived (``archived``; forgotten, or lost in a merge whose survivor is gone),
  dropped by a resolve (``superseded``), or whose live text — their own, or their merge
  survivor's — became dated history (``dated``: it now starts with the core's marker
  "(until YYYY-MM-DD) " / "(до YYYY-MM-DD) ", or, with ``--review plan``, a rewrite op gave it a
  history word it did not have: "until", "used to", "до", "раньше", …). ``outdated_keys`` lists
  them, ``outdated_how`` says which of the three;
* ``supersede_precision`` — of the night's "yes, OLD is no longer true" decisions on two corpus
  records, the share whose (old, new) is a labelled contradiction in that order: a yes on any
  other pair (a decoy, a duplicate, a pair the corpus does not label, a contradiction read
  backwards) is a false yes; ``duplicate_precision`` — of the "same fact" decisions, the share
  whose two records are labelled duplicates (of one group, the labelled pairs joined
  transitively). Both come from the journaled decisions (with ``--review plan``, from the
  planner's proposed resolve and merge ops: each (dropped, kept) pair, each pair of a merge),
  answered whatever the safeguards then did; None when no such decision was made.
  ``false_yes`` lists the pairs counted against them;
* ``model_calls``, ``seconds`` (wall clock of the nights), and the night's summary and refusals.

``expect`` may also hold ``"current": [k]``: records that must stay current (not dated, archived
or superseded) though ``keep`` does not list them; the new side of each contradiction is current
by default, and so is every ``keep`` record.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import NoopPlanner as BaseNoopPlanner
from bench.common import environment, keep_calibration, rounded
from core import text
from core.clock import ManualClock
from core.config import MemoryConfig, SleepConfig
from core.llm import ToolCall
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.sleep import Sleeper

DAY = 86_400.0
# dated history as the core writes it (core.sleep.decisions.dated): "(until 2026-03-02) …" /
# "(до 2026-03-02) …"
DATED = re.compile(r"^\s*\((?:until|до)\s+\d{4}-\d{2}-\d{2}\)", re.IGNORECASE)
# what an open-ended planner's rewrite ("Lived in Kazan until 2024") may date a record with
HISTORY = re.compile(
    r"(?<!\w)(until|till|used to|formerly|previously|no longer|до|раньше|"
    r"прежде|бывш\w*|больше не)(?!\w)",
    re.IGNORECASE,
)


def parse_time(value: str | float | int | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class NoopPlanner(BaseNoopPlanner):
    """The baseline: every planning call answers "no changes" (every decision: "no", no
    fact, keep every faded record)."""

    reasoning = "baseline: no changes"


class CountingPlanner:
    """Counts the calls of a real model (sleep makes them through force_tool_call)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "model")
        self.context_size = getattr(inner, "context_size", 0)
        self.calls = 0
        if callable(getattr(inner, "choice_probabilities", None)):
            self.choice_probabilities = self._choice  # only when the model can say it

    def _choice(self, messages, key, options, timeout=None, cancel=None) -> dict[str, float]:
        self.calls += 1
        return self.inner.choice_probabilities(
            messages, key, options, timeout=timeout, cancel=cancel
        )

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def stream_chat(self, *a: Any, **k: Any):
        return self.inner.stream_chat(*a, **k)

    def force_tool_call(self, messages, tool, timeout=None, cancel=None) -> ToolCall:
        self.calls += 1
        return self.inner.force_tool_call(messages, tool, timeout=timeout, cancel=cancel)

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None) -> dict:
        self.calls += 1
        return self.inner.generate_json(
            messages, schema, timeout=timeout, max_tokens=max_tokens, cancel=cancel
        )


class OraclePlanner(NoopPlanner):
    """Plans exactly what the corpus's ``expect`` says (merge the duplicates, resolve each
    contradiction for the new record, derive a fact from each event run, forget the trivia):
    the ceiling of the scores, and a check that the bench scores what it claims."""

    name = "oracle"

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__()
        self.data = data
        self.keys: dict[str, int] = {}
        self.contents: dict[str, str] = {m["key"]: m["content"] for m in data["memories"]}

    def force_tool_call(self, messages, tool, timeout=None, cancel=None) -> ToolCall:
        self.calls += 1
        by_id = {v: k for k, v in self.keys.items()}
        ops_schema = tool["parameters"]["properties"]["ops"]["items"]["anyOf"]
        shown: set[int] = set()
        for op in ops_schema:
            for key in ("ids", "id"):
                prop = op["properties"].get(key)
                if prop is not None:
                    shown.update(
                        prop["items"]["enum"] if prop.get("type") == "array" else prop["enum"]
                    )
        names = {by_id[i] for i in shown if i in by_id}
        exp, ops = self.data.get("expect", {}), []
        d = tool["description"]
        if "forgetting" in d:
            ops = [
                {"op": "forget", "id": self.keys[k], "why": "trivia"}
                for k in exp.get("trivia", [])
                if k in names
            ]
        elif "review" in d:
            for a, b in exp.get("duplicates", []):
                if {a, b} <= names:
                    ops.append(
                        {
                            "op": "merge",
                            "ids": [self.keys[a], self.keys[b]],
                            "content": max(self.contents[a], self.contents[b], key=len),
                            "why": "duplicates",
                        }
                    )
            for c in exp.get("contradictions", []):
                if {c["old"], c["new"]} <= names:
                    ops.append(
                        {
                            "op": "resolve",
                            "keep": self.keys[c["new"]],
                            "drop": [self.keys[c["old"]]],
                            "why": "the newer is true",
                        }
                    )
            for run in exp.get("event_runs", []):
                if set(run) <= names:
                    ops.append(
                        {
                            "op": "derive",
                            "from": [self.keys[k] for k in run],
                            "content": "Habit: " + self.contents[run[0]],
                            "kind": "fact",
                            "importance": 3,
                            "why": "a repeated event",
                        }
                    )
        return ToolCall("sleep_finish", {"reasoning": "oracle", "ops": ops})

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None) -> dict:
        """The decisions (issue 17) the labels imply; records are recognised by their quoted
        text."""
        self.calls += 1
        user = messages[-1]["content"]
        by_text = {
            " ".join(c.split()).replace("«", '"').replace("»", '"'): k
            for k, c in self.contents.items()
        }
        quoted = [by_text.get(q) for q in re.findall(r"«([^»]*)»", user)]
        exp = self.data.get("expect", {})
        props = schema.get("properties", {})
        if "fate" in props:
            return {"fate": "forget" if quoted[0] in set(exp.get("trivia", [])) else "keep"}
        if "same" in props:
            pairs = {frozenset(p) for p in exp.get("duplicates", [])}
            return {"same": "same fact" if frozenset(quoted[:2]) in pairs else "different facts"}
        if "core" in props or "importance" in props:  # the corpus labels no calibration
            return keep_calibration(props)
        if "old" in props:  # "given NEW, is OLD still true today?"
            changed = {(c["old"], c["new"]) for c in exp.get("contradictions", [])}
            return {"old": "no longer true" if tuple(quoted[-2:]) in changed else "still true"}
        if "fact" in props:
            for run in exp.get("event_runs", []):
                if len(set(quoted) & set(run)) >= 2:
                    return {"fact": "Habit: " + self.contents[run[0]]}
            return {"fact": "none"}
        if "text" in props:
            members = [k for k in quoted[:-1] if k]
            return {"text": max((self.contents[k] for k in members), key=len)}
        return {}


def load_planner(
    spec: str | None, data: dict[str, Any] | None = None, threads: int | None = None
) -> Any:
    if not spec or spec == "none":
        return NoopPlanner()
    if spec == "oracle":
        return OraclePlanner(data or {"memories": []})
    from models.llama import load_chat_model  # lazy: the bench runs without models/

    extra = {"n_threads": threads} if threads else {}
    return CountingPlanner(load_chat_model(spec, seed=0, n_ctx=8192, **extra))


def load_embedder(spec: str | None, threads: int | None = None) -> Any:
    if not spec:
        return None
    from models.embedders import load_embedder as load  # lazy

    return load(spec, threads=threads)


def build_store(
    path: Path, data: dict[str, Any], embedder: Any
) -> tuple[Memory, ManualClock, dict[str, int]]:
    """The corpus in a fresh store, with dates and access histories as given."""
    now = parse_time(data["now"])
    if now is None:
        raise ValueError('the corpus says when it is read ("now"), as a time')
    clock = ManualClock(now)
    mem = Memory.open(path, MemoryConfig(), clock, embedder=None)
    items = []
    for m in data["memories"]:
        items.append(
            {
                "content": m["content"],
                "kind": m.get("kind", "fact"),
                "importance": m.get("importance", 3),
                "private": m.get("private", False),
                "pinned": m.get("pinned", False),
                "created_at": parse_time(m.get("created_at")) or now,
            }
        )
    ids = mem.import_records(items)
    keys: dict[str, int] = {m["key"]: rid for m, rid in zip(data["memories"], ids, strict=True)}
    with mem.transaction() as w:  # the bench sets histories the way time would have
        conn = w.conn
        for m in data["memories"]:
            n = int(m.get("recalls", 0) or 0)
            last = parse_time(m.get("last_access_at"))
            if n <= 0 or last is None:
                continue
            created = parse_time(m.get("created_at")) or now
            step = (last - created) / n
            times = [last - step * k for k in range(n)][::-1]
            rid = keys[m["key"]]
            conn.executemany(
                "INSERT INTO accesses (memory_id, at) VALUES (?, ?)", [(rid, t) for t in times]
            )
            conn.execute(
                "UPDATE memories SET access_count = ?, last_access_at = ? WHERE id = ?",
                (n, last, rid),
            )
    mem.close()
    return Memory.open(path, MemoryConfig(), clock, embedder=embedder), clock, keys


def current_keys(exp: dict[str, Any]) -> list[str]:
    """The records that must stay current: ``keep``, ``current`` and the new side of each
    contradiction — never an old side (dating that one is the point)."""
    contra = exp.get("contradictions", [])
    olds = {c["old"] for c in contra}
    keys = [*exp.get("keep", []), *exp.get("current", []), *(c["new"] for c in contra)]
    return [k for k in dict.fromkeys(keys) if k not in olds]


def is_dated(content: str, original: str, rewritten: bool = False) -> bool:
    """A live text that became dated history: it starts with the core's marker now and did not
    before, or (an open-ended planner's rewrite) it gained a history word."""
    if DATED.match(content) and not DATED.match(original):
        return True
    return rewritten and bool(HISTORY.search(content)) and not HISTORY.search(original)


def duplicate_groups(exp: dict[str, Any]) -> Callable[[str], str]:
    """The representative of a key's duplicate group (the labelled pairs of ``expect``
    joined transitively): two keys are labelled the same fact when their representatives are
    equal."""
    group: dict[str, str] = {}

    def find(k: str) -> str:
        while group.get(k, k) != k:
            k = group[k]
        return k

    for a, b in exp.get("duplicates", []):
        group[find(a)] = find(b)
    return find


def judged(
    runs: list[Any], data: dict[str, Any], keys: dict[str, int], part: str | None = None
) -> dict[str, Any]:
    """``supersede_precision`` and ``duplicate_precision``: the night's yes decisions on two
    corpus records against the labels (a yes on a pair not labelled so is a false yes), with
    the false ones by key. Decided pairs come from the journaled decisions (a pair's last
    answer: a doubtful yes confirmed or not by its question in the other order); a review phase
    that journaled none (``--review plan``) is read from its planner's proposed ops. With
    ``part``, only decisions whose first record is in that part count (as labels do)."""
    name = {v: k for k, v in keys.items()}
    where = {m["key"]: m.get("part", "dev") for m in data["memories"]}
    exp = data.get("expect", {})
    contra = {(c["old"], c["new"]) for c in exp.get("contradictions", [])}
    find = duplicate_groups(exp)
    said: dict[str, list[tuple[str, str]]] = {"supersede": [], "duplicate": []}

    def add(kind: str, a: Any, b: Any) -> None:
        ka, kb = name.get(a), name.get(b)
        if ka is None or kb is None or ka == kb:
            return  # a record the corpus does not hold (e.g. derived): nothing to judge by
        if part is None or where.get(ka) == part:
            said[kind].append((ka, kb))

    for run in runs:
        for ph in run.phases:
            for plan in ph.plans:
                if "decisions" in plan:
                    # a pair's decision is its last answer: a doubtful yes asked again in the
                    # other order ("confirm") stands or falls by that second answer
                    last: dict[tuple[str, tuple[int, ...]], Any] = {}
                    for d in plan["decisions"] or []:
                        ids = d.get("ids") or []
                        if d.get("kind") in said and len(ids) == 2:
                            last[(d["kind"], tuple(ids))] = d.get("answer")
                    for (kind, ids), answer in last.items():
                        if answer == "yes":
                            add(kind, *ids)
                elif ph.name == "review":
                    for op in plan.get("ops") or []:
                        if not isinstance(op, dict):
                            continue
                        if op.get("op") == "resolve":
                            for old in op.get("drop") or []:
                                add("supersede", old, op.get("keep"))
                        elif op.get("op") == "merge":
                            ids = list(op.get("ids") or [])
                            for i, a in enumerate(ids):
                                for b in ids[i + 1 :]:
                                    add("duplicate", a, b)
    false = {
        "supersede": [[a, b] for a, b in said["supersede"] if (a, b) not in contra],
        "duplicate": [[a, b] for a, b in said["duplicate"] if find(a) != find(b)],
    }

    def precision(kind: str) -> float | None:
        n = len(said[kind])
        return (n - len(false[kind])) / n if n else None

    return {
        "supersede_precision": precision("supersede"),
        "duplicate_precision": precision("duplicate"),
        "false_yes": false,
    }


def score(
    mem: Memory,
    sleeper: Sleeper,
    data: dict[str, Any],
    keys: dict[str, int],
    originals: dict[int, str],
    part: str | None = None,
) -> dict[str, Any]:
    live = {r.id: r for r in mem.list(OWNER_TRUSTED, limit=10_000)}
    merged_into: dict[int, int] = {}
    derived: list[set[int]] = []
    forgotten: set[int] = set()
    superseded: set[int] = set()
    rewritten: set[int] = set()
    runs_done = sleeper.runs(limit=1000)
    for run in runs_done:
        for op in run.ops:
            if not op.applied:
                continue
            if op.op == "merge":
                for rid in op.ids:
                    if rid != op.detail.get("survivor"):
                        merged_into[rid] = op.detail["survivor"]
            elif op.op == "derive":
                derived.append(set(op.ids))
            elif op.op == "forget":
                forgotten.update(op.ids)
            elif op.op == "resolve":
                forgotten.update(op.detail.get("dropped", []))
                superseded.update(op.detail.get("dropped", []))
            elif op.op == "rewrite":
                rewritten.update(op.ids)

    def home(rid: int) -> int | None:
        seen = set()
        while rid not in live and rid in merged_into and rid not in seen:
            seen.add(rid)
            rid = merged_into[rid]
        return rid if rid in live else None

    exp = data.get("expect", {})
    dups = exp.get("duplicates", [])
    dup_ok = sum(1 for a, b in dups if home(keys[a]) is not None and home(keys[a]) == home(keys[b]))
    contra = exp.get("contradictions", [])
    con_ok = 0
    for c in contra:
        old, new = keys[c["old"]], keys[c["new"]]
        where = home(new)
        if where is None:
            continue  # the new information was lost
        if home(old) == where:
            # merged together: the survivor must carry what only the new record said
            fresh = text.stem_set(originals[new]) - text.stem_set(originals[old])
            if fresh & text.stem_set(live[where].content):
                con_ok += 1
        elif old not in live or live[old].content != originals[old]:
            con_ok += 1  # forgotten, or rewritten (e.g. dated) beside the new record
    runs = exp.get("event_runs", [])
    runs_ok = sum(1 for r in runs if any(len(d & {keys[k] for k in r}) >= 2 for d in derived))
    trivia = exp.get("trivia", [])
    triv_ok = sum(1 for k in trivia if keys[k] in forgotten and keys[k] not in live)
    lost = [k for k in exp.get("keep", []) if home(keys[k]) is None]
    outdated: dict[str, str] = {}
    for k in current_keys(exp):
        rid = keys[k]
        now_in = home(rid)  # itself, or the survivor it was merged into
        if now_in is None:
            outdated[k] = "superseded" if rid in superseded else "archived"
        elif is_dated(live[now_in].content, originals.get(now_in, ""), now_in in rewritten):
            outdated[k] = "dated"
    decoys = exp.get("decoys", [])
    apart = sum(
        1
        for a, b in decoys
        if home(keys[a]) is not None
        and home(keys[b]) is not None
        and home(keys[a]) != home(keys[b])
    )

    def share(n: int, total: int) -> float | None:
        return n / total if total else None

    return {
        "duplicates_merged": share(dup_ok, len(dups)),
        "contradictions_resolved": share(con_ok, len(contra)),
        "events_derived": share(runs_ok, len(runs)),
        "trivia_forgotten": share(triv_ok, len(trivia)),
        "wrongly_lost": len(lost),
        "lost_keys": lost,
        "wrongly_outdated": len(outdated),
        "outdated_keys": list(outdated),
        "outdated_how": outdated,
        **judged(runs_done, data, keys, part),
        **(
            {
                "decoys_kept_apart": share(apart, len(decoys)),
                "decoys_joined": [
                    [a, b]
                    for a, b in decoys
                    if not (
                        home(keys[a]) is not None
                        and home(keys[b]) is not None
                        and home(keys[a]) != home(keys[b])
                    )
                ],
            }
            if decoys
            else {}
        ),
        "missed": {
            "duplicates": [
                [a, b]
                for a, b in dups
                if not (home(keys[a]) is not None and home(keys[a]) == home(keys[b]))
            ],
            "trivia": [k for k in trivia if not (keys[k] in forgotten and keys[k] not in live)],
            "event_runs": [
                r[0] for r in runs if not any(len(d & {keys[k] for k in r}) >= 2 for d in derived)
            ],
        },
    }


def part_of(data: dict[str, Any], part: str) -> dict[str, Any]:
    """The corpus's labels restricted to one part (memories marked ``"part": part``; a label
    belongs to the part of its first key)."""
    inside = {m["key"] for m in data["memories"] if m.get("part", "dev") == part}
    exp = data.get("expect", {})

    def first(item: Any) -> str:
        if isinstance(item, dict):
            return item["old"]
        return item[0] if isinstance(item, list) else item

    return {**data, "expect": {k: [x for x in v if first(x) in inside] for k, v in exp.items()}}


def decisions_of(runs: list[Any]) -> dict[str, Any]:
    """Per candidate kind: questions asked, answers counted, failed calls, seconds per
    decision (issue 17), from the nights' journaled plans."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        for ph in run.phases:
            for plan in ph.plans:
                entries = (
                    plan.get("decisions")
                    if "decisions" in plan
                    else ([plan] if plan.get("kind") == "trivia" else [])
                )
                for d in entries:
                    k = out.setdefault(
                        d["kind"], {"asked": 0, "answers": {}, "failed": 0, "seconds": 0.0}
                    )
                    if d.get("asked") is False:  # settled by arithmetic, no model call
                        k["without_call"] = k.get("without_call", 0) + 1
                        continue
                    k["asked"] += 1
                    k["seconds"] += d.get("seconds", 0.0)
                    if "error" in d:
                        k["failed"] += 1
                        continue
                    a = d.get("answer")
                    if d["kind"] == "events":
                        a = "none" if str(a).strip().lower() in ("none", "нет", "") else "fact"
                    elif d["kind"] == "merge":
                        a = "refused" if d.get("refused") else "text"
                    k["answers"][str(a)] = k["answers"].get(str(a), 0) + 1
    for k in out.values():
        k["seconds_per_decision"] = k["seconds"] / k["asked"] if k["asked"] else None
    return out


def show(p: Any) -> None:
    print(
        f"{time.strftime('%H:%M:%S')} {p.phase} {p.done}/{p.total} {p.message}",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.sleep_quality", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--data", required=True, help="the labelled corpus (JSON)")
    ap.add_argument(
        "--model",
        default=None,
        help="packaged model name or GGUF path; 'oracle' plans what the corpus "
        "expects (default: a no-op planner)",
    )
    ap.add_argument("--embedder", default=None, help="embedder spec for models.embedders")
    ap.add_argument("--nights", type=int, default=1)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--call-timeout", type=float, default=600.0)
    ap.add_argument(
        "--review",
        choices=("decide", "plan"),
        default="decide",
        help="decide: candidates + small decisions (issue 17); plan: the old "
        "open-ended planner per cluster",
    )
    ap.add_argument("--max-ops", type=int, default=None, help="night cap (default: config)")
    ap.add_argument("--max-forget", type=int, default=None, help="night cap (default: config)")
    ap.add_argument("--max-calls", type=int, default=None, help="night cap (default: config)")
    ap.add_argument("--progress", action="store_true", help="print the night's progress to stderr")
    ap.add_argument(
        "--decisions-log",
        default=None,
        help="write every decision (kind, the records' keys, answer, seconds) to this JSON file",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads of the model and the embedder (default: the models' own "
        "choice, $EVA_LLM_THREADS or every core of an idle machine)",
    )
    ap.add_argument(
        "--part",
        default=None,
        help="run on one part of the corpus only (its memories and labels), e.g. "
        "dev while developing, so the held-out part stays unseen",
    )
    args = ap.parse_args(argv)
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    if args.part:
        data = {
            **part_of(data, args.part),
            "memories": [m for m in data["memories"] if m.get("part", "dev") == args.part],
        }
        if not data["memories"]:
            ap.error(f"no memory of the corpus is in part {args.part!r}")
    planner = load_planner(args.model, data, args.threads)
    embedder = load_embedder(args.embedder, args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        mem, clock, keys = build_store(Path(tmp) / "memory.db", data, embedder)
        if isinstance(planner, OraclePlanner):
            planner.keys = keys
        originals = {r.id: r.content for r in mem.list(OWNER_TRUSTED, limit=10_000)}
        caps = {
            k: v
            for k, v in (
                ("max_ops", args.max_ops),
                ("max_forget", args.max_forget),
                ("max_calls", args.max_calls),
            )
            if v is not None
        }
        cfg = SleepConfig(
            min_memories=0,
            dry_run=args.dry_run,
            call_timeout=args.call_timeout,
            review=args.review,
            **caps,
        )
        sleeper = Sleeper(mem, planner, cfg, clock)
        t0 = time.perf_counter()
        nights = []
        night_runs = []
        for n in range(max(1, args.nights)):
            if n:
                clock.advance(DAY)
            t1 = time.perf_counter()
            run = sleeper.run(reason="bench", progress=show if args.progress else None)
            night_runs.append(run)
            nights.append(
                {
                    "status": run.status,
                    "summary": run.summary,
                    "calls": run.calls,
                    "phase_calls": {ph.name: ph.calls for ph in run.phases if ph.calls},
                    "phase_seconds": {ph.name: round(ph.seconds, 1) for ph in run.phases},
                    "refused": [
                        {"op": o.op, "ids": o.ids, "reason": o.refused_reason}
                        for o in run.ops
                        if o.refused_reason
                    ],
                    "failed_calls": [
                        p.get("error") for ph in run.phases for p in ph.plans if p.get("error")
                    ],
                    "seconds": round(time.perf_counter() - t1, 1),
                }
            )
        seconds = time.perf_counter() - t0
        out = score(mem, sleeper, data, keys, originals)
        parts = sorted({m.get("part", "dev") for m in data["memories"]})
        if len(parts) > 1:
            out["parts"] = {
                p: score(mem, sleeper, part_of(data, p), keys, originals, p) for p in parts
            }
        out["decisions"] = decisions_of(night_runs)
        if args.decisions_log:
            name = {v: k for k, v in keys.items()}
            log = [
                {**d, "keys": [name.get(i, i) for i in d.get("ids", [])]}
                for run in night_runs
                for ph in run.phases
                for p in ph.plans
                for d in (p.get("decisions") or ([p] if p.get("kind") == "trivia" else []))
            ]
            Path(args.decisions_log).write_text(
                json.dumps(log, ensure_ascii=False, indent=1), encoding="utf-8"
            )
        mem.close()
    out.update(
        {
            "model": getattr(planner, "name", None),
            "model_calls": planner.calls,
            "seconds": seconds,
            "memories": len(data["memories"]),
            "nights": nights,
            "embedder": args.embedder,
            "review": args.review,
            "part": args.part,
            "config": {
                "max_ops": cfg.max_ops,
                "max_forget": cfg.max_forget,
                "max_calls": cfg.max_calls,
            },
            "environment": environment(),
        }
    )
    print(json.dumps(rounded(out, 3), ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
