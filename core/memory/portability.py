"""Nothing the owner owns is locked in (SPEC §11): export, import and backup of the memory.

- **Export** — JSON Lines for round trips (a header line, then one record per line: content,
  kind, importance, flags, scope, source, dates, access history, and the archive's who/why/when
  for archived records), or Markdown for reading. Private records are left out unless asked for,
  and the output says how many were left out.
- **Import** — an export (or a hand-written file of ``{"content": …}`` lines) is checked whole
  first: a bad line is reported with its number and the reason, and nothing is written. Then one
  transaction writes it, through dedup (:meth:`core.memory.facade.Memory.import_exported`).
- **Backup** — SQLite's online backup API (:meth:`core.memory.facade.Memory.backup`), consistent while
  Eva runs.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core import ownership
from core import text as txt
from core.errors import MemoryOpError, clip, clip_text
from core.memory import validation as valid
from core.memory.bulk import ImportResult
from core.memory.facade import Memory
from core.store.records import GLOBAL_SCOPE, Actor, Source

FORMAT_VERSION = 1
FORMATS = ("jsonl", "md")
MAX_PROBLEMS = 20  # bad lines reported at most (the rest are counted)
# Times an import accepts (issue 25 item C3): from the epoch to a day past now (a day of slack
# for clocks that disagree). Eva's times are seconds since 1970, so nothing earlier can be a
# moment Eva wrote, and a memory made in the future would be fresh forever and breaks the
# arithmetic of decay; year 1 or 9999 came from a typo or a hostile file, not from an export.
EARLIEST = 0.0
FUTURE_SLACK = 86_400.0

# A record line's fields. Unknown fields are refused: a typo such as "privat": true must not
# import a private memory as a public one.
FIELDS = frozenset(
    {
        "id",
        "content",
        "kind",
        "importance",
        "private",
        "pinned",
        "scope",
        "source",
        "created_at",
        "updated_at",
        "last_access_at",
        "access_count",
        "consolidated_at",
        "accesses",
        "archived",
    }
)
HEADER_KEY = "eva_export"


# ---------------------------------------------------------------------------- export
@dataclass(frozen=True)
class Export:
    """An export's lines (each ends with a newline) and what it left out."""

    lines: list[str]
    records: int
    archived: int
    private_left_out: int  # private records not exported (0 with ``private``)


def _record_line(row: dict) -> dict[str, Any]:
    archived = None
    if row["archived_at"] is not None:
        archived = {
            "at": row["archived_at"],
            "by": row["archived_by"] or Actor.OWNER.value,
            "why": row["archived_why"] or "",
        }
    return {
        "id": row["id"],
        "content": row["content"],
        "kind": row["kind"],
        "importance": row["importance"],
        "private": bool(row["private"]),
        "pinned": bool(row["pinned"]),
        "scope": row["scope"],
        "source": row["source"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "last_access_at": row["last_access_at"],
        "consolidated_at": row["consolidated_at"],
        "accesses": list(row["accesses"]),
        "archived": archived,
    }


def readable_time(ts: float | None) -> str:
    """A stored time for reading. Whatever the store holds (year 1, a far future, text written
    by another tool) is shown, never raised on: the Markdown export must not fail on one bad
    value (issue 25 item C3)."""
    if ts is None:
        return "never"
    try:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError, TypeError):
        return f"{clip(ts)} (not a valid time)"


def export(
    memory: Memory,
    fmt: str = "jsonl",
    *,
    include_archive: bool = False,
    private: bool = False,
    now: float | None = None,
) -> Export:
    """The owner's memory as JSON Lines (``jsonl``) or Markdown (``md``)."""
    if fmt not in FORMATS:
        raise MemoryOpError(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    rows, left_out = memory.exported(include_archive=include_archive, private=private)
    if not private:
        # an archive's why is the words of whoever archived it (the model at a merge or a
        # forget, the owner): it may quote a private memory, so it leaves only with --private
        rows = [{**r, "archived_why": ""} if r["archived_why"] else r for r in rows]
    now = memory.clock.now() if now is None else now
    n_arch = sum(1 for r in rows if r["archived_at"] is not None)
    if fmt == "jsonl":
        header = {
            HEADER_KEY: FORMAT_VERSION,
            "exported_at": now,
            "records": len(rows),
            "archive_included": include_archive,
            "private_included": private,
            "private_left_out": left_out,
        }
        lines = [json.dumps(header, ensure_ascii=False) + "\n"]
        lines += [json.dumps(_record_line(r), ensure_ascii=False) + "\n" for r in rows]
    else:
        lines = _markdown(rows, left_out, include_archive, now)
    return Export(lines, len(rows), n_arch, left_out)


def _markdown(rows: list[dict], left_out: int, include_archive: bool, now: float) -> list[str]:
    out = [f"# Eva's memory — exported {readable_time(now)}\n", "\n"]
    live = [r for r in rows if r["archived_at"] is None]
    arch = [r for r in rows if r["archived_at"] is not None]
    noun = "memory" if len(live) == 1 else "memories"
    out.append(
        f"{len(live)} {noun}" + (f", {len(arch)} in the archive" if include_archive else "") + ".\n"
    )
    if left_out:
        out.append(
            f"{left_out} private memor{'y was' if left_out == 1 else 'ies were'} left "
            "out (export with --private to include them).\n"
        )
    out.append("\n")

    def item(r: dict) -> list[str]:
        flags = [r["kind"], f"importance {r['importance']}"]
        flags += [f for f, on in (("pinned", r["pinned"]), ("private", r["private"])) if on]
        lines = [
            f"- **#{r['id']}** {' · '.join(flags)} — {r['content']}\n",
            f"  created {readable_time(r['created_at'])}, "
            f"updated {readable_time(r['updated_at'])}, "
            f"last recalled {readable_time(r['last_access_at'])}, reinforced "
            f"{len(r['accesses'])}×, source {r['source']}\n",
        ]
        if r["archived_at"] is not None:
            lines.append(
                f"  archived {readable_time(r['archived_at'])} by {r['archived_by']}: "
                f"{r['archived_why'] or ''}\n"
            )
        return lines

    scopes = sorted({r["scope"] for r in live}, key=lambda s: (s != GLOBAL_SCOPE, s))
    for scope in scopes:
        out.append(f"## {scope}\n\n")
        for r in live:
            if r["scope"] == scope:
                out.extend(item(r))
        out.append("\n")
    if arch:
        out.append("## Archive\n\n")
        for r in arch:
            out.extend(item(r))
        out.append("\n")
    return out


# ---------------------------------------------------------------------------- import
class ImportRefused(MemoryOpError):
    """The file has bad lines; nothing was written. ``problems``: (line number, reason)."""

    def __init__(self, problems: list[tuple[int, str]], total: int) -> None:
        # a reason quotes at most a clipped value: a 1 MB bad line is never echoed whole
        shown = [(n, clip_text(why)) for n, why in problems[:MAX_PROBLEMS]]
        more = total - len(shown)
        msg = "; ".join(f"line {n}: {why}" for n, why in shown)
        if more > 0:
            msg += f"; and {more} more bad line{'s' if more > 1 else ''}"
        super().__init__(f"nothing was imported — {msg}", code="bad_import")
        self.problems = shown
        self.total = total


def _number(value: object, name: str, now: float, *, optional: bool = False) -> float | None:
    """A time of a record line: seconds since the epoch or ISO 8601, between :data:`EARLIEST`
    and ``now`` + :data:`FUTURE_SLACK`."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            ts = dt.timestamp()
        except (ValueError, OverflowError):
            raise MemoryOpError(
                f"{name} must be a time (seconds or ISO 8601), got {clip(value)}"
            ) from None
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryOpError(f"{name} must be a time (seconds or ISO 8601), got {clip(value)}")
    else:
        try:
            ts = float(value)
        except OverflowError:  # a 400-digit number
            ts = math.inf
    if not math.isfinite(ts) or not EARLIEST <= ts <= now + FUTURE_SLACK:
        raise MemoryOpError(
            f"{name} is out of range ({clip(value)}): a time must lie between 1970-01-01 and now"
        )
    return ts


def check_line(obj: object, line: int, max_chars: int, now: float) -> dict[str, Any]:
    """One record line as clean fields (raises MemoryOpError naming what is wrong)."""
    if not isinstance(obj, dict):
        raise MemoryOpError("a record line must be a JSON object")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise MemoryOpError(
            f"unknown field {clip(unknown[0])} (fields: content, kind, importance, "
            "private, pinned, scope, source, created_at, updated_at, "
            "consolidated_at, accesses, archived)"
        )
    if "content" not in obj:
        raise MemoryOpError("content is missing")
    created = _number(obj.get("created_at", now), "created_at", now)
    updated = _number(obj.get("updated_at", created), "updated_at", now)
    accesses = obj.get("accesses", [])
    if not isinstance(accesses, list):
        raise MemoryOpError("accesses must be a list of times")
    accesses = sorted(_number(a, "an access time", now) for a in accesses)
    try:
        source = Source(obj.get("source", Source.OWNER.value))
    except ValueError:
        raise MemoryOpError(
            f"source must be one of {', '.join(s.value for s in Source)} "
            f"(got {clip(obj.get('source'))})"
        ) from None
    archived = obj.get("archived")
    if archived is not None:
        if not isinstance(archived, dict) or "at" not in archived:
            raise MemoryOpError('archived must be null or {"at": time, "by": who, "why": text}')
        by = archived.get("by", Actor.OWNER.value)
        if by not in {a.value for a in Actor}:
            raise MemoryOpError(f"archived.by must be one of model, owner, sleep (got {clip(by)})")
        why = archived.get("why", "")
        if not isinstance(why, str):
            raise MemoryOpError("archived.why must be text")
        archived = (_number(archived["at"], "archived.at", now), by, why[:500])
    return {
        "line": line,
        "content": valid.content(obj["content"], max_chars),
        "kind": valid.kind(obj.get("kind", "fact")),
        "importance": valid.importance(obj.get("importance", 3)),
        "private": valid.flag(obj.get("private", False), "private"),
        "pinned": valid.flag(obj.get("pinned", False), "pinned"),
        "scope": valid.scope(obj.get("scope", GLOBAL_SCOPE)),
        "source": source,
        "created_at": created,
        "updated_at": updated,
        "consolidated_at": _number(
            obj.get("consolidated_at"), "consolidated_at", now, optional=True
        ),
        "accesses": accesses,
        "archived": archived,
    }


def parse(lines: Iterable[str], max_chars: int, now: float) -> list[dict[str, Any]]:
    """Every record of an export, checked. Blank lines are skipped; a header line (the first
    one, as ``export`` writes it) is read and checked. Raises :class:`ImportRefused` with every
    bad line's number and reason."""
    items: list[dict[str, Any]] = []
    problems: list[tuple[int, str]] = []
    seen_any = False
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        first, seen_any = not seen_any, True
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            problems.append((n, f"not JSON ({e.msg} at column {e.colno})"))
            continue
        except RecursionError:  # [[[[… thousands deep
            problems.append((n, "not JSON Eva reads (nested too deeply)"))
            continue
        except ValueError as e:  # a number past Python's 4300-digit limit, and the like
            problems.append((n, f"not JSON Eva reads ({clip_text(str(e).split(';')[0], 120)})"))
            continue
        if isinstance(obj, dict) and HEADER_KEY in obj:
            if not first:
                problems.append((n, "an export header is allowed only on the first line"))
            elif obj[HEADER_KEY] != FORMAT_VERSION:
                problems.append(
                    (
                        n,
                        f"export format {clip(obj[HEADER_KEY])} is not one this "
                        f"Eva reads ({FORMAT_VERSION})",
                    )
                )
            continue
        try:
            items.append(check_line(obj, n, max_chars, now))
        except MemoryOpError as e:
            problems.append((n, str(e)))
        except (TypeError, ValueError, OverflowError, RecursionError) as e:
            problems.append((n, f"cannot be read ({type(e).__name__})"))
    if problems:
        raise ImportRefused(problems, len(problems))
    return items


def repeated_lines(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The items without the lines that repeat an earlier line of the same file, and those
    lines (line number → the earlier line's number). Issue 25 item C1: a line is a repeat when
    the store's dedup would take it for the earlier line had that one been stored already —
    the same content and creation time, or (both live) the same stem set (§3.2's normalisation:
    case, punctuation, stop words and word endings aside) in the same scope or global."""
    first: dict[tuple, int] = {}
    keep: list[dict[str, Any]] = []
    repeats: dict[int, int] = {}
    for it in items:
        mine = [("exact", it["content"], it["created_at"])]
        look = list(mine)
        stems = txt.stem_set(it["content"])
        if it.get("archived") is None and stems:
            mine.append(("live", it["scope"], stems))
            look += [("live", it["scope"], stems), ("live", GLOBAL_SCOPE, stems)]
        earlier = next((first[k] for k in look if k in first), None)
        if earlier is not None:
            repeats[it["line"]] = earlier
            continue
        for k in mine:
            first.setdefault(k, it["line"])
        keep.append(it)
    return keep, repeats


def import_items(memory: Memory, items: list[dict[str, Any]]) -> ImportResult:
    """Write checked items (:func:`parse`) in one transaction (or nothing). A line repeating an
    earlier line of the file is imported once and reported as a duplicate of the record the
    earlier line made (or was found to duplicate)."""
    keep, repeats = repeated_lines(items)
    res = memory.import_exported(keep)
    if not repeats:
        return res
    skipped = dict(res.duplicates)
    made = iter(res.created)
    record_of = {
        it["line"]: skipped[it["line"]] if it["line"] in skipped else next(made) for it in keep
    }
    dups = [*res.duplicates, *((n, record_of[e]) for n, e in repeats.items())]
    return replace(res, duplicates=tuple(sorted(dups)))


def import_lines(memory: Memory, lines: Iterable[str]) -> ImportResult:
    """Check every line, then write them all in one transaction (or nothing)."""
    items = parse(lines, memory.config.max_chars, memory.clock.now())
    return import_items(memory, items)


def read_lines(path: str | Path) -> list[str]:
    """An import file's lines. Split on "\n" only (a "\r\n" ending tolerated), never with
    ``str.splitlines``: an export writes U+2028, U+0085 and the like raw inside a content,
    and they must come back as they were (issue 25 item C2)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise MemoryOpError(f"{p} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise MemoryOpError(f"{p} cannot be read: {e.strerror or e}") from None
    return split_lines(text)


def split_lines(text: str) -> list[str]:
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def import_file(memory: Memory, path: str | Path) -> ImportResult:
    return import_lines(memory, read_lines(path))


# ---------------------------------------------------------------------------- backup
def backup_name(now: float) -> str:
    return "eva-backup-" + datetime.fromtimestamp(now, UTC).strftime("%Y%m%d-%H%M%S") + ".db"


def backup(memory: Memory, directory: str | Path, now: float | None = None) -> Path:
    """A consistent copy of the whole store (memories, archive, personas, chats, journal) in
    ``directory`` (made if missing, 0700), named after the moment:
    ``eva-backup-YYYYmmdd-HHMMSS.db`` (0600)."""
    d = ownership.private_dir(directory, claim=False)
    now = time.time() if now is None else now
    dest = d / backup_name(now)
    k = 1
    while dest.exists():  # two backups in one second
        dest = d / backup_name(now).replace(".db", f"-{k}.db")
        k += 1
    return memory.backup(dest)
