"""What each caller is shown: a memory, a message, a night (the owner's view and anyone's), a
turn context. Every answer is built here from an allowlist of fields, never by dumping an
object."""

from __future__ import annotations

from core.chat.transcript import StoredMessage
from core.privacy import TurnContext
from core.sleep import SleepRun
from core.store.records import Record


def context_json(ctx: TurnContext) -> dict:
    return {
        "speaker": str(ctx.speaker),
        "surface": str(ctx.surface),
        "audience": str(ctx.audience),
        "sees_private": ctx.sees_private,
    }


def record_json(r: Record) -> dict:
    return {
        "id": r.id,
        "content": r.content,
        "kind": str(r.kind),
        "importance": r.importance,
        "private": r.private,
        "pinned": r.pinned,
        "scope": r.scope,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "last_access_at": r.last_access_at,
        "access_count": r.access_count,
    }


def message_json(m: StoredMessage) -> dict:
    return {
        "id": m.id,
        "chat": m.chat_id,
        "role": m.role,
        "content": m.content,
        "status": m.status,
        "created_at": m.created_at,
    }


def run_json(r: SleepRun) -> dict:
    """The owner's view of a night: everything the journal holds."""
    return _night_json(r, owner=True)


def public_run_json(run: SleepRun) -> dict:
    """A night as anyone without the owner's token sees it (SPEC §11): only allowlisted fields
    of the allowlist-built :meth:`SleepRun.redacted` — ids, counts, statuses, times, flags and
    the code's own names. No free text that memory could be quoted in reaches it: whys, plans,
    details, refusal reasons, notes and the model's name are blank, and the summary is counts."""
    return _night_json(run.redacted(), owner=False)


def _night_json(r: SleepRun, *, owner: bool) -> dict:
    """Both views of a night in one allowlist, so that a field added to one is seen to be
    added to the other; what only the owner reads (the model's name, whys, refusal reasons)
    is blanked here for anyone else, on top of :meth:`SleepRun.redacted`."""
    return {
        "id": r.id,
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "status": r.status,
        "dry_run": r.dry_run,
        "reason": r.reason,
        "model": r.model if owner else None,
        "stages": dict(r.stages),
        "notable": r.notable,
        "summary": r.summary,
        "phases": [
            {
                "stage": p.stage,
                "name": p.name,
                "status": p.status,
                "seconds": p.seconds,
                "calls": p.calls,
                "ops": [
                    {
                        "op": o.op,
                        "ids": list(o.ids),
                        "applied": o.applied,
                        "why": o.why if owner else "",
                        "refused_reason": (
                            o.refused_reason if owner or o.refused_reason is None else "refused"
                        ),
                    }
                    for o in p.ops
                ],
            }
            for p in r.phases
        ],
    }
