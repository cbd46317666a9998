"""Modal dialogs: look at a record, edit it, confirm forgetting it, confirm a choice.

Every dialog fits 80×24 (issue 16): its body scrolls, its buttons keep their labels, and its own
footer shows the dialog's keys."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Select, Static, TextArea

from core.store.records import Kind, Record
from eva_tui import strings as S
from eva_tui.widgets.fmt import ago, in_time
from eva_tui.widgets.inputs import EvaInput, EvaTextArea

KIND_OPTIONS = [(k.value, k.value) for k in Kind]
# a dialog cuts off the app's keys: `?` (the same binding id, so a keymap moves it too) is here
HELP = Binding("f1,question_mark", "app.help", S.HELP_KEY_DESC, show=False, id="app.help")
IMPORTANCE_OPTIONS = [
    (f"{i} — {w}", i)
    for i, w in ((1, "trivia"), (2, "minor"), (3, "normal"), (4, "important"), (5, "essential"))
]
ResultT = TypeVar("ResultT")  # what a dialog built on SaveOrCancel returns


def scope_field(scopes: list[tuple[str, str]], value: str) -> Horizontal:
    """The "scope" row of every dialog that places memories in a scope (adding, moving,
    drafting, clearing): its label and the scopes to choose from, as ``#scope``."""
    return Horizontal(
        Label("scope", classes="field-label"),
        Select(scopes, value=value, allow_blank=False, compact=True, id="scope"),
        classes="fields",
    )


def record_text(r: Record, now: float, archived: Any = None) -> Text:
    t = Text()
    f = S.RECORD_FIELDS

    def row(k: str, v: str) -> None:
        t.append(f"{f[k]:>14}  ", style="dim")
        t.append(f"{v}\n")

    row("kind", r.kind.value)
    row("importance", str(r.importance))
    row("private", S.YES if r.private else S.NO)
    row("pinned", S.YES if r.pinned else S.NO)
    row("scope", r.scope)
    if r.due_on:  # §8.11: the day it points to, near the top (an 80×24 dialog scrolls)
        on = date.fromisoformat(r.due_on)
        days = (on - datetime.fromtimestamp(now).date()).days
        quiet = (
            datetime.fromtimestamp(r.remind_after).strftime("%a %d %b")
            if r.remind_after is not None and r.remind_after > now
            else None
        )
        row("due", S.due_text(on.strftime("%a %d %b %Y"), r.due_every, r.remind_state, quiet, days))
    row("created", ago(r.created_at, now))
    row("updated", ago(r.updated_at, now))
    row("recalled", ago(r.last_access_at, now))
    row("reinforced", f"{r.access_count}×")
    row("source", r.source.value + (f" (turn {r.source_turn[:8]})" if r.source_turn else ""))
    row("vector", r.vector_model or "none")
    if archived is not None:
        row("by", archived.archived_by)
        row("why", archived.why)
        row("when", ago(archived.archived_at, now))
        row("purge", in_time(archived.purge_at, now))
    t.append("\n")
    t.append(r.content)
    return t


class SaveOrCancel(ModalScreen[ResultT]):
    """An editing dialog whose buttons are Save (``#save``) and Cancel: Save saves and any
    other button cancels, as the dialog's own keys do. Cancelling dismisses it with nothing; a
    dialog that asks first (:class:`EditRecord`, after a long edit) says so in its own
    ``action_cancel``."""

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def action_save(self) -> None:
        raise NotImplementedError

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A yes/no question; returns True for yes. Enter or y says yes; Esc or n says no."""

    HELP_NAME = "a question"
    BINDINGS = [
        Binding("y", "answer(True)", S.YES_KEY, id="confirm.yes"),
        Binding("escape,n", "answer(False)", S.NO_KEY, id="confirm.no"),
        HELP,
    ]

    def __init__(self, title: str, text: str, yes: str, no: str, danger: bool = False) -> None:
        super().__init__(classes="modal")
        self.title_text, self.text, self.yes, self.no = title, text, yes, no
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body"):
                yield Static(self.text, markup=False, classes="record-text")
            with Horizontal(classes="buttons"):
                yield Button(self.yes, id="yes", variant="error" if self.danger else "primary")
                yield Button(self.no, id="no")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe answer is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


# act(what, record, shown): run "private" or "pin" on the record; call shown(new record) after.
Act = Callable[[str, Record, Callable[[Record], None]], None]


class RecordView(ModalScreen[str | None]):
    """One record in full. Returns the action the owner picked (or None). With ``act``,
    toggling private or pinned stays in the view and shows the new state (issue 16)."""

    HELP_NAME = "a memory"
    # actions that keep the view open (with ``act``); done / snooze / dismiss answer the
    # reminder of a memory with a due day (SPEC §8.11)
    STAYS = ("private", "pin", "done", "snooze", "dismiss")
    REMIND = ("done", "snooze", "dismiss")
    BINDINGS = [
        Binding("escape", "dismiss_none", S.BTN_CLOSE, id="record.close"),
        Binding("e", "pick('edit')", S.BTN_EDIT, id="record.edit"),
        Binding("v", "pick('private')", "Private", id="record.private"),
        Binding("p", "pick('pin')", S.BTN_PIN, id="record.pin"),
        Binding("d,delete", "pick('forget')", S.BTN_FORGET, id="record.forget"),
        Binding("c", "pick('copy')", S.BTN_COPY, id="record.copy"),
        Binding("x", "pick('done')", S.BTN_DONE, id="record.done"),
        Binding("z", "pick('snooze')", S.BTN_SNOOZE, id="record.snooze"),
        Binding("n", "pick('dismiss')", S.BTN_DISMISS, id="record.dismiss"),
        HELP,
    ]

    def __init__(
        self, record: Record, now: float, archived: Any = None, act: Act | None = None
    ) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.now = now
        self.archived = archived
        self.act = act

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog"):
            yield Label(S.memory_title(r.id, self.archived is not None), classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(record_text(r, self.now, self.archived), classes="record-text")
            with Horizontal(classes="buttons"):
                if self.archived is not None:
                    yield Button(S.BTN_RESTORE, id="restore", variant="primary")
                else:
                    yield Button(S.BTN_EDIT, id="edit", variant="primary")
                    yield Button(
                        S.BTN_UNMARK_PRIVATE if r.private else S.BTN_MARK_PRIVATE, id="private"
                    )
                    yield Button(S.BTN_UNPIN if r.pinned else S.BTN_PIN, id="pin")
                    yield Button(S.BTN_FORGET, id="forget", variant="error")
                yield Button(S.BTN_COPY, id="copy")
                yield Button(S.BTN_CLOSE, id="close")
            if self.reminds:  # §8.11: the reminder of a memory with a due day
                with Horizontal(classes="buttons remind-buttons"):
                    yield Button(S.BTN_DONE, id="done", variant="primary", compact=True)
                    yield Button(S.BTN_SNOOZE, id="snooze", compact=True)
                    yield Button(S.BTN_DISMISS, id="dismiss", compact=True)
        yield Footer()

    @property
    def reminds(self) -> bool:
        """A live memory with a due day: its reminder can be answered here."""
        return self.archived is None and bool(self.record.due_on) and self.act is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pick" and self.archived is not None:  # an archived record: copy only
            return parameters[:1] == ("copy",)
        if action == "pick" and parameters[:1] and parameters[0] in self.REMIND:
            return self.reminds
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "close":
            self.dismiss(None)
        else:
            self.action_pick(event.button.id or "")

    def action_pick(self, what: str) -> None:
        if self.archived is not None and what not in ("copy", "restore"):
            return
        if what in self.REMIND and not self.reminds:
            return
        if what in self.STAYS and self.act is not None:
            self.act(what, self.record, self.show_record)
            return
        self.dismiss(what)

    def show_record(self, record: Record) -> None:
        """Show the record's new state (after a change made from the view)."""
        if not self.is_attached:
            return
        self.record = record
        self.refresh(recompose=True)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


def changed_chars(old: str, new: str) -> int:
    """How many characters an edit inserted or deleted (0: the same text)."""
    if old == new:
        return 0
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    same = sum(b.size for b in sm.get_matching_blocks())
    return len(old) + len(new) - 2 * same


class EditRecord(SaveOrCancel[dict | None]):
    """Edit content, kind and importance. Returns the changed fields (or None). A live counter
    shows the length against the limit; an error goes away as soon as the text changes; Esc
    asks before it throws away an edit of ``LONG_EDIT`` characters or more (issue 16)."""

    HELP_NAME = "the edit dialog"
    LONG_EDIT = 20
    BINDINGS = [
        Binding("escape", "cancel", S.BTN_CANCEL, id="edit.cancel"),
        Binding("ctrl+s", "save", S.BTN_SAVE, id="edit.save"),
        HELP,
    ]

    def __init__(self, record: Record, max_chars: int) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.max_chars = max_chars

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog", id="edit-dialog"):
            yield Label(S.edit_title(r.id), classes="dialog-title")
            yield EvaTextArea(r.content, id="content", soft_wrap=True)
            with Horizontal(classes="fields"):
                yield Label(S.RECORD_FIELDS["kind"], classes="field-label")
                yield Select(
                    KIND_OPTIONS, value=r.kind.value, allow_blank=False, id="kind", compact=True
                )
                yield Label(S.RECORD_FIELDS["importance"], classes="field-label")
                yield Select(
                    IMPORTANCE_OPTIONS,
                    value=r.importance,
                    allow_blank=False,
                    id="importance",
                    compact=True,
                )
            with Horizontal(classes="edit-status"):
                yield Label(self._count(r.content), id="edit-count", classes="dim")
                yield Label("", id="edit-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button(S.BTN_SAVE, id="save", variant="primary")
                yield Button(S.BTN_CANCEL, id="cancel")
        yield Footer()

    def _count(self, text: str) -> str:
        return S.char_counter(len(text.strip()), self.max_chars)

    def on_mount(self) -> None:
        self.query_one("#content", EvaTextArea).focus()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        count = self.query_one("#edit-count", Label)
        text = event.text_area.text
        count.update(self._count(text))
        count.set_class(len(text.strip()) > self.max_chars, "error")
        self.query_one("#edit-error", Label).update("")  # a stale error goes

    def action_cancel(self) -> None:
        changed = changed_chars(self.record.content, self.query_one("#content", EvaTextArea).text)
        if changed < self.LONG_EDIT:
            self.dismiss(None)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        self.app.push_screen(
            Confirm(
                S.DISCARD_TITLE,
                S.discard_text(changed),
                S.BTN_DISCARD,
                S.BTN_KEEP_EDITING,
                danger=True,
            ),
            answered,
        )

    def action_save(self) -> None:
        content = self.query_one("#content", EvaTextArea).text.strip()
        if not content:
            self.query_one("#edit-error", Label).update(S.EDIT_EMPTY)
            return
        if len(content) > self.max_chars:
            self.query_one("#edit-error", Label).update(
                S.edit_too_long(len(content), self.max_chars)
            )
            return
        r = self.record
        changes: dict[str, Any] = {}
        if content != r.content:
            changes["content"] = content
        kind = self.query_one("#kind", Select).value
        if kind != r.kind.value:
            changes["kind"] = kind
        imp = self.query_one("#importance", Select).value
        if imp != r.importance:
            changes["importance"] = imp
        self.dismiss(changes)


class ConfirmForget(ModalScreen[str | None]):
    """Forgetting moves the record to the archive; the owner says why. Returns the why."""

    HELP_NAME = "forgetting a memory"
    BINDINGS = [Binding("escape", "cancel", S.BTN_CANCEL, id="forget.cancel"), HELP]

    def __init__(self, record: Record, ttl_days: float) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.ttl_days = ttl_days

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog"):
            yield Label(S.forget_title(r.id), classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(r.content, markup=False, classes="record-text")
            yield Label(S.forget_text(self.ttl_days), classes="dim")
            yield EvaInput(
                value=S.FORGET_WHY_DEFAULT, placeholder=S.FORGET_WHY_PLACEHOLDER, id="why"
            )
            yield Label("", id="forget-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button(S.BTN_FORGET, id="forget", variant="error")
                yield Button(S.BTN_CANCEL, id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#why", EvaInput).focus()

    def on_input_submitted(self, event: EvaInput.Submitted) -> None:
        event.stop()
        self._confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "forget":
            self._confirm()
        else:
            self.action_cancel()

    def _confirm(self) -> None:
        why = self.query_one("#why", EvaInput).value.strip()
        if not why:
            self.query_one("#forget-error", Label).update(S.FORGET_SAY_WHY)
            return
        self.dismiss(why)

    def action_cancel(self) -> None:
        self.dismiss(None)
