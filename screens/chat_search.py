"""Search every chat (issue 28 item 6, SPEC §8.12): the owner types, the hits list as she types
(the chat, the day, who spoke, the words around the match), the highlighted hit shows its
context, and Enter opens the chat at that message.

A trusted-surface read: the TUI is always the owner's private channel (SPEC §1), so every
message is searched. The search runs in a thread worker (:meth:`core.chat.transcript.Transcript.search`,
FTS5: a few milliseconds over 10,000 messages, bench/chat_search.py); the screen never blocks.
It dismisses with ``(chat_id, message_id)`` or None."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from core.chat.search import MARK_END, MARK_START, SearchHit
from core.chat.transcript import StoredMessage, Transcript
from eva_tui.widgets import EvaInput, clip
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.modals import HELP

CONTEXT = 2  # messages shown before and after the highlighted hit


class HitsFound(Message):
    def __init__(self, query: str, hits: list[SearchHit]) -> None:
        super().__init__()
        self.query = query
        self.hits = hits


class ContextLoaded(Message):
    def __init__(self, hit: SearchHit, messages: list[StoredMessage]) -> None:
        super().__init__()
        self.hit = hit
        self.messages = messages


def day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def marked(snippet: str, style: str = "bold reverse") -> Text:
    """A snippet with its matched words styled (the markers come from the core)."""
    out = Text()
    for k, part in enumerate(snippet.split(MARK_START)):
        if k == 0:
            out.append(part)
            continue
        word, _, rest = part.partition(MARK_END)
        out.append(word, style=style)
        out.append(rest)
    return out


def hit_prompt(hit: SearchHit, width: int = 70) -> Text:
    who = "You" if hit.role == "user" else "Eva"
    head = Text(f"{clip(hit.chat_label, 36)} · {day(hit.created_at)} · {who}", style="dim")
    body = marked(" ".join(hit.snippet.split()))
    body.truncate(width * 2, overflow="ellipsis")
    return Text.assemble(head, "\n", body)


class ChatSearchScreen(ModalScreen[tuple[int, int] | None]):
    BINDINGS = [
        HELP,
        Binding("escape", "close", "Close", id="search.close"),
        Binding("down", "results", "Results", show=False, id="search.results"),
        Binding("ctrl+l", "query", "Query", show=False, id="search.query"),
    ]
    DEFAULT_CSS = """
    ChatSearchScreen .search-dialog { height: 90%; max-width: 110; }
    ChatSearchScreen #search-hits { height: 1fr; min-height: 4; }
    ChatSearchScreen #search-context { height: auto; max-height: 9; border-top: solid $primary;
        padding: 0 1; }
    ChatSearchScreen #search-info { height: 1; }
    """

    def __init__(self, query: str = "") -> None:
        super().__init__(classes="modal")
        self.initial = query
        self.hits: list[SearchHit] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog search-dialog"):
            yield Label("Search chats", classes="dialog-title")
            yield EvaInput(
                value=self.initial,
                id="search-query",
                placeholder="words to find, in any chat (Russian or English, any case)",
            )
            yield OptionList(id="search-hits")
            yield Static("", id="search-context", markup=False)
            yield Static("", id="search-info", markup=False, classes="dim")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#search-query", EvaInput).focus()
        self._say(
            "Type to search every chat. ↓ moves to the results, Enter opens the chat "
            "at the message, Esc closes."
        )
        if self.initial.strip():
            self._search_for(self.initial)

    # ------------------------------------------------------------------ searching
    def _say(self, text: str) -> None:
        self.query_one("#search-info", Static).update(text)

    @on(Input.Changed, "#search-query")
    def _on_query_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value.strip():
            self._search_for(event.value)
        else:
            self.post_message(HitsFound("", []))

    @on(Input.Submitted, "#search-query")
    def _on_query_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        hits = self.query_one("#search-hits", OptionList)
        if self.hits:
            self._open_hit(self.hits[hits.highlighted or 0])

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="chat-search",
        name="searching the chats",
    )
    def _search_for(self, query: str) -> None:
        memory = eva_app(self).services.memory
        if memory is None:
            return
        self.post_message(HitsFound(query, memory.attach(Transcript).search(query)))

    def on_hits_found(self, event: HitsFound) -> None:
        if event.query != self.query_one("#search-query", EvaInput).value:
            return  # typed on meanwhile: a newer search follows
        self.hits = event.hits
        hits = self.query_one("#search-hits", OptionList)
        hits.clear_options()
        width = max(30, self.size.width - 12)
        hits.add_options([Option(hit_prompt(h, width), id=str(h.message_id)) for h in self.hits])
        if self.hits:
            hits.highlighted = 0
        n = len(self.hits)
        if not event.query.strip():
            self._say("Type to search every chat.")
            self.query_one("#search-context", Static).update("")
        elif not n:
            self._say("Nothing found. Other words, or fewer of them?")
            self.query_one("#search-context", Static).update("")
        else:
            self._say(
                f"{n}{'+' if n >= 50 else ''} hit{'s' if n != 1 else ''} · Enter opens "
                "the chat at the message · Esc closes"
            )

    # ------------------------------------------------------------------ context
    @on(OptionList.OptionHighlighted, "#search-hits")
    def _on_hit_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option_index is not None and event.option_index < len(self.hits):
            self._load_context(self.hits[event.option_index])

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="chat-search-context",
        name="reading a hit's context",
    )
    def _load_context(self, hit: SearchHit) -> None:
        memory = eva_app(self).services.memory
        assert memory is not None, "a hit was found in the open memory"
        tr = memory.attach(Transcript)
        before = tr.page(hit.chat_id, before=hit.message_id, limit=CONTEXT)
        this = tr.message(hit.message_id)
        after = tr.page(hit.chat_id, after=hit.message_id, limit=CONTEXT)
        self.post_message(ContextLoaded(hit, [*before, *([this] if this else []), *after]))

    def on_context_loaded(self, event: ContextLoaded) -> None:
        out = Text()
        width = max(30, self.size.width - 16)
        for m in event.messages:
            who = "You" if m.role == "user" else "Eva"
            line = " ".join(m.content.split())
            line = line if len(line) <= width else line[: width - 1] + "…"
            style = "bold" if m.id == event.hit.message_id else "dim"
            out.append(f"{who}: ", style=style)
            out.append(line + "\n", style=style)
        out.rstrip()
        self.query_one("#search-context", Static).update(out)

    # ------------------------------------------------------------------ actions
    @on(OptionList.OptionSelected, "#search-hits")
    def _on_hit_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_index < len(self.hits):
            self._open_hit(self.hits[event.option_index])

    def _open_hit(self, hit: SearchHit) -> None:
        self.dismiss((hit.chat_id, hit.message_id))

    def action_results(self) -> None:
        hits = self.query_one("#search-hits", OptionList)
        if self.hits and not hits.has_focus:
            hits.focus()

    def action_query(self) -> None:
        self.query_one("#search-query", EvaInput).focus()

    def action_close(self) -> None:
        self.dismiss(None)
