"""The chat's history beyond its last 100 messages (issue 28 item 6): older messages load as the
owner scrolls up, and a search hit opens its chat at the message, with the messages before it.

A helper of :class:`screens.chat.ChatScreen`, kept apart from it: the screen calls
:meth:`Scrollback.first_page` to load a chat, :meth:`Scrollback.loaded` once the messages are on
screen (its ``HistoryLoaded`` path builds their widgets, the same for every page), and
:meth:`Scrollback.jump` with a search result. Reading runs in thread workers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.chat.transcript import StoredMessage, Transcript

if TYPE_CHECKING:
    from screens.chat import ChatScreen

PAGE = 100  # messages a chat opens with, and loads per step as the owner scrolls up
CONTEXT = 10  # messages shown before a search hit
JUMP_MOST = 500  # messages a chat opened at a hit shows at most (the hit to the chat's end)
HIT_CLASS = "search-hit"


class Scrollback:
    def __init__(self, screen: ChatScreen) -> None:
        self.screen = screen
        self.chat_id: int | None = None
        self.oldest: int | None = None  # the first message id on screen
        self.more = False  # older messages than ``oldest`` exist
        self.loading = False
        self.anchor: tuple[int, int] | None = None  # (chat, message) to open at
        self._keep: Any = None  # the widget that stays in view while a page is added above
        self._older = False  # the next HistoryLoaded is a page of older messages
        self._watching = False

    @property
    def paging_older(self) -> bool:
        """The load being shown is a page of older messages (not the chat's first page)."""
        return self._older

    def _transcript(self) -> Transcript | None:
        memory = self.screen.services.memory
        return memory.attach(Transcript) if memory is not None else None

    # ------------------------------------------------------------------ loading
    def watch(self) -> None:
        """Follow the log's scroll position: at the top, older messages load."""
        if not self._watching:
            self._watching = True
            self.screen.watch(self.screen.log_view, "scroll_y", self._scrolled, init=False)

    def first_page(self, conv: Any) -> list[StoredMessage]:
        """The messages a chat opens with (in the screen's loading worker): its last
        :data:`PAGE`, or, opened at a search hit, :data:`CONTEXT` before the hit and what
        follows it (at least a page)."""
        self.chat_id = conv.chat_id
        self._older = False
        self._keep = None
        anchor, tr = self.anchor, self._transcript()
        if anchor is not None and anchor[0] == conv.chat_id and tr is not None:
            messages, _more_after = tr.around(conv.chat_id, anchor[1], CONTEXT, JUMP_MOST)
            if messages and len(messages) < PAGE:
                messages = (
                    tr.page(conv.chat_id, before=messages[0].id, limit=PAGE - len(messages))
                    + messages
                )
        else:
            self.anchor = None
            messages = conv.history(limit=PAGE)
        self.oldest = messages[0].id if messages else None
        self.more = (
            bool(messages)
            and tr is not None
            and bool(tr.page(conv.chat_id, before=messages[0].id, limit=1))
        )
        return messages

    def loaded(self, pairs: list[tuple[StoredMessage, Any]]) -> None:
        """The messages of a load are on screen: keep the owner's place (a page added above),
        show the hit (opened from a search), or go to the end."""
        log = self.screen.log_view
        if self._older:
            self._older = False
            self.loading = False
            if pairs:
                self.oldest = pairs[0][0].id
            keep, self._keep = self._keep, None
            if keep is not None and keep.is_attached:
                self.screen.call_after_refresh(log.scroll_to_widget, keep, top=True, animate=False)
            return
        anchor, self.anchor = self.anchor, None
        target = next((w for m, w in pairs if anchor and m.id == anchor[1]), None)
        if target is None:
            log.scroll_end(animate=False)
            return
        target.add_class(HIT_CLASS)
        self.screen.call_after_refresh(log.scroll_to_widget, target, top=True, animate=False)

    def _scrolled(self, y: float) -> None:
        if y <= 0 and self.more and not self.loading and self.oldest is not None:
            self.older()

    def older(self) -> None:
        """Load the page of messages before the first one on screen."""
        tr, chat, before = self._transcript(), self.chat_id, self.oldest
        if tr is None or chat is None or before is None or self.loading:
            return
        from screens.chat import HistoryLoaded

        self.loading = True
        log = self.screen.log_view
        self._keep = log.children[0] if log.children else None

        def read() -> None:
            page = tr.page(chat, before=before, limit=PAGE)
            more = bool(page) and bool(tr.page(chat, before=page[0].id, limit=1))

            def show() -> None:
                self.more = more
                if not page or chat != self.chat_id:
                    self.loading = False
                    return
                self._older = True
                self.screen.post_message(HistoryLoaded(page))

            self.screen.app.call_from_thread(show)

        self.screen.run_worker(
            read,
            thread=True,
            exit_on_error=False,
            group="history-older",
            name="loading older messages",
        )

    # ------------------------------------------------------------------ search hits
    async def jump(self, result: tuple[int, int] | None) -> None:
        """Open the chat of a search hit at the message (the search screen's result)."""
        if result is None:
            return
        screen = self.screen
        conv = screen.services.conversation
        if conv is None:
            screen.notify(
                "Chats open once the chat model is loaded; the search works without it.",
                severity="warning",
            )
            return
        if screen.busy:
            screen.notify(
                "Eva is answering in this chat; wait for her (or Esc to stop her) "
                "before opening another place.",
                severity="warning",
            )
            return
        chat_id, message_id = result
        tr = self._transcript()
        if tr is not None:
            messages, _ = tr.around(chat_id, message_id, CONTEXT, JUMP_MOST)
            if messages and messages[-1].id != _last_id(tr, chat_id):
                screen.notify(
                    f"That message is more than {JUMP_MOST} messages back: open the "
                    "chat and scroll up to it, or read it in the search's context.",
                    severity="warning",
                    timeout=8,
                )
                return
        if chat_id != conv.chat_id:
            try:
                conv.switch_chat(chat_id)
            except ValueError as e:
                screen.notify(str(e).capitalize() + ".", severity="error")
                return
        self.anchor = (chat_id, message_id)
        await screen.reload_chat()


def _last_id(tr: Transcript, chat_id: int) -> int | None:
    last = tr.page(chat_id, limit=1)
    return last[-1].id if last else None
