"""The owner's hands on memory in the TUI (issue 13): the palette commands that open personas,
add a memory, clear all, save from dialogue, initialize from a description, export and back up.
Each store call runs in a thread worker; results and refusals become notices."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from core import ownership
from core.chat import export as chat_export
from core.chat.chats import Chats
from core.chat.transcript import StoredMessage, Transcript
from core.errors import MemoryOpError
from core.memory import portability
from core.store.records import Actor, Record, Source
from eva_tui import strings as S
from screens.chat_import import ImportChatsScreen, offer_review
from screens.drafting import InitFromDescription, SaveFromDialogue
from screens.memory_dialogs import (
    AddMemory,
    ClearAll,
    ConfirmClearPinned,
    MoveToScope,
    scope_options,
)
from screens.personas import PersonasScreen

if TYPE_CHECKING:
    from core.memory.facade import Memory
    from eva_tui.app import EvaApp

INIT_OFFERED = "init.offered"  # meta key: the first-run offer was made


class OwnerCommand(NamedTuple):
    title: str
    help: str
    callback: Callable[[], object]


def _active_scope(app: EvaApp) -> str:
    p = app.services.active_persona()
    return "global" if p is None or p.is_default else p.id


def _scopes(app: EvaApp) -> list[tuple[str, str]]:
    return scope_options(app.services.memory, app.services.personas)


def _memory(app: EvaApp) -> Memory | None:
    """The open memory, or None with a notice while it is still opening."""
    memory = app.services.memory
    if memory is None:
        app.notify("The memory is still opening; try again in a moment.")
    return memory


def _in_thread(app: EvaApp, name: str, fn: Callable[[], str | None]) -> None:
    """Run a store call in a worker; its returned text (if any) is the notice; a refusal is an
    error notice through the app's one worker-failure path."""

    def run() -> None:
        note = fn()
        app.call_from_thread(app.memory_changed)
        if note:
            app.call_from_thread(app.notify, note, timeout=8)

    app.run_worker(run, thread=True, exit_on_error=False, name=name, group="owner")


# ---------------------------------------------------------------------------------- actions
def open_personas(app: EvaApp) -> None:
    if _memory(app) is not None:
        app.push_screen(PersonasScreen())


def add_memory(app: EvaApp) -> None:
    memory = _memory(app)
    if memory is None:
        return

    def added(fields: dict | None) -> None:
        if not fields:
            return

        def save() -> str:
            scope = fields.pop("scope")
            res = memory.save(
                fields.pop("content"),
                memory.owner_in(scope),
                scope=scope,
                source=Source.OWNER,
                actor=Actor.OWNER,
                **fields,
            )
            what = S.added_memory(res.status, res.id)
            if res.similar:
                what += ". Similar: " + "; ".join(
                    f"#{s.id} ({s.age}) {s.content[:60]}" for s in res.similar[:3]
                )
            return what + "."

        _in_thread(app, "adding a memory", save)

    app.push_screen(AddMemory(memory, _scopes(app), _active_scope(app)), added)


def move_to_scope(app: EvaApp, record: Record) -> None:
    memory = _memory(app)
    if memory is None:
        return

    def moved(scope: str | None) -> None:
        if scope and scope != record.scope:

            def move() -> str:
                memory.move_to_scope(record.id, scope)
                return S.moved_memory(record.id, scope)

            _in_thread(app, f"moving memory #{record.id}", move)

    app.push_screen(MoveToScope(record, _scopes(app)), moved)


def clear_all(app: EvaApp) -> None:
    memory = _memory(app)
    if memory is None:
        return

    def second(scope: str, yes: bool | None) -> None:
        if not yes:
            return

        def clear_pinned() -> str:
            _turn, ids = memory.clear_scope(scope, pinned=True)
            return f"{len(ids)} pinned memories of {scope} moved to the archive."

        _in_thread(app, f"clearing the pinned memories of {scope}", clear_pinned)

    def first(scope: str | None) -> None:
        if not scope:
            return

        def clear() -> str:
            _turn, ids = memory.clear_scope(scope)
            pinned = memory.scope_stats().get(scope, (0, 0))[1]
            if pinned:
                app.call_from_thread(
                    app.push_screen,
                    ConfirmClearPinned(scope, pinned),
                    lambda yes: second(scope, yes),
                )
            return f"{len(ids)} memories of {scope} moved to the archive (F3 restores them)" + (
                f"; {pinned} pinned stay." if pinned else "."
            )

        _in_thread(app, f"clearing {scope}", clear)

    app.push_screen(
        ClearAll(memory, _scopes(app), _active_scope(app), memory.config.archive_ttl_days), first
    )


def _on_saved(app: EvaApp, said: Callable[[list[int]], str]) -> Callable[[list[int] | None], None]:
    """What follows a drafting dialog that saved memories (from the dialogue, or from the
    owner's description): the memory views refresh and the owner is told ``said(ids)``."""

    def saved(ids: list[int] | None) -> None:
        if ids:
            app.memory_changed()
            app.notify(said(ids), timeout=8)

    return saved


def save_from_dialogue(app: EvaApp) -> None:
    if _memory(app) is None:
        return
    conv = app.services.conversation
    messages = conv.history(limit=40) if conv is not None else []
    if not messages:
        app.notify("There is no conversation to save from yet.")
        return

    def said(ids: list[int]) -> str:
        return f"Saved {len(ids)} pinned memor{'y' if len(ids) == 1 else 'ies'}: " + " ".join(
            f"#{i}" for i in ids
        )

    app.push_screen(
        SaveFromDialogue(messages, _scopes(app), _active_scope(app)), _on_saved(app, said)
    )


def init_from_description(app: EvaApp) -> None:
    if _memory(app) is None:
        return

    def said(ids: list[int]) -> str:
        n = len(ids)
        return f"Eva remembers {n} thing{'s' if n != 1 else ''} about you now (F2 shows them)."

    app.push_screen(InitFromDescription(_scopes(app), _active_scope(app)), _on_saved(app, said))


def export_memory(app: EvaApp, private: bool) -> None:
    """JSON Lines into <data dir>/exports (mode 0600), archive included."""
    memory = _memory(app)
    if memory is None:
        return

    def run() -> str:
        now = app.services.clock.now()
        ex = portability.export(memory, include_archive=True, private=private)
        path = _write_export(app, "eva-export", now, ".jsonl", ex.lines)
        note = f"Exported {ex.records} memories to {path}"
        if ex.private_left_out:
            note += f"; {ex.private_left_out} private left out"
        return note + "."

    _in_thread(app, "exporting the memory", run)


def export_chats(app: EvaApp, fmt: str, private: bool) -> None:
    """Every live chat into <data dir>/exports (mode 0600), JSON Lines or Markdown, under the
    memory export's private rule (issue 28 item 7)."""
    memory = _memory(app)
    if memory is None:
        return

    def run() -> str:
        now = app.services.clock.now()
        ex = chat_export.export_chats(
            memory.attach(Chats), memory.attach(Transcript), fmt, private=private, now=now
        )
        path = _write_export(app, "eva-chats", now, ".jsonl" if fmt == "jsonl" else ".md", ex.lines)
        note = f"Exported {ex.chats} chats ({ex.messages} messages) to {path}"
        if ex.private_left_out:
            note += (
                f"; {ex.private_left_out} messages written where private memory was "
                "visible were left out"
            )
        return note + "."

    _in_thread(app, "exporting the chats", run)


def import_chats(app: EvaApp, path: str = "") -> None:
    """Issue 28 item 7: a file → its preview → one transaction; then drafts to review."""
    if _memory(app) is None:
        return

    def done(ids: list[int] | None) -> None:
        if not ids:
            return
        app.notify(
            f"Imported {len(ids)} chat{'s' if len(ids) != 1 else ''} (Ctrl+O lists "
            "them; Ctrl+G searches them).",
            timeout=8,
        )
        review_imported(app)

    app.push_screen(ImportChatsScreen(path), done)


def review_imported(app: EvaApp) -> None:
    """Offer the imported messages, 20 at a time, for drafts the owner reviews: nothing is
    saved unless she keeps it."""
    if _memory(app) is None:
        return

    def open_drafts(batch: list[StoredMessage], after) -> None:
        def saved(ids: list[int] | None) -> None:
            if ids:
                app.memory_changed()
                app.notify(
                    f"Saved {len(ids)} pinned memor{'y' if len(ids) == 1 else 'ies'}.", timeout=6
                )
            after(ids)

        app.push_screen(
            SaveFromDialogue(batch, _scopes(app), _active_scope(app), select_all=True), saved
        )

    if not offer_review(app, open_drafts):
        app.notify("No imported messages wait for drafts.")


def search_chats(app: EvaApp) -> None:
    """The chat search, from anywhere: the chat screen opens it (Enter jumps there)."""
    from screens.chat import ChatScreen

    if isinstance(app.screen, ChatScreen):
        app.screen.action_search()
        return
    app.action_go("chat")

    def open_it() -> None:
        if isinstance(app.screen, ChatScreen):
            app.screen.action_search()

    app.call_after_refresh(open_it)


def _write_export(app: EvaApp, stem: str, now: float, suffix: str, lines: Iterable[str]) -> Path:
    """``lines`` in a new file of <data dir>/exports that only the owner may read (mode 0600),
    named as a backup of ``now`` is but for its ``stem`` and ``suffix``, and never over an
    earlier one: what the memory's and the chats' exports both write."""
    folder = app.services.data_dir / "exports"
    ownership.private_dir(folder)
    name = portability.backup_name(now).replace("eva-backup-", f"{stem}-")
    path = _unique(folder / name.replace(".db", suffix))
    with ownership.open_private(path, "x", encoding="utf-8") as f:
        f.writelines(lines)
    return path


def _unique(path: Path) -> Path:
    k, out = 1, path
    while out.exists():
        out = path.with_name(f"{path.stem}-{k}{path.suffix}")
        k += 1
    return out


def backup_now(app: EvaApp) -> None:
    """A consistent copy of the store into <data dir>/backups (SQLite online backup)."""
    memory = _memory(app)
    if memory is None:
        return
    folder = app.services.data_dir / "backups"

    def run() -> str:
        dest = portability.backup(memory, folder, app.services.clock.now())
        return f"Backup written: {dest} (README: Backup and restore)."

    _in_thread(app, "backing up", run)


def offer_init(app: EvaApp) -> None:
    """On first run (an empty store, never offered before), offer to initialize memories: the
    welcome's own button when the chat shows one (``EvaApp.welcome_actions``), else a notice.
    Not both: seen as the owner at 120x40, the 20-second notice covered the message box and
    the owner's first exchange, and it said what the button under the welcome already offers."""
    memory = app.services.memory
    if memory is None or memory.count() or memory.count(archived=True):
        return
    try:
        if not memory.first_time(INIT_OFFERED):
            return
    except (MemoryOpError, OSError):
        return
    if app.welcome_actions:
        return
    app.notify(
        "New here? Tell Eva about yourself and she drafts her first memories: Ctrl+P → "
        "“Initialize memories from a description”.",
        title="Welcome",
        timeout=20,
    )


def owner_commands(app: EvaApp) -> list[OwnerCommand]:
    return [
        OwnerCommand(
            "Personas…",
            "Switch, create, edit or delete the personas Eva runs as",
            lambda: open_personas(app),
        ),
        OwnerCommand(
            "Add a memory…",
            "Content, kind, importance, private, scope (dedup first)",
            lambda: add_memory(app),
        ),
        OwnerCommand(
            "Save from dialogue…",
            "Select up to 20 messages; Eva drafts up to 5 "
            "memories; you keep, edit or drop each; saved pinned",
            lambda: save_from_dialogue(app),
        ),
        OwnerCommand(
            "Initialize memories from a description…",
            "Write up to 1,000 characters about yourself; confirm each draft",
            lambda: init_from_description(app),
        ),
        OwnerCommand(
            "Clear all memories of a scope…",
            "Unpinned ones to the archive; pinned only after a second confirmation",
            lambda: clear_all(app),
        ),
        OwnerCommand(
            "Export memory (JSON Lines, without private)",
            "Into the data dir's exports/ (archive included)",
            lambda: export_memory(app, private=False),
        ),
        OwnerCommand(
            "Export memory with private (JSON Lines)",
            "Into the data dir's exports/, mode 0600 (archive included)",
            lambda: export_memory(app, private=True),
        ),
        OwnerCommand(
            "Backup now",
            "A consistent copy of the store into the data dir's backups/ (SQLite online backup)",
            lambda: backup_now(app),
        ),
        OwnerCommand(
            "Search chats…",
            "Find words in every chat; Enter opens the chat at the message",
            lambda: search_chats(app),
        ),
        OwnerCommand(
            "Import chats…",
            "Eva's chat export, ChatGPT's conversations.json or a "
            "SillyTavern .jsonl: a preview first, then all or nothing",
            lambda: import_chats(app),
        ),
        OwnerCommand(
            "Draft memories from imported chats…",
            "20 imported messages at a time; you keep, edit or drop each draft",
            lambda: review_imported(app),
        ),
        OwnerCommand(
            "Export chats (JSON Lines, without private)",
            "Into the data dir's exports/; messages written where private memory "
            "was visible are left out",
            lambda: export_chats(app, "jsonl", False),
        ),
        OwnerCommand(
            "Export chats with private (JSON Lines)",
            "Into the data dir's exports/, mode 0600",
            lambda: export_chats(app, "jsonl", True),
        ),
        OwnerCommand(
            "Export chats with private (Markdown)",
            "Into the data dir's exports/, mode 0600, for reading",
            lambda: export_chats(app, "md", True),
        ),
    ]
