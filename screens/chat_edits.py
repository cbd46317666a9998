"""The owner's changes to a chat's messages (issue 28 item 5; SPEC §8.12): edit or delete a
message of either side, and walk a regenerated turn's answers (‹ 2/3 ›) to choose another.

A helper of :class:`screens.chat.ChatScreen`, kept apart from it like
:mod:`screens.chat_scrollback`: the screen hands it each ``MessageAction`` (:meth:`action`) and
each ``MessageChanged`` its workers post (:meth:`changed`). The store changes in thread workers
(:meth:`core.chat.conversation.Conversation.edit_message`, ``delete_message``,
``choose_alternative``); the widgets change on the event loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message
from textual.widget import Widget

from core.chat.transcript import StoredMessage
from core.errors import MemoryOpError
from eva_tui import strings as S
from eva_tui.widgets import TurnView, UserMessage
from eva_tui.widgets.chat import MessageAction
from eva_tui.widgets.modals import Confirm
from screens.message_dialogs import EditMessage

if TYPE_CHECKING:
    from screens.chat import ChatScreen


class MessageChanged(Message):
    """A message was edited, deleted, or another answer chosen (from a worker)."""

    def __init__(
        self,
        widget: Widget,
        action: str,
        stored: StoredMessage | None = None,
        alternatives: list[StoredMessage] | None = None,
        kept: list[int] | None = None,
        error: str | None = None,
    ) -> None:
        super().__init__()
        self.widget = widget
        self.action = action
        self.stored = stored
        self.alternatives = alternatives or []
        self.kept = kept or []
        self.error = error


def add_notes(view: TurnView, m: StoredMessage) -> None:
    """The inline memory notes of a stored answer: what its turn's memory tools did."""
    for op in m.meta.get("ops", []):
        data = {k: v for k, v in op.items() if k not in ("tool", "ok")}
        view.add_note(op.get("tool", ""), bool(op.get("ok")), data)


class MessageEdits:
    def __init__(self, screen: ChatScreen) -> None:
        self.screen = screen

    def action(self, event: MessageAction) -> None:
        screen = self.screen
        widget = event.widget
        if screen.busy:
            screen.notify(S.STILL_ANSWERING)
            return
        if screen.services.conversation is None:
            return
        if widget.message_id is None:
            screen.notify(S.MESSAGE_NOT_STORED)
            return
        if event.action == "edit":
            self._edit(widget)
        elif event.action == "delete":
            self._delete(widget)
        elif event.action in ("previous", "next") and isinstance(widget, TurnView):
            if widget.alternative is None or widget.turn_id is None:
                screen.notify(S.NO_OTHER_ANSWER)
                return
            index, count = widget.alternative
            target = index - 1 if event.action == "previous" else index + 1
            if not 1 <= target <= count:
                screen.notify(S.FIRST_ANSWER if target < 1 else S.LAST_ANSWER)
                return
            self._choose(widget, widget.turn_id, target)

    def _edit(self, widget: UserMessage | TurnView) -> None:
        def done(text: str | None) -> None:
            if text is not None:
                self._change(widget, "edit", text)

        mine = isinstance(widget, UserMessage)
        self.screen.app.push_screen(
            EditMessage(widget.text, mine, self.screen.prompt.max_chars), done
        )

    def _delete(self, widget: UserMessage | TurnView) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self._change(widget, "delete")

        self.screen.app.push_screen(
            Confirm(
                S.DELETE_MESSAGE_TITLE,
                S.delete_message_text(widget.text),
                S.BTN_DELETE,
                S.BTN_CANCEL,
                danger=True,
            ),
            done,
        )

    # ------------------------------------------------------------------ workers
    def _change(self, widget: UserMessage | TurnView, action: str, text: str = "") -> None:
        self.screen.run_worker(
            lambda: self._change_store(widget, action, text),
            thread=True,
            exit_on_error=False,
            name="changing a message",
            group="message",
        )

    def _change_store(self, widget: UserMessage | TurnView, action: str, text: str) -> None:
        conv = self.screen.services.conversation
        assert conv is not None and widget.message_id is not None
        post = self.screen.post_message
        try:
            if action == "edit":
                stored = conv.edit_message(widget.message_id, text)
                post(MessageChanged(widget, action, stored))
            else:
                conv.delete_message(widget.message_id)
                post(MessageChanged(widget, action))
        except MemoryOpError as e:
            post(MessageChanged(widget, action, error=str(e)))

    def _choose(self, view: TurnView, turn_id: str, target: int) -> None:
        self.screen.run_worker(
            lambda: self._choose_store(view, turn_id, target),
            thread=True,
            exit_on_error=False,
            name="choosing an answer",
            group="message",
        )

    def _choose_store(self, view: TurnView, turn_id: str, target: int) -> None:
        conv = self.screen.services.conversation
        assert conv is not None
        try:
            alts = conv.alternatives(turn_id)
            undone = conv.choose_alternative(turn_id, alts[target - 1].id)
            alts = conv.alternatives(turn_id)
        except (MemoryOpError, IndexError) as e:
            self.screen.post_message(MessageChanged(view, "choose", error=str(e)))
            return
        self.screen.post_message(
            MessageChanged(view, "choose", alternatives=alts, kept=undone.kept)
        )

    def show_alternatives(self, view: TurnView) -> None:
        """Read the turn's answers (a worker) and show which one ``view`` is (‹ 2/3 ›)."""
        self.screen.run_worker(
            lambda: self._read_alternatives(view),
            thread=True,
            exit_on_error=False,
            name="reading the answers",
            group="message",
        )

    def _read_alternatives(self, view: TurnView) -> None:
        conv = self.screen.services.conversation
        if conv is not None and view.turn_id is not None:
            self.screen.post_message(
                MessageChanged(view, "alternatives", alternatives=conv.alternatives(view.turn_id))
            )

    # ------------------------------------------------------------------ on the event loop
    async def changed(self, event: MessageChanged) -> None:
        screen = self.screen
        widget = event.widget
        if event.error:
            screen.notify(event.error, severity="warning")
            return
        if event.action == "edit" and event.stored is not None:
            if isinstance(widget, TurnView):
                await widget.set_text(event.stored.content)
                widget.mark_edited()
            elif isinstance(widget, UserMessage):
                old = widget.text
                widget.set_text(event.stored.content)
                widget.mark_edited()
                screen.prompt.earlier = [
                    event.stored.content if t == old else t for t in screen.prompt.earlier
                ]
            screen.notify(S.MESSAGE_EDITED, timeout=4)
        elif event.action == "delete":
            await widget.remove()
            screen.notify(S.MESSAGE_DELETED, timeout=4)
        elif isinstance(widget, TurnView) and event.alternatives:
            alts = event.alternatives
            chosen = next((i for i, m in enumerate(alts) if m.status != "discarded"), None)
            if chosen is None:
                return
            m = alts[chosen]
            widget.show_alternative(chosen + 1, len(alts))
            if event.action == "choose":
                widget.message_id = m.id
                widget.edited = bool(m.meta.get("edited"))
                widget.clear_notes()
                await widget.set_text(m.content or S.NO_ANSWER)
                if not m.meta.get("undone"):
                    add_notes(widget, m)
                widget.finish_subtitle(S.STOPPED if m.status == "stopped" else "")
                screen.app.memory_changed()  # the replaced answer's writes were rolled back
                kept = ", ".join(f"#{i}" for i in event.kept)
                screen.notify(S.chosen_answer(chosen + 1, len(alts), kept), timeout=6)
