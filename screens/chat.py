"""Chat (SPEC §3.1, §7, §8, §9): streamed answers, Esc to stop, regenerate, inline memory notes,
"remembering…" while the memory-writing step runs after a reply, calm notices, "sleeping…" with a
Wake button and a queue of messages that are sent when Eva is free (awake, answer done)."""

from __future__ import annotations

import threading
from collections import deque

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Footer, Label, Markdown

from core.chat import events as turn_events
from core.chat.conversation import StoredMessage
from core.memory.prompt_section import PromptSection
from eva_runtime.config import default_config_path
from eva_tui import strings as S
from eva_tui.messages import TurnFinished, TurnStarted
from eva_tui.widgets import (
    Composer,
    MemoryNote,
    NavBar,
    Notice,
    PaletteCommand,
    SleepBanner,
    StatusBar,
    TurnView,
    UserMessage,
)
from eva_tui.widgets.actions import RecordActions
from eva_tui.widgets.chat import MEMORY_CHANGING_TOOLS, MessageAction
from eva_tui.widgets.coming_up import ReminderAction
from screens.chat_edits import MessageChanged, MessageEdits, add_notes
from screens.chat_scrollback import Scrollback
from screens.chat_search import ChatSearchScreen
from screens.chats import ChatsScreen
from screens.coming_up import ComingUp, ComingUpLoaded, ReminderAnswered
from screens.summary import SummaryPanel, start_summarising

GREETING = S.GREETING


class TurnEventMessage(Message):
    def __init__(self, event: turn_events.TurnEvent) -> None:
        super().__init__()
        self.event = event


class TurnEnded(Message):
    pass


class HistoryLoaded(Message):
    def __init__(
        self,
        messages: list[StoredMessage],
        empty_store: bool = False,
        alternatives: dict[str, list[int]] | None = None,
    ) -> None:
        super().__init__()
        self.messages = messages
        self.empty_store = empty_store
        self.alternatives = alternatives or {}  # turn id → its answers' ids, when several


class WelcomeActions(Horizontal):
    """The first run's buttons (issue 16): one per ``EvaApp.welcome_actions`` entry — the hook
    where "initialize from a description" plugs in. Nothing is shown without an entry."""

    def __init__(self, actions: list) -> None:
        super().__init__(id="welcome-actions")
        self.actions = actions

    def compose(self) -> ComposeResult:
        yield Label(S.WELCOME_ACTIONS_LABEL, classes="dim")
        for i, (label, _callback) in enumerate(self.actions):
            yield Button(label, id=f"welcome-{i}", variant="primary")


class ChatScreen(RecordActions):
    FLUSH_SECONDS = 1 / 15
    # summarising starts this long after a reply, if no turn runs then (issue 12): a turn
    # interrupts the worker, but stopping its model call and re-reading the chat's prefix cost
    # the next reply seconds (bench.summary), so a lively conversation is left alone
    SUMMARY_AFTER_QUIET = 15.0
    BINDINGS = [
        Binding("escape", "stop", "Stop", id="chat.stop"),
        Binding("ctrl+r", "regenerate", "Regenerate", id="chat.regenerate"),
        # Alt+W copies (Emacs's copy): Ctrl+Y is readline's paste in the box (issue 28 item 4)
        Binding("alt+w", "copy_last", "Copy answer", id="chat.copy"),
        # not in the footer (it stays as it was); the README and the palette list them
        Binding("ctrl+n", "new_chat", "New chat", id="chat.new", show=False),
        Binding("ctrl+o", "chats", "Chats", id="chat.chats", show=False),
        Binding("ctrl+t", "summary", "Summary", id="chat.summary", show=False),
        Binding("ctrl+g", "search", "Search chats", id="chat.search", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.queue: deque[tuple[str, UserMessage]] = deque()
        self.busy = False
        self.regenerating = False
        self.cancel: threading.Event | None = None
        self.current: TurnView | None = None
        self.current_user: UserMessage | None = None
        self.section: PromptSection | None = None
        self.waiting_for_wake = False
        self._history_loaded = False
        self._chat_note: Widget | None = None
        self._pending: list[str] = []  # tokens not yet written to the Markdown stream
        self._flush_timer: Timer | None = None
        self._tail: Widget | None = None  # the last widget of the running turn in the log
        self._greeted = False  # the greeting (or the first run's welcome) is in the log
        self._persona_pending = False  # the persona changed during a turn: reload after it
        self.scrollback = Scrollback(self)  # older messages, a search hit (issue 28 item 6)
        self.coming_up = ComingUp(self)  # the "Coming up" card (SPEC §8.11, issue 29)
        self.edits = MessageEdits(self)  # edit, delete, another answer (issue 28 item 5)

    def compose(self) -> ComposeResult:
        yield NavBar("chat")
        yield VerticalScroll(id="log")
        yield SleepBanner()
        yield Composer(
            max_chars=self.services.config.chat.max_message_chars,
            placeholder=S.PROMPT_PLACEHOLDER,
            id="prompt",
        )
        yield StatusBar()
        yield Footer()

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#log", VerticalScroll)

    @property
    def prompt(self) -> Composer:
        return self.query_one("#prompt", Composer)

    def on_screen_resume(self) -> None:
        if self.services.level_changed and self.services.chat_ready:
            self.services.level_changed = False
            self.notify(
                "The detail level changed. Rebuild this chat's summaries for it? "
                "Ctrl+T opens the summary panel; r rebuilds in the background.",
                timeout=12,
            )

    def on_mount(self) -> None:
        self.log_view.anchor()
        self.watch(self.app, "services_version", self._services_changed, init=True)
        self.watch(self.app, "sleeping", self._sleep_changed, init=False)
        self._persona_seen = self.app.persona_version
        self.watch(self.app, "persona_version", self._persona_changed, init=False)
        self.scrollback.watch()
        self.prompt.focus()

    # ------------------------------------------------------------------ services
    @property
    def chat_off(self) -> bool:
        """No chat model and none on its way (missing, failed or not configured)."""
        s = self.services
        return not s.chat_ready and s.model.state not in ("pending", "loading")

    def _greeting(self, empty_store: bool) -> list[Widget]:
        """The greeting, or on an empty store the first run's welcome (issue 16)."""
        if self._greeted:
            return []
        self._greeted = True
        if not empty_store:
            return [TurnView(GREETING)]
        out: list[Widget] = [TurnView(S.welcome(self.services.data_dir))]
        actions = list(getattr(self.app, "welcome_actions", []))
        if actions:
            out.append(WelcomeActions(actions))
        return out

    def _store_empty(self) -> bool:
        memory = self.services.memory
        return memory is not None and memory.count() == 0

    def _services_changed(self, _version: int = 0) -> None:
        s = self.services
        self.refresh_bindings()  # Stop and Regenerate show only when they can run
        if s.chat_ready:
            self.prompt.disabled = False
            self.prompt.placeholder = S.PROMPT_PLACEHOLDER
            if self._chat_note is not None:
                self._chat_note.remove()
                self._chat_note = None
            if not self._history_loaded:
                self._history_loaded = True
                self._load_history()
                # Eva opens (or another persona's chat shows): what is due soon
                self.coming_up.check()
                if s.conversation is not None:  # resume summarising left unfinished last time
                    start_summarising(self.app, s.conversation)
            else:
                self._pump()
            return
        state = s.model.state
        if state in ("pending", "loading"):
            self.prompt.placeholder = S.prompt_loading(str(s.model.name))
        else:
            # chat is off: say why and how to fix it; typing still works and nothing typed is
            # lost (issue 16)
            self.prompt.placeholder = S.PROMPT_OFF_PLACEHOLDER
            if self._chat_note is None and (s.memory is not None or self.app.memory_error):
                self._chat_note = Markdown(
                    S.chat_off(s.model.detail or "no chat model", self._config_path()),
                    classes="chat-off",
                )
                self.log_view.mount_all([*self._greeting(self._store_empty()), self._chat_note])
            if s.memory is not None and self.coming_up.checked_day is None:
                self.coming_up.check()  # what is due soon does not need the chat model

    def _config_path(self):
        return self.services.config.path or default_config_path()

    async def _persona_changed(self, _version: int = 0) -> None:
        """Another persona is active (issue 13): show its conversation."""
        if _version == self._persona_seen:
            return  # the reactive's own initialisation, not a switch
        self._persona_seen = _version
        if self.busy:  # the running turn finishes as it began; then the log is reloaded
            self._persona_pending = True
            return
        await self._reload_conversation()

    async def _reload_conversation(self) -> None:
        """Show the active persona's conversation from the store."""
        self._persona_pending = False
        queued = [UserMessage(text, queued=True) for text, _um in self.queue]
        self.queue = deque((text, um) for (text, _old), um in zip(self.queue, queued, strict=True))
        await self.log_view.remove_children()
        if queued:  # messages typed meanwhile stay, below the conversation loaded above them
            await self.log_view.mount_all(queued)
        self._history_loaded = False
        self._services_changed()

    @work(thread=True, exit_on_error=False, name="loading the conversation", group="history")
    def _load_history(self) -> None:
        conv = self.services.conversation
        if conv is not None:
            messages = self.scrollback.first_page(conv)
            empty = not messages and self._store_empty()
            alternatives = {
                turn: [m.id for m in conv.alternatives(turn)] for turn in conv.alternative_counts()
            }
            self.post_message(HistoryLoaded(messages, empty, alternatives))

    async def on_history_loaded(self, event: HistoryLoaded) -> None:
        pairs = [
            (
                m,
                UserMessage(m.content, message_id=m.id)
                if m.role == "user"
                else TurnView(m.content or S.NO_ANSWER, m.turn_id, m.id),
            )
            for m in event.messages
        ]
        widgets = [w for _, w in pairs] or self._greeting(event.empty_store)
        # ↑/↓ in the box walk this chat's earlier messages of the owner (issue 28 item 1)
        earlier = [m.content for m in event.messages if m.role == "user"]
        # a page of older messages (scrolled up to) goes before what the box already walks
        self.prompt.earlier = (
            earlier + list(self.prompt.earlier) if self.scrollback.paging_older else earlier
        )
        # the greeting and old answers go first; messages typed while loading stay below
        first = self.log_view.children[0] if self.log_view.children else None
        await self.log_view.mount_all(widgets, before=first)
        for m, w in pairs:
            if m.meta.get("edited"):
                w.mark_edited()
            if isinstance(w, TurnView):
                if not m.meta.get("undone"):  # an alternative's writes were rolled back
                    add_notes(w, m)
                ids = event.alternatives.get(m.turn_id, [])
                if m.id in ids:
                    w.show_alternative(ids.index(m.id) + 1, len(ids))
                if m.status == "stopped":
                    w.finish_subtitle(S.STOPPED)
        self.scrollback.loaded(pairs)
        self._pump()

    # ------------------------------------------------------------------ sending
    def on_composer_submitted(self, event: Composer.Submitted) -> None:
        if event.composer.id != "prompt":
            return
        event.stop()
        self.send(event.text)

    def send(self, text: str) -> None:
        """Send what the box holds, once (issue 28 item 1): the box is cleared only when the
        message goes; a message over the limit, or with chat off, stays in the box."""
        text = text.strip()
        if not text:
            return
        limit = self.prompt.max_chars
        if len(text) > limit:
            self.notify(S.too_long(len(text), limit), severity="warning", timeout=10)
            return
        if self.chat_off:  # keep what was typed, say why it cannot go
            self.notify(
                S.chat_off_kept(self.services.model.detail or "no chat model"),
                severity="warning",
                timeout=8,
            )
            return
        self.prompt.value = ""
        self.prompt.remember(text)
        self.coming_up.new_day()  # Eva left open overnight: the day's first message
        self.app.touch()
        waiting = self.busy or self.app.sleeping or not self.services.chat_ready
        um = UserMessage(text, queued=waiting)
        self.log_view.mount(um)
        self.queue.append((text, um))
        self._update_banner()
        self._pump()

    def _pump(self) -> None:
        if self.busy or not self.queue or not self.services.chat_ready:
            return
        text, um = self.queue.popleft()
        self._start(text, um, regenerate=False)

    def _start(self, text: str, um: UserMessage | None, regenerate: bool) -> None:
        self.busy = True
        self.regenerating = regenerate
        self.cancel = threading.Event()
        self.app.post_message(TurnStarted(self.cancel))  # the app owns what is generating
        self.current = None
        if um is None:  # regenerate: the question is the last message of the owner
            asked = self.log_view.query(UserMessage)
            um = asked.last() if asked else None
        self.current_user = um
        self._tail = um
        if um is not None:
            um.thinking()
        self.section = None
        self._turn_worker(text, self.cancel, regenerate)

    @work(thread=True, exit_on_error=False, name="the reply", group="turn")
    def _turn_worker(self, text: str, cancel: threading.Event, regenerate: bool) -> None:
        conv = self.services.conversation
        assert conv is not None
        try:
            ctx = self.services.turn_context()  # the active persona's turn (SPEC §8.6)
            events = conv.regenerate(ctx, cancel) if regenerate else conv.turn(text, ctx, cancel)
            for ev in events:
                self.post_message(TurnEventMessage(ev))
        finally:
            self.post_message(TurnEnded())

    async def _mount_in_turn(self, widget: Widget) -> None:
        """Mount a widget of the running turn right after the turn's last widget, so the answer
        and its notices stay above messages the owner queued meanwhile."""
        tail = self._tail
        if tail is not None and tail in self.log_view.children:
            await self.log_view.mount(widget, after=tail)
        else:
            await self.log_view.mount(widget)
        self._tail = widget

    async def _view(self) -> TurnView:
        if self.current is None:
            self.current = TurnView()
            await self._mount_in_turn(self.current)
        return self.current

    async def _flush(self) -> None:
        """Write the tokens that arrived since the last frame to the answer. Tokens are
        coalesced to at most ``FLUSH_SECONDS`` apart: a reply streaming at 40 tokens/s then
        costs ~15 layouts a second instead of 40, and keystrokes stay responsive."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            await (await self._view()).write(text)

    async def on_turn_event_message(self, message: TurnEventMessage) -> None:
        ev = message.event
        if isinstance(ev, turn_events.Token):
            self._pending.append(ev.text)
            if self._flush_timer is None:
                self._flush_timer = self.set_timer(self.FLUSH_SECONDS, self._flush)
            if self.current_user is not None:
                self.current_user.mark_sent()
            return
        await self._flush()
        if isinstance(ev, turn_events.Sleeping):
            self.waiting_for_wake = True
            if self.current_user is not None:
                self.current_user.waiting()
            self._update_banner()
            return
        if self.waiting_for_wake and not isinstance(ev, turn_events.TurnError):
            self.waiting_for_wake = False
            if self.current_user is not None:
                self.current_user.thinking()
            self._update_banner()
        if self.current_user is not None and not isinstance(
            ev, turn_events.TurnError | turn_events.MemoryUsed
        ):
            self.current_user.mark_sent()
        if isinstance(ev, turn_events.MemoryUsed):
            self.section = ev.section
        elif isinstance(ev, turn_events.ToolFinished):
            view = await self._view()
            view.add_note(ev.name, ev.result.ok, {**ev.result.data})
            if ev.result.ok and ev.name in MEMORY_CHANGING_TOOLS:
                self.app.memory_changed()
        elif isinstance(ev, turn_events.Remembering):
            # the reply is complete; the memory step's ops follow as ToolFinished (SPEC §3.1)
            view = await self._view()
            if not view.text:
                await view.write(S.NO_ANSWER)
            await view.remembering()
        elif isinstance(ev, turn_events.Notice):
            await self._view()  # the notice follows the answer it is about
            await self._mount_in_turn(Notice(ev.text))
        elif isinstance(ev, turn_events.TurnDone):
            view = await self._view()
            view.turn_id = ev.turn_id
            view.message_id = ev.message_id
            if self.current_user is not None:
                self.current_user.message_id = ev.user_message_id
            if self.regenerating:  # the earlier answers are kept: say which one this is
                self.edits.show_alternatives(view)
            if not view.text:  # nothing was streamed (held back, or no answer at all)
                await view.write(ev.text or (S.NO_ANSWER if not ev.stopped else "*(stopped)*"))
            await view.finish(self._subtitle(ev.stopped))
        elif isinstance(ev, turn_events.TurnError):
            if self.current is not None:
                await self.current.finish("error")
            if self.current_user is not None:
                if self.waiting_for_wake:
                    self.current_user.border_subtitle = S.NOT_SENT
                else:
                    self.current_user.mark_sent()
            self.waiting_for_wake = False
            self._update_banner()
            await self._mount_in_turn(Notice(ev.message, error=True))

    def _subtitle(self, stopped: bool) -> str:
        parts = []
        if stopped:
            parts.append(S.STOPPED)
        sec = self.section
        if sec is not None and sec.recalled_ids:
            parts.append("recalled " + " ".join(f"#{i}" for i in sec.recalled_ids))
        return " · ".join(parts)

    async def on_turn_ended(self, _: TurnEnded) -> None:
        await self._flush()
        if self.regenerating:  # its rollback changed the memory
            self.regenerating = False
            self.app.memory_changed()
        self.busy = False
        if self.cancel is not None:
            self.app.post_message(TurnFinished(self.cancel))
        self.cancel = None
        self.current = None
        self.current_user = None
        self._tail = None
        self.waiting_for_wake = False
        self._update_banner()
        if self.SUMMARY_AFTER_QUIET <= 0:
            self._summarise_if_idle()
        else:
            self.set_timer(self.SUMMARY_AFTER_QUIET, self._summarise_if_idle)
        if self._persona_pending:
            await self._reload_conversation()  # it pumps the queue once history is loaded
            return
        self._pump()

    def _summarise_if_idle(self) -> None:
        """Summarise what left the window in the background, unless a turn runs or waits (its
        end schedules this again)."""
        conv = self.services.conversation
        if conv is not None and not self.busy and not self.queue:
            start_summarising(self.app, conv)

    # ------------------------------------------------------------------ chats (issue 12)
    async def action_new_chat(self) -> None:
        conv = self.services.conversation
        if conv is None:
            self.notify("Chats are available once the chat model is loaded.")
            return
        if self.busy:
            self.notify("Eva is still answering; Esc stops her first.")
            return
        conv.new_chat()
        self.notify("Started a new chat. Ctrl+O lists your chats.", timeout=4)
        await self.reload_chat()
        self.coming_up.check()  # a chat starts: what is due soon, unless closed today

    def action_chats(self) -> None:
        async def done(changed: bool | None) -> None:
            if changed:
                await self.reload_chat()

        self.app.push_screen(ChatsScreen(busy=self.busy), done)

    def action_summary(self) -> None:
        self.app.push_screen(SummaryPanel())

    def action_search(self) -> None:
        self.app.push_screen(ChatSearchScreen(), self.scrollback.jump)

    async def reload_chat(self) -> None:
        """Show the conversation's current chat (after a switch, a new chat or a clear)."""
        await self.log_view.remove_children()
        self.queue.clear()
        self._history_loaded = True
        self._load_history()
        conv = self.services.conversation
        if conv is not None:
            self.app.sub_title = conv.chat.label

    # ------------------------------------------------------------------ sleep
    def _sleep_changed(self, _asleep: bool) -> None:
        self._update_banner()

    def _update_banner(self) -> None:
        banner = self.query_one(SleepBanner)
        if self.app.sleeping or self.waiting_for_wake:
            banner.show(len(self.queue) + (1 if self.waiting_for_wake else 0))
        else:
            banner.hide()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "wake":
            event.stop()
            self.app.action_wake()
        elif (event.button.id or "").startswith("welcome-"):
            event.stop()
            actions = list(getattr(self.app, "welcome_actions", []))
            i = int((event.button.id or "").removeprefix("welcome-"))
            if i < len(actions):
                actions[i][1]()

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stop and Regenerate cannot run while chat is off: the footer does not offer them."""
        return not (action in ("stop", "regenerate") and self.chat_off)

    def on_key(self, event: events.Key) -> None:
        """A hidden action's key still answers (chat is off): say why instead of nothing."""
        if not self.chat_off:
            return
        keys = self.services.config.keymap.get("chat.regenerate", "ctrl+r").split(",")
        if event.key in keys:
            event.stop()
            self.notify(
                S.chat_off_kept(self.services.model.detail or "no chat model"), severity="warning"
            )

    def action_stop(self) -> None:
        if self.cancel is not None:
            self.cancel.set()

    async def action_regenerate(self) -> None:
        if self.busy:
            self.notify(S.STILL_ANSWERING)
            return
        if not self.services.chat_ready:
            return
        views = list(self.log_view.query(TurnView))
        last = views[-1] if views else None
        if last is None or last.turn_id is None:
            self.notify(S.NOTHING_TO_REGENERATE)
            return
        # the answer and what follows it (notices) go; its memory writes are rolled back
        after = False
        for child in list(self.log_view.children):
            if child is last:
                after = True
            if after:
                await child.remove()
        self._start("", None, regenerate=True)

    # ------------------------------------------------------------------ messages (issue 28 item 5)
    def on_message_action(self, event: MessageAction) -> None:
        event.stop()
        self.edits.action(event)

    async def on_message_changed(self, event: MessageChanged) -> None:
        await self.edits.changed(event)

    def _last(self, kind: type[Widget]) -> Widget | None:
        found = [w for w in self.log_view.query(kind) if getattr(w, "message_id", None) is not None]
        return found[-1] if found else None

    def action_edit_mine(self) -> None:
        w = self._last(UserMessage)
        if w is None:
            self.notify(S.NOTHING_TO_EDIT)
            return
        w.post_message(MessageAction(w, "edit"))  # type: ignore[arg-type]

    def action_edit_answer(self) -> None:
        w = self._last(TurnView)
        if w is None:
            self.notify(S.NOTHING_TO_EDIT)
            return
        w.post_message(MessageAction(w, "edit"))  # type: ignore[arg-type]

    def action_copy_last(self) -> None:
        views = [v for v in self.log_view.query(TurnView) if v.turn_id]
        if not views:
            self.notify(S.NO_ANSWER_TO_COPY)
            return
        self.app.copy_text(views[-1].text, S.THE_ANSWER)

    # ------------------------------------------------------------------ coming up (§8.11)
    async def on_coming_up_loaded(self, event: ComingUpLoaded) -> None:
        await self.coming_up.loaded(event)

    async def on_reminder_action(self, event: ReminderAction) -> None:
        event.stop()
        await self.coming_up.action(event)

    async def on_reminder_answered(self, event: ReminderAnswered) -> None:
        await self.coming_up.answered(event)

    def on_memory_note_open(self, event: MemoryNote.Open) -> None:
        event.stop()
        self.open_record(event.record_id, event.archived)

    def commands(self) -> list[PaletteCommand]:
        cmds = [PaletteCommand(*S.CMD_COPY_ANSWER, self.action_copy_last)]
        if not self.chat_off:
            cmds[:0] = [
                PaletteCommand(*S.CMD_STOP, self.action_stop),
                PaletteCommand(*S.CMD_REGENERATE, self.action_regenerate),
            ]
        cmds += [
            PaletteCommand(*S.CMD_NEW_CHAT, self.action_new_chat),
            PaletteCommand(*S.CMD_CHATS, self.action_chats),
            PaletteCommand(*S.CMD_SUMMARY, self.action_summary),
            PaletteCommand(*S.CMD_SEARCH_CHATS, self.action_search),
            PaletteCommand(*S.CMD_EDIT_MINE, self.action_edit_mine),
            PaletteCommand(*S.CMD_EDIT_ANSWER, self.action_edit_answer),
        ]
        return cmds
