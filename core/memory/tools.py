"""The memory tools the model calls (SPEC §3.2), as schemas and one dispatcher.

``tools_for(ctx)`` says which tools a turn is offered (SPEC §1: the mutating ones only in owner
turns, ``memory_list`` only where private memory may be seen); ``call(memory, name, args, ctx)``
runs one and returns a :class:`ToolResult` whose ``text`` is what the model reads. Every failure —
unknown tool, bad arguments, a refused operation — is an error result, never an exception, and
nothing is half-written (each operation is one transaction).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from core.errors import MemoryOpError
from core.learned import use_vectors
from core.memory.facade import Memory, SaveResult, Similar
from core.memory.prompt_section import COLUMNS, line, quoted
from core.privacy import AccessDenied, TurnContext
from core.sensitivity import sensitive
from core.store.records import Record

KIND_HELP = (
    "core: who the owner is and how to be with them — always in the prompt, keep it small; "
    "fact: durable knowledge (preferences, people, plans, decisions); "
    "event: something that happened at a time — fades four times faster than a fact."
)
IMPORTANCE_HELP = (
    "1 trivia, 2 minor, 3 normal, 4 important, 5 essential (names, health, commitments). "
    "Most memories are 2-3; do not inflate."
)
PRIVATE_HELP = (
    "true for the owner's body, health, money, location, documents and other people's names: "
    "such memories are shown only in the owner's private trusted conversations."
)

# what a save sets and an update may change besides the text: one definition, so that the two
# tools never describe a memory's kind, importance or privacy differently
_CLASSING: dict[str, dict[str, Any]] = {
    "kind": {"type": "string", "enum": ["core", "fact", "event"], "description": KIND_HELP},
    "importance": {"type": "integer", "minimum": 1, "maximum": 5, "description": IMPORTANCE_HELP},
    "private": {"type": "boolean", "description": PRIVATE_HELP},
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "memory_save": {
        "name": "memory_save",
        "description": (
            "Save one durable memory (one topic per call). If a very similar memory exists it is "
            "reinforced instead; the answer lists similar memories so you can fix contradictions "
            "with memory_update or memory_forget."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": "The memory, self-contained.",
                    "minLength": 1,
                    "maxLength": 500,
                },
                **_CLASSING,
            },
            "required": ["content", "kind", "importance"],
        },
    },
    "memory_update": {
        "name": "memory_update",
        "description": "Edit a saved memory in place (e.g. correct it, or demote a core to fact).",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "integer", "description": "The memory's id."},
                "content": {"type": "string", "minLength": 1, "maxLength": 500},
                **_CLASSING,
            },
            "required": ["id"],
        },
    },
    "memory_forget": {
        "name": "memory_forget",
        "description": "Forget an outdated or wrong memory (it goes to the archive, restorable).",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "integer", "description": "The memory's id."},
                "why": {"type": "string", "description": "Why it is forgotten.", "minLength": 1},
            },
            "required": ["id", "why"],
        },
    },
    "memory_search": {
        "name": "memory_search",
        "description": (
            "Search saved memories by meaning and words. Core memories are already in your "
            "prompt and are not returned."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1}},
            "required": ["query"],
        },
    },
    "memory_list": {
        "name": "memory_list",
        "description": "List saved memories, newest first, optionally of one kind.",
        "parameters": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["core", "fact", "event"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200},
            },
        },
    },
}

PRIVATE_HERE = "a private memory is not written where private memory cannot be seen"
MUTATING = frozenset({"memory_save", "memory_update", "memory_forget", "memory_consolidate"})
# the model's changes of what is already kept, at most ``model_changes_per_turn`` per turn
CAPPED = frozenset({"memory_update", "memory_forget"})


def tools_for(
    ctx: TurnContext, extra: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The tool schemas this turn is offered (SPEC §1). ``extra`` adds tools of later layers
    (e.g. ``memory_consolidate``), filtered by the same rules."""
    schemas = dict(SCHEMAS)
    schemas.update(extra or {})
    out = []
    for name, schema in schemas.items():
        if name in MUTATING and not ctx.can_mutate:
            continue
        if name == "memory_list" and not ctx.can_list:
            continue
        out.append(schema)
    return out


@dataclass(frozen=True)
class ToolResult:
    name: str
    ok: bool
    text: str  # what the model reads
    data: dict[str, Any] = field(default_factory=dict)  # for the UI (ids, status, …)
    changed_ids: tuple[int, ...] = ()


def _similar_text(similar: tuple[Similar, ...]) -> str:
    if not similar:
        return "No similar memories."
    rows = "\n".join(f"#{s.id} | {s.kind.value} | {s.age} | {quoted(s.content)}" for s in similar)
    return (
        "Similar memories (check for contradictions; fix with memory_update/memory_forget):\n"
        + rows
    )


def _save_text(res: SaveResult, ctx: TurnContext) -> str:
    r = res.record
    # In a turn that may not see private memory, a private record's text is not echoed back.
    shown = "" if (r.private and not ctx.sees_private) else f": {r.content}"
    head = {
        "created": f"Saved as #{r.id} ({r.kind.value}, importance {r.importance}"
        f"{', private' if r.private else ''}){shown}",
        "reinforced": f"Already remembered as #{r.id}; reinforced it{shown}",
        "updated": f"Already remembered as #{r.id}; replaced it with the more detailed wording"
        f"{shown}",
    }[res.status]
    return head + "\n" + _similar_text(res.similar)


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as e:
            raise MemoryOpError(f"arguments are not valid JSON ({e.msg})") from None
        if isinstance(parsed, dict):
            return parsed
    raise MemoryOpError("arguments must be a JSON object")


def _only(args: dict[str, Any], allowed: set[str], required: set[str]) -> None:
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise MemoryOpError(f"unknown argument(s): {', '.join(unknown)}")
    missing = sorted(required - set(args))
    if missing:
        raise MemoryOpError(f"missing argument(s): {', '.join(missing)}")


def _words(record: Any, ctx: TurnContext) -> dict[str, str]:
    """The memory's words for the note under the reply (issue 28 item 2: the owner reads what
    was kept, not an id); none for a private memory in a turn that cannot see it."""
    if record.private and not ctx.sees_private:
        return {}
    return {"content": record.content}


def call(memory: Memory, name: str, raw_args: Any, ctx: TurnContext) -> ToolResult:
    """Run one memory tool for the model. Never raises for bad input; errors are results."""
    try:
        if name not in SCHEMAS:
            raise MemoryOpError(f"unknown tool {name!r}")
        if name in MUTATING and not ctx.can_mutate:
            raise AccessDenied(f"{name} is available only in the owner's turns")
        if name == "memory_list" and not ctx.can_list:
            raise AccessDenied("memory_list is available only to the owner on a trusted surface")
        args = _args(raw_args)
        props = SCHEMAS[name]["parameters"].get("properties", {})
        _only(args, set(props), set(SCHEMAS[name]["parameters"].get("required", [])))
        now = memory.clock.now()
        if name in CAPPED:
            cap = memory.config.model_changes_per_turn
            if memory.model_changes(ctx.turn_id) >= cap:
                return ToolResult(
                    name,
                    False,
                    f"Error: this turn already changed or forgot {cap} memories, the most one "
                    "turn may; nothing more was changed. Tell the owner what else should "
                    "change: they can do it on the memories screen.",
                    {"error": "per-turn limit", "capped": cap},
                )
        if (
            name in ("memory_save", "memory_update")
            and isinstance(args.get("content"), str)
            and not args.get("private")
            and sensitive(args["content"], use_vectors(memory.embedder))
        ):
            # the model left it public, but its words are private (SPEC §2: health, money, a
            # secret …; core.sensitivity): it is kept private, or not here at all
            if not ctx.sees_private:
                return ToolResult(
                    name,
                    False,
                    f"Error: {PRIVATE_HERE}, and this one is private (health, money, a "
                    "secret …). Nothing was changed.",
                    {"error": "private here"},
                )
            args["private"] = True
        if name == "memory_save":
            res = memory.save(
                args["content"],
                ctx,
                kind=args["kind"],
                importance=args["importance"],
                private=args.get("private", False),
            )
            return ToolResult(
                name,
                True,
                _save_text(res, ctx),
                {
                    "id": res.id,
                    "status": res.status,
                    "kind": res.record.kind.value,
                    "importance": res.record.importance,
                    "private": res.record.private,
                    **_words(res.record, ctx),
                },
                (res.id,),
            )
        if name == "memory_update":
            fields = {k: args[k] for k in ("content", "kind", "importance", "private") if k in args}
            r = memory.update(args["id"], ctx, **fields)
            shown = "" if (r.private and not ctx.sees_private) else f": {r.content}"
            return ToolResult(
                name,
                True,
                f"Updated #{r.id} ({r.kind.value}, importance {r.importance}){shown}",
                {"id": r.id, "status": "updated", **_words(r, ctx)},
                (r.id,),
            )
        if name == "memory_forget":
            a = memory.forget(args["id"], args["why"], ctx)
            return ToolResult(
                name,
                True,
                f"Forgot #{a.record.id} (moved to the archive).",
                {"id": a.record.id, "status": "forgotten", **_words(a.record, ctx)},
                (a.record.id,),
            )
        if name == "memory_search":
            hits = memory.search(args["query"], ctx)
            if not hits:
                return ToolResult(name, True, "Nothing relevant found.", {"ids": []})
            found: list[Record] = []
            for h in hits:
                assert h.record is not None, "memory.search gives every hit its record"
                found.append(h.record)
            rows = "\n".join(line(r, now, mark="#") for r in found)
            return ToolResult(name, True, COLUMNS + "\n" + rows, {"ids": [r.id for r in found]})
        # memory_list
        limit = args.get("limit", 50)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
            raise MemoryOpError("limit must be a whole number from 1 to 200")
        recs = memory.list(ctx, kind=args.get("kind"), limit=limit, scopes=ctx.scopes())
        rows = "\n".join(line(r, now, mark="#") for r in recs) or "(no memories)"
        return ToolResult(name, True, COLUMNS + "\n" + rows, {"ids": [r.id for r in recs]})
    except (MemoryOpError, AccessDenied) as e:
        return ToolResult(name, False, f"Error: {e}", {"error": str(e)})
