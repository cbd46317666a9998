"""What the owner does to one record, shared by every screen that shows records: open, edit,
toggle private, pin, forget (to the archive), restore, copy. Each store call runs in a thread
worker; a refusal from the core (e.g. the pin limit) becomes a notice through the app's one
worker-failure handler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import work
from textual.message import Message
from textual.worker import get_current_worker

from core.errors import NotFound
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.store.records import Actor, Record
from eva_tui import strings as S
from eva_tui.widgets.base import EvaScreen
from eva_tui.widgets.modals import Confirm, ConfirmForget, EditRecord, RecordView

Shown = Callable[[Record], None]  # told the record's new state after a write


class RecordWritten(Message):
    """A record write succeeded; ``message`` tells the owner what changed; ``then`` (if any)
    gets the record as it is now."""

    def __init__(
        self, message: str | None, record: Record | None = None, then: Shown | None = None
    ) -> None:
        super().__init__()
        self.message = message
        self.record = record
        self.then = then


class RecordFetched(Message):
    """A record was read for the record view (None: it no longer exists)."""

    def __init__(self, record_id: int, record: Record | None, archived: Any = None) -> None:
        super().__init__()
        self.record_id = record_id
        self.record = record
        self.archived = archived


class RecordActions(EvaScreen):
    """Mixin for screens that act on records."""

    # ------------------------------------------------------------------ plumbing
    @work(thread=True, exit_on_error=False, group="record")
    def _write(
        self,
        name: str,
        fn: Callable[[], object],
        message: str | None,
        record_id: int | None = None,
        then: Shown | None = None,
    ) -> None:
        """Run one store call; a refusal fails the worker, named ``name`` in the notice. With
        ``then``, the record is read again and handed to it."""
        get_current_worker().name = name
        fn()
        record = None
        memory = self.services.memory
        if then is not None and record_id is not None and memory is not None:
            record = memory.get(record_id, OWNER_TRUSTED)
        self.post_message(RecordWritten(message, record, then))

    def on_record_written(self, event: RecordWritten) -> None:
        """After a write: refresh every screen, tell the owner."""
        self.app.memory_changed()
        if event.message:
            self.notify(event.message, timeout=4)
        if event.then is not None and event.record is not None:
            event.then(event.record)

    # ------------------------------------------------------------------ open
    def open_record(self, record_id: int, archived: bool = False) -> None:
        """Fetch a record (live or archived) in a worker and show it."""
        memory = self.services.memory
        if memory is not None:
            self._fetch_record(memory, record_id, archived)

    @work(thread=True, exit_on_error=False, group="record")
    def _fetch_record(self, memory: Memory, record_id: int, archived: bool) -> None:
        get_current_worker().name = f"opening memory #{record_id}"
        try:
            rec = memory.get(record_id, OWNER_TRUSTED)
        except NotFound:
            self.post_message(RecordFetched(record_id, None))
            return
        arch = None
        if archived or self._is_archived(record_id):
            arch = next(
                (a for a in memory.archived(OWNER_TRUSTED) if a.record.id == record_id), None
            )
        self.post_message(RecordFetched(record_id, rec, arch))

    def on_record_fetched(self, event: RecordFetched) -> None:
        if event.record is None:
            self.notify(S.memory_gone(event.record_id))
        else:
            self._show_record(event.record, event.archived)

    def _is_archived(self, record_id: int) -> bool:
        memory = self.services.memory
        return memory is not None and any(
            a.record.id == record_id for a in memory.archived(OWNER_TRUSTED)
        )

    def _show_record(self, rec: Record, archived=None) -> None:
        now = self.services.clock.now()
        view = RecordView(rec, now, archived, act=self._act_in_view)
        # the view's record is the one to act on: a toggle in the view changed it
        self.app.push_screen(view, lambda action: self._picked(view.record, action))

    def _act_in_view(self, what: str, rec: Record, shown: Shown) -> None:
        if what == "private":
            self.toggle_private(rec, shown)
        elif what == "pin":
            self.toggle_pin(rec, shown)
        elif what in ("done", "snooze", "dismiss"):
            self.answer_reminder(rec, what, shown)

    def _picked(self, rec: Record, action: str | None) -> None:
        if action == "edit":
            self.edit_record(rec)
        elif action == "private":
            self.toggle_private(rec)
        elif action == "pin":
            self.toggle_pin(rec)
        elif action == "forget":
            self.forget_record(rec)
        elif action == "restore":
            self.restore_record(rec.id)
        elif action == "copy":
            self.app.copy_text(rec.content, f"memory #{rec.id}")

    # ------------------------------------------------------------------ changes
    def edit_record(self, rec: Record) -> None:
        memory = self.services.memory
        if memory is None:
            return

        def edited(changes: dict | None) -> None:
            if not changes:
                return
            self._write(
                f"editing memory #{rec.id}",
                lambda: memory.update(rec.id, OWNER_TRUSTED, actor=Actor.OWNER, **changes),
                S.memory_updated(rec.id),
            )

        self.app.push_screen(EditRecord(rec, memory.config.max_chars), edited)

    def toggle_private(self, rec: Record, then: Shown | None = None) -> None:
        """Mark private, or make public — which asks first (issue 16): a public memory can
        reach other people's turns."""
        memory = self.services.memory
        if memory is None:
            return
        new = not rec.private

        def write(yes: bool | None = True) -> None:
            if not yes:
                return
            self._write(
                f"marking memory #{rec.id} {'private' if new else 'not private'}",
                lambda: memory.set_private(rec.id, new),
                S.memory_private(rec.id, new),
                rec.id,
                then,
            )

        if new:
            write()
            return
        self.app.push_screen(
            Confirm(
                S.make_public_title(rec.id),
                f"{S.MAKE_PUBLIC_TEXT}\n\n{rec.content}",
                S.BTN_MAKE_PUBLIC,
                S.BTN_KEEP_PRIVATE,
                danger=True,
            ),
            write,
        )

    def toggle_pin(self, rec: Record, then: Shown | None = None) -> None:
        memory = self.services.memory
        if memory is None:
            return
        new = not rec.pinned
        self._write(
            f"{'pinning' if new else 'unpinning'} memory #{rec.id}",
            lambda: memory.pin(rec.id, new),
            S.memory_pinned(rec.id, new),
            rec.id,
            then,
        )

    def answer_reminder(self, rec: Record, action: str, then: Shown | None = None) -> None:
        """Done (the words say so), snooze (until tomorrow) or dismiss the reminder of a
        memory with a due day (SPEC §8.11), as ``Memory.remind`` does it."""
        memory = self.services.memory
        if memory is None:
            return
        self._write(
            f"answering the reminder of memory #{rec.id}",
            lambda: memory.remind(rec.id, action),
            S.reminded(action, rec.id),
            rec.id,
            then,
        )

    def forget_record(self, rec: Record) -> None:
        memory = self.services.memory
        if memory is None:
            return

        def confirmed(why: str | None) -> None:
            if not why:
                return
            self._write(
                f"forgetting memory #{rec.id}",
                lambda: memory.forget(rec.id, why, OWNER_TRUSTED, actor=Actor.OWNER),
                S.memory_forgotten(rec.id),
            )

        self.app.push_screen(ConfirmForget(rec, memory.config.archive_ttl_days), confirmed)

    def restore_record(self, record_id: int) -> None:
        memory = self.services.memory
        if memory is None:
            return
        self._write(
            f"restoring memory #{record_id}",
            lambda: memory.restore(record_id, OWNER_TRUSTED),
            S.memory_restored(record_id),
        )
