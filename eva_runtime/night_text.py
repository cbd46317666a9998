"""A night of the sleep journal as text (SPEC §7): phase by phase, every op with its why and a
refusal's reason. ``eva sleep`` prints it plain (:func:`night_text`); the journal screen shows
the same pieces styled (:func:`night_pieces`: each a text and a Rich style name)."""

from __future__ import annotations

from typing import Any

from core.memory.prompt_section import human_age

MODE_REAL = "real"
MODE_DRY = "dry run"
NOTABLE_NIGHT = "notable night"
NO_PHASES = "No phases ran."
NO_CHANGES = "no changes"


def night_title(run_id: int) -> str:
    return f"Night #{run_id}"


def night_timing(started: str, took: float | None, calls: int) -> str:
    took_s = " · running" if took is None else f" · took {took:.0f}s"
    return f"started {started}{took_s} · {calls} model call{'s' if calls != 1 else ''}"


def phase_timing(status: str, seconds: float, calls: int) -> str:
    return f" — {status} · {seconds:.1f}s · {calls} call{'s' if calls != 1 else ''}"


def refused(reason: str) -> str:
    return f"refused: {reason}"


def run_mode(run: Any) -> str:
    """The one word for a night's mode, in the journal's table and in the detail (issue 16)."""
    return MODE_DRY if run.dry_run else MODE_REAL


def _ids(ids: Any) -> str:
    return " ".join(f"#{i}" for i in (ids or []))


def _started(ts: float, now: float) -> str:
    a = human_age(now - ts)
    return a if a == "now" else f"{a} ago"


def night_pieces(run: Any, now: float) -> list[tuple[str, str]]:
    """A night as (text, style) pieces, in order; "" is no style."""
    out: list[tuple[str, str]] = [(night_title(run.id), "bold")]
    head = f" · {run.status} · {run_mode(run)} · {run.reason}"
    if run.model:
        head += f" · {run.model}"
    out.append((head + "\n", ""))
    took = None if run.finished_at is None else run.finished_at - run.started_at
    calls = sum(p.calls for p in run.phases)
    out.append((night_timing(_started(run.started_at, now), took, calls) + "\n", "dim"))
    if run.summary:
        out.append((f"{run.summary}\n", ""))
    if run.notable:
        out.append((NOTABLE_NIGHT + "\n", "bold yellow"))
    if not run.phases:
        out.append((f"\n{NO_PHASES}\n", "dim"))
    for p in run.phases:
        out.append((f"\n{p.stage} / {p.name}", "bold"))
        out.append((phase_timing(p.status, p.seconds, p.calls) + "\n", "dim"))
        if p.note:
            out.append((f"  {p.note}\n", "italic"))
        for o in p.ops:
            if o.applied:
                mark, style = "✓", "green"
            elif o.refused_reason is not None:
                mark, style = "✗", "red"
            else:
                mark, style = "○", "cyan"  # a dry run: would be applied
            out.append((f"  {mark} ", style))
            out.append((f"{o.op} {_ids(o.ids)}", "bold"))
            if o.why:
                out.append((f" — {o.why}", ""))
            if o.refused_reason:
                out.append((f"  ({refused(o.refused_reason)})", "red"))
            out.append(("\n", ""))
        if not p.ops and p.status not in ("skipped",):
            out.append((f"  {NO_CHANGES}\n", "dim"))
    return out


def night_text(run: Any, now: float) -> str:
    """A night as plain text (``eva sleep``'s report, the journal's copy)."""
    return "".join(text for text, _style in night_pieces(run, now))
