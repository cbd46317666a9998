"""Applying a sleep plan with safeguards (SPEC §7, §11).

Whatever the model planned — well-meant, confused, or steered by a prompt injected into a
memory's text — the core applies it op by op and refuses, one by one and with the reason
journaled, every op that:

* is malformed, or is not an op of this phase (a forgetting step cannot merge);
* names an id that does not exist, or one outside the records under review (the cluster, the
  forgetting candidates — the model may only shorten that list —, the compact corpus shown);
* touches a pinned record (the owner's lock);
* forgets or drops a core record (core is never deleted, only demoted);
* forgets, drops, rewrites, merges or splits a record younger than ``keep_recent``;
* resolves a contradiction against the fresher record, or drops an event as replaced, or
  rewrites an event as dated history ("(until 2026-05-20) …"): an event happened, no newer
  record makes it untrue (issue 27: a night dated an event of a run);
* replaces a record with text sharing nothing with it (a merge, rewrite or split part that
  "drops everything" of a record: e.g. an injected "forgotten"), or merges records while
  losing a number one of them holds ("3 pm" and "5 pm" are different memories);
* derives a fact from anything but a run of events (at least two event records);
* promotes to core past core's share of the prompt budget;
* would exceed ``max_ops`` (ops per night) or ``max_forget`` (records forgotten per night);
* targets a record that changed after the plan was made (checked inside the transaction by
  :mod:`core.sleep.ops`, so a write made during sleep is never lost).

The private flag is never removed: no op can clear it, and a merge (or a record derived from
sources) with any private member is private. Merges keep the most reinforced member's id and
sum the access histories (:func:`core.sleep.ops.merge`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core import text
from core.config import SleepConfig
from core.errors import MemoryOpError
from core.memory.facade import Memory
from core.memory.prompt_section import line as prompt_line
from core.sleep import candidates, ops
from core.sleep.decisions import DATED
from core.sleep.journal import OpLog
from core.sleep.ops import SleepTxn
from core.sleep.plan import check_op
from core.store import records
from core.store.records import Kind, Record

PHASE_OPS: dict[str, tuple[str, ...]] = {
    "review": ("merge", "resolve", "rewrite", "split", "derive"),
    "forgetting": ("forget",),
    "calibrate": ("set_kind", "set_importance"),
}

# refusals that may not hold tomorrow: the unit they belong to is not marked as reviewed
TRANSIENT = (
    "max_ops",
    "max_forget",
    "younger than keep_recent",
    "changed after the plan",
    "no longer exists",
)


def is_young(r: Record, now: float, keep_recent: float) -> bool:
    """Younger than ``keep_recent`` seconds: the safeguards neither merge, replace, rewrite nor
    forget it yet (and the review does not ask what it could not apply)."""
    return now - r.created_at < keep_recent


@dataclass
class NightBudget:
    """What one night may still do (``max_ops`` ops, ``max_forget`` records forgotten)."""

    max_ops: int
    max_forget: int
    ops: int = 0
    forgotten: int = 0


@dataclass(frozen=True)
class Proposal:
    raw: Any  # the op as the model wrote it
    allowed: frozenset[int]  # the ids under review in the call that proposed it
    versions: dict[int, tuple]  # the records as they were when the plan was made (shared by
    # the ops of one call)
    unit: int = 0  # the call (cluster) it came from


@dataclass(frozen=True)
class Screened:
    proposal: Proposal
    op: dict[str, Any] | None
    refused: str | None
    ids: list[int]
    forgets: int  # records this op would forget (counted against max_forget)
    texts: list[str]  # new texts to embed before applying

    @property
    def well_formed(self) -> dict[str, Any]:
        """The op as checked, for one screening did not refuse as malformed (only those are
        judged further, counted and applied)."""
        if self.op is None:
            raise ValueError(f"a malformed op is neither judged nor applied: {self.refused}")
        return self.op


@dataclass
class Applied:
    ops: list[OpLog] = field(default_factory=list)
    blocked_units: set[int] = field(default_factory=set)  # a transient refusal happened there
    forgotten: set[int] = field(default_factory=set)

    @property
    def applied(self) -> int:
        return sum(o.applied for o in self.ops)


def op_ids(op: Mapping[str, Any]) -> list[int]:
    name = op.get("op")
    if name == "merge":
        return list(op.get("ids", []))
    if name == "resolve":
        return [op["keep"], *op.get("drop", [])]
    if name == "derive":
        return list(op.get("from", []))
    return [op["id"]] if "id" in op else []


def _raw_ids(raw: Any) -> list[int]:
    if not isinstance(raw, dict):
        return []
    out = []
    for key in ("ids", "from", "drop", "id", "keep"):
        v = raw.get(key)
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, int) and not isinstance(x, bool):
                out.append(x)
    return out


class Safeguards:
    """The night's rules for one phase. ``records`` is the corpus as planned on (live records
    by id); ``core_chars``/``core_budget`` track core's share of the prompt budget."""

    def __init__(
        self,
        memory: Memory,
        config: SleepConfig,
        budget: NightBudget,
        phase: str,
        records: Mapping[int, Record],
        now: float,
        *,
        core_chars: int = 0,
        core_budget: int | None = None,
        similar: Callable[[str, Record], bool] | None = None,
    ) -> None:
        self.memory = memory
        self.config = config
        self.budget = budget
        self.phase = phase
        self.allowed_ops = PHASE_OPS[phase]
        self.records = dict(records)
        self._changed: set[int] = set()
        self.now = now
        self.core_chars = core_chars
        self.core_budget = core_budget
        # a merged text in another language shares no words with a member: it keeps what the
        # member says when their vectors agree (calibrated cosine, see review_phase.similar_fn)
        self.similar = similar

    # ------------------------------------------------------------------ policy
    def _young(self, r: Record) -> bool:
        return is_young(r, self.now, self.config.keep_recent_seconds)

    def _policy(self, op: dict[str, Any], allowed: frozenset[int]) -> str | None:
        name = op["op"]
        ids = op_ids(op)
        for rid in ids:
            if rid not in self.records:
                return f"unknown id #{rid}"
            if rid not in allowed:
                what = (
                    "not a forgetting candidate: the model may only shorten that list"
                    if name == "forget"
                    else "not among the records under review"
                )
                return f"#{rid} is {what}"
        max_chars = self.memory.config.max_chars
        for key in ("content",):
            if key in op and len(op[key]) > max_chars:
                return f"{key} is {len(op[key])} characters; the limit is {max_chars}"
        recs = [self.records[i] for i in ids]
        keep_days = f"{self.config.keep_recent:g}"
        if name == "merge":
            if len(ids) < 2:
                return "a merge needs at least two records"
            for r in recs:
                if r.pinned:
                    return f"#{r.id} is pinned by the owner; sleep never touches it"
                if self._young(r):
                    return (
                        f"#{r.id} is younger than keep_recent ({keep_days} d): not merged "
                        "or rewritten yet"
                    )
            merged = text.stem_set(op["content"])
            numbers = candidates.numbers(op["content"])
            for r in recs:
                if (
                    not (merged & text.stem_set(r.content))
                    and not (candidates.shares_name(op["content"], r.content))
                    and not (self.similar is not None and self.similar(op["content"], r))
                ):
                    return f"the merged text drops everything of #{r.id}"
                lost = sorted(candidates.numbers(r.content) - numbers)
                if lost:
                    return (
                        f"the merged text loses the numbers {', '.join(lost)} of #{r.id} "
                        "(different numbers are different memories: 3 pm is not 5 pm)"
                    )
        elif name == "resolve":
            keep = self.records[op["keep"]]
            if op["keep"] in op["drop"]:
                return "a record cannot both stay and be dropped"
            for rid in op["drop"]:
                r = self.records[rid]
                if r.pinned:
                    return f"#{rid} is pinned by the owner; sleep never touches it"
                if r.kind is Kind.CORE:
                    return (
                        f"#{rid} is core: core is never deleted, only demoted (rewrite it "
                        "with a date or demote it)"
                    )
                if self._young(r):
                    return f"#{rid} is younger than keep_recent ({keep_days} d): not forgotten yet"
                if r.kind is Kind.EVENT:
                    return f"#{rid} is an event: it happened, and no newer record makes it untrue"
                if max(keep.created_at, keep.updated_at) < max(r.created_at, r.updated_at):
                    return (
                        f"#{keep.id} is older than #{rid}: a contradiction is resolved in "
                        "favour of the fresher record"
                    )
        elif name in ("rewrite", "split"):
            r = recs[0]
            if r.pinned:
                return f"#{r.id} is pinned by the owner; sleep never touches it"
            if self._young(r):
                return f"#{r.id} is younger than keep_recent ({keep_days} d): not rewritten yet"
            old = text.stem_set(r.content)
            for new in op["parts"] if name == "split" else [op["content"]]:
                if not (text.stem_set(new) & old):
                    return f"the new text drops everything of #{r.id}"
            if (
                name == "rewrite"
                and r.kind is Kind.EVENT
                and DATED.match(op["content"])
                and not DATED.match(r.content)
            ):
                return f"#{r.id} is an event: it happened, it is never dated as history"
            if name == "split":
                if not 2 <= len(op["parts"]) <= 4:
                    return "a split makes 2 to 4 parts"
                for p in op["parts"]:
                    if len(p) > max_chars:
                        return f"a part is {len(p)} characters; the limit is {max_chars}"
        elif name == "derive":
            if sum(r.kind is Kind.EVENT for r in recs) < 2:
                return "a fact is derived from a run of events (at least two event records)"
            if op.get("kind", "fact") != "fact":
                return "sleep derives facts only"
            imp = op.get("importance")
            if imp is not None and not 1 <= imp <= 5:
                return "importance must be 1..5"
        elif name == "forget":
            r = recs[0]
            if r.pinned:
                return f"#{r.id} is pinned by the owner; sleep never touches it"
            if r.kind is Kind.CORE:
                return f"#{r.id} is core: core is never deleted, only demoted"
            if self._young(r):
                return f"#{r.id} is younger than keep_recent ({keep_days} d): not forgotten yet"
        elif name in ("set_kind", "set_importance"):
            r = recs[0]
            if r.pinned:
                return f"#{r.id} is pinned by the owner; sleep never touches it"
            if name == "set_kind" and op["kind"] not in ("core", "fact", "event"):
                return f"kind must be core, fact or event (got {op['kind']!r})"
            if name == "set_importance" and not 1 <= op["importance"] <= 5:
                return "importance must be 1..5"
        return None

    def screen(self, proposals: Sequence[Proposal]) -> list[Screened]:
        """Check the form and the rules of each op (budgets are counted when applying)."""
        out = []
        for p in proposals:
            op, err = check_op(p.raw, self.allowed_ops)
            if op is None:
                out.append(Screened(p, None, f"malformed op: {err}", _raw_ids(p.raw), 0, []))
                continue
            ids = op_ids(op)
            reason = self._policy(op, p.allowed)
            forgets = {"forget": 1, "resolve": len(op.get("drop", []))}.get(op["op"], 0)
            texts = [op["content"]] if "content" in op else list(op.get("parts", []))
            if op["op"] == "resolve" and reason is None:
                texts += [r.sentence() for _, r in self._kept_relations(op)]
            out.append(Screened(p, op, reason, ids, forgets, texts))
        return out

    # ------------------------------------------------------------------ applying
    def _budget(self, s: Screened) -> str | None:
        if self.budget.ops >= self.budget.max_ops:
            return f"max_ops ({self.budget.max_ops}) reached for this night"
        if s.forgets and self.budget.forgotten + s.forgets > self.budget.max_forget:
            return f"max_forget ({self.budget.max_forget}) would be exceeded this night"
        op = s.well_formed
        if op["op"] == "set_kind" and self.core_budget is not None:
            r = self.records[op["id"]]
            if op["kind"] == "core" and r.kind is not Kind.CORE:
                grow = len(prompt_line(r, self.now)) + 1
                if self.core_chars + grow > self.core_budget:
                    return (
                        f"core would outgrow its share of the prompt budget "
                        f"({self.core_chars + grow} > {self.core_budget} characters)"
                    )
        return None

    def _core_delta(self, op: dict[str, Any] | None) -> int:
        """How many characters of core's share this op would take (+) or free (−)."""
        if op is None or op["op"] != "set_kind" or op["id"] not in self.records:
            return 0
        r = self.records[op["id"]]
        size = len(prompt_line(r, self.now)) + 1
        if op["kind"] == "core" and r.kind is not Kind.CORE and not r.pinned:
            return size
        if op["kind"] != "core" and r.kind is Kind.CORE and not r.pinned:
            return -size
        return 0

    def _do(
        self, tx: SleepTxn, s: Screened, vectors: Mapping[str, np.ndarray | None]
    ) -> dict[str, Any]:
        op, v = s.well_formed, s.proposal.versions
        name, why = op["op"], op["why"]
        vec = vectors.get(op.get("content", ""))
        if name == "merge":
            r = ops.merge(tx, op["ids"], op["content"], why, dict(v), vec)
            return {"survivor": r.id, "content": r.content, "private": r.private}
        if name == "resolve":
            ops.check(tx, [op["keep"]], dict(v), touch=False)
            kept = []
            for rid, rel in self._kept_relations(op):
                if self._says_relation(tx, rel, set(op["drop"]), self.records[rid]):
                    continue
                sentence = rel.sentence()
                r = ops.derive(
                    tx,
                    [rid],
                    sentence,
                    f"who someone is, said only by #{rid}",
                    dict(v),
                    importance=self.records[rid].importance,
                    vec=vectors.get(sentence),
                )
                kept.append({"id": r.id, "content": r.content})
            for rid in op["drop"]:
                ops.forget(tx, rid, f"contradicted by #{op['keep']}: {why}", dict(v))
            return {"keep": op["keep"], "dropped": list(op["drop"])} | (
                {"kept": kept} if kept else {}
            )
        if name == "rewrite":
            before = self.records[op["id"]].content
            r = ops.rewrite(tx, op["id"], op["content"], why, dict(v), vec)
            return {"before": before, "content": r.content}
        if name == "split":
            ids = ops.split(
                tx, op["id"], op["parts"], why, dict(v), [vectors.get(p) for p in op["parts"]]
            )
            return {"before": self.records[op["id"]].content, "parts": op["parts"], "ids": ids}
        if name == "derive":
            r = ops.derive(
                tx,
                op["from"],
                op["content"],
                why,
                dict(v),
                kind=op.get("kind", "fact"),
                importance=op.get("importance"),
                vec=vec,
            )
            return {"id": r.id, "content": r.content, "private": r.private}
        if name == "forget":
            ops.forget(tx, op["id"], why, dict(v))
            return {}
        if name == "set_kind":
            old_kind = self.records[op["id"]].kind.value
            ops.set_fields(tx, op["id"], dict(v), kind=op["kind"])
            return {"from": old_kind, "to": op["kind"]}
        old_importance = self.records[op["id"]].importance
        ops.set_fields(tx, op["id"], dict(v), importance=op["importance"])
        return {"from": old_importance, "to": op["importance"]}

    def _kept_relations(self, op: Mapping[str, Any]) -> list[tuple[int, candidates.Relation]]:
        """Who someone is that a resolve's dropped records say and the record it keeps does not
        (:func:`core.sleep.candidates.kept_relations`): nothing lost, as at write time."""
        keep = self.records.get(op["keep"])
        if keep is None:
            return []
        return [
            (rid, rel)
            for rid in op["drop"]
            if rid in self.records
            for rel in candidates.kept_relations(
                self.records[rid].content, keep.content, keep.content
            )
        ]

    @staticmethod
    def _says_relation(
        tx: SleepTxn, rel: candidates.Relation, but: set[int], source: Record
    ) -> bool:
        """Whether a live record outside ``but``, in ``source``'s scope and seen wherever
        ``source`` is (public for a public one), names ``rel``'s person with one of its
        roles."""
        found = records.listing(
            tx.conn,
            kind=None,
            private=None if source.private else False,
            pinned=None,
            scope=source.scope,
            scopes=None,
            contains=rel.name[: max(3, len(rel.name) - 2)],
            order="updated",
            limit=200,
            offset=0,
        )
        return any(rel.said_by(r.content) for r in found if r.id not in but)

    def apply(
        self,
        tx: SleepTxn | None,
        screened: Iterable[Screened],
        vectors: Mapping[str, np.ndarray | None] | None = None,
    ) -> Applied:
        """Apply (or, with ``tx=None``, a dry run: judge as if applying) op by op, each in
        its own savepoint; refusals are journaled, not raised."""
        vectors = vectors or {}
        out = Applied()
        for s in screened:
            raw = s.proposal.raw
            why = (raw.get("why") if isinstance(raw, dict) else None) or ""
            name = (raw.get("op") if isinstance(raw, dict) else None) or "?"
            reason = s.refused
            if reason is None and tx is not None and self._changed & set(s.ids):
                # an earlier op of this phase changed a record this one names: judge it again
                # on the records as they are now (a merge may have made a survivor core)
                reason = self._policy(s.well_formed, s.proposal.allowed)
            reason = reason or self._budget(s)
            detail: dict[str, Any] = {}
            core_delta = self._core_delta(s.op) if reason is None else 0
            if s.op is not None:
                extra = sorted(set(raw) - set(s.op) - {"op", "why"})
                if extra:
                    detail["ignored"] = extra
            if reason is None and tx is not None:
                try:
                    with tx.op():
                        detail.update(self._do(tx, s, vectors))
                except MemoryOpError as e:
                    reason = str(e)
                else:
                    # the plan's own change is the new baseline for its later ops (a kind and
                    # an importance change of one record); a write by anyone else still is not
                    s.proposal.versions.update(ops.versions(tx.conn, s.ids))
                    self.records.update(records.fetch_many(tx.conn, s.ids, live=True))
                    self._changed.update(s.ids)
            if reason is not None:
                out.ops.append(OpLog(str(name)[:40], s.ids, False, str(why)[:400], reason, detail))
                if any(t in reason for t in TRANSIENT):
                    out.blocked_units.add(s.proposal.unit)
                continue
            self.budget.ops += 1
            self.budget.forgotten += s.forgets
            self.core_chars += core_delta
            op = s.well_formed
            if op["op"] == "forget":
                out.forgotten.add(op["id"])
            if tx is None:
                detail["dry_run"] = True
                detail.update(
                    {k: op[k] for k in ("content", "parts", "kind", "importance") if k in op}
                )
            out.ops.append(OpLog(name, s.ids, tx is not None, op["why"], None, detail))
        return out


def embed_new_texts(memory: Memory, screened: Sequence[Screened]) -> dict[str, np.ndarray | None]:
    """Vectors for the texts the acceptable ops will write (computed before the transaction,
    outside the store's lock). Best effort: a failed embedding leaves those records without a
    vector until the next hygiene."""
    texts = list(dict.fromkeys(t for s in screened if s.refused is None for t in s.texts))
    if not texts:
        return {}
    m = memory.embed(texts)
    if m is None:
        return {t: None for t in texts}
    return dict(zip(texts, m, strict=True))
