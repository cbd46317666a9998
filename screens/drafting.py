"""Save from dialogue and initialize from a description (SPEC §8.5, issue 13 items 3–4).

- **Save from dialogue**: the owner selects up to 20 messages of the chat; the model drafts up to
  5 memories (one grammar-forced structured call, :mod:`core.chat.drafts`); each draft can be edited,
  dropped or kept as it is — or the selected text is saved verbatim. What is kept is saved
  pinned with source ``dialogue``, within the pinned cap (20 per scope): when the cap is reached
  the dialog says so and nothing is saved.
- **Initialize from a description**: the owner writes up to 1,000 characters about themselves,
  the model drafts memories, and the owner confirms each one (source ``init``).

The model call runs in a thread worker; the dialogs never block the event loop.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, SelectionList, Static
from textual.widgets.selection_list import Selection

from core.chat import drafts as dr
from core.chat.conversation import StoredMessage
from core.errors import MemoryOpError
from core.learned import use_vectors
from core.llm import ModelError
from core.memory.facade import Memory, SaveResult
from core.store.records import Actor, Source
from eva_tui.widgets import EvaTextArea, clip
from eva_tui.widgets.base import InApp, eva_app
from eva_tui.widgets.modals import HELP, scope_field

KEEP_OPTIONS = [("keep", "keep"), ("drop", "drop")]


class Drafted(Message):
    def __init__(self, drafts: list[dr.Draft] | None, error: str | None = None) -> None:
        super().__init__()
        self.drafts = drafts
        self.error = error


class Saved(Message):
    """The ids a save from dialogue saved, or the one record a confirmed draft became."""

    def __init__(
        self,
        result: list[int] | SaveResult | None,
        error: str | None = None,
        row: int | None = None,
    ) -> None:
        super().__init__()
        self.result = result
        self.error = error
        self.row = row


def _memory(node: InApp) -> Memory:
    """The open memory: these dialogs are offered only once it is (``screens.owner``)."""
    memory = eva_app(node).services.memory
    assert memory is not None, "a drafting dialog opens only once the memory is open"
    return memory


class DraftRow(Horizontal):
    """One draft: its text (editable) and keep / drop."""

    DEFAULT_CSS = """
    DraftRow { height: auto; margin-bottom: 1; }
    DraftRow EvaTextArea { width: 1fr; height: 4; }
    DraftRow Select { width: 14; }
    DraftRow .draft-flags { width: 22; padding: 1 1 0 1; }
    """

    def __init__(self, draft: dr.Draft, index: int) -> None:
        super().__init__(id=f"draft-{index}")
        self.draft = draft
        self.index = index

    def compose(self) -> ComposeResult:
        d = self.draft
        yield EvaTextArea(d.content, soft_wrap=True, classes="draft-text")
        yield Label(
            f"{d.kind} · {d.importance}" + (" · private" if d.private else ""),
            classes="draft-flags dim",
        )
        yield Select(KEEP_OPTIONS, value="keep", allow_blank=False, classes="draft-keep")

    def value(self) -> dict | None:
        """The draft as the owner left it (None: dropped or emptied)."""
        if self.query_one(".draft-keep", Select).value == "drop":
            return None
        content = self.query_one(".draft-text", EvaTextArea).text.strip()
        if not content:
            return None
        d = self.draft
        return {
            "content": content,
            "kind": d.kind,
            "importance": d.importance,
            "private": d.private,
        }


def _label(m: StoredMessage) -> str:
    who = "You" if m.role == "user" else "Eva"
    return f"{who}: {clip(' '.join(m.content.split()), 90)}"


class _DraftingDialog(ModalScreen[list[int] | None]):
    """What both drafting dialogs do with their Draft button: one draft at a time (the button
    says "Drafting…" meanwhile), the model asked in a worker, and the button back as "Draft
    again" when the drafts (or the reason there are none) come. ``ERROR`` is the label that
    says what went wrong."""

    ERROR = "#draft-error"

    def _error(self, text: str) -> None:
        self.query_one(self.ERROR, Label).update(text)

    def _drafting(self) -> bool:
        return str(self.query_one("#draft", Button).label) == "Drafting…"

    def _start_drafting(self, ask: Callable[[], list[dr.Draft]]) -> None:
        self._error("")
        button = self.query_one("#draft", Button)
        button.disabled = True
        button.label = "Drafting…"
        self._draft(ask)

    @work(thread=True, exit_on_error=False, group="drafting", name="drafting memories")
    def _draft(self, ask: Callable[[], list[dr.Draft]]) -> None:
        try:
            self.post_message(Drafted(ask()))
        except (ModelError, MemoryOpError) as e:
            self.post_message(Drafted(None, str(e)))

    def _drafting_done(self) -> None:
        button = self.query_one("#draft", Button)
        button.label = "Draft again"
        button.disabled = False


class SaveFromDialogue(_DraftingDialog):
    """Select messages → drafts → saved pinned (source ``dialogue``). Returns the saved ids."""

    # Ctrl+G drafts ("generate"): Ctrl+D deletes a character in a text field (issue 28 item 4)
    BINDINGS = [
        HELP,
        Binding("escape", "cancel", "Cancel", show=False, id="dialogue.cancel"),
        Binding("ctrl+g", "draft", "Draft", show=False, priority=True, id="dialogue.draft"),
        Binding("ctrl+s", "save", "Save", show=False, priority=True, id="dialogue.save"),
    ]
    DEFAULT_CSS = """
    SaveFromDialogue #messages { height: auto; max-height: 14; }
    SaveFromDialogue #drafts { height: auto; max-height: 20; }
    SaveFromDialogue #scope { width: 40; }
    SaveFromDialogue .error, SaveFromDialogue .dim { width: 100%; }
    """

    def __init__(
        self,
        messages: list[StoredMessage],
        scopes: list[tuple[str, str]],
        scope: str,
        select_all: bool = False,
    ) -> None:
        super().__init__(classes="modal")
        self.messages = messages[-40:]
        self.scopes = scopes
        self.scope = scope
        self.select_all = select_all  # a batch of imported messages (issue 28 item 7)

    def compose(self) -> ComposeResult:
        last_turn = self.messages[-1].turn_id if self.messages else None
        with Vertical(classes="dialog"):
            yield Label("Save from dialogue", classes="dialog-title")
            yield Label("", id="selected-info", classes="dim")
            yield SelectionList[int](
                *[
                    Selection(_label(m), k, self.select_all or m.turn_id == last_turn)
                    for k, m in enumerate(self.messages)
                ],
                id="messages",
            )
            yield VerticalScroll(id="drafts")
            yield scope_field(self.scopes, self.scope)
            yield Label("", id="draft-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Draft memories", id="draft", variant="primary")
                yield Button("Keep the selection verbatim", id="verbatim")
                yield Button("Save pinned", id="save", variant="success", disabled=True)
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._count()
        self.query_one("#messages", SelectionList).focus()

    def selected(self) -> list[StoredMessage]:
        picked = sorted(self.query_one("#messages", SelectionList).selected)
        return [self.messages[k] for k in picked]

    def _count(self) -> None:
        n = len(self.selected())
        over = n > dr.MAX_MESSAGES
        self.query_one("#selected-info", Label).update(
            f"{n} of at most {dr.MAX_MESSAGES} messages selected (Space toggles; Ctrl+G drafts, "
            "Ctrl+S saves)." + (" Too many: unselect some." if over else "")
        )
        self.query_one("#draft", Button).disabled = over or n == 0
        self.query_one("#verbatim", Button).disabled = over or n == 0

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        event.stop()
        self._count()

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "verbatim":
            await self.action_verbatim()
            return
        {"draft": self.action_draft, "save": self.action_save, "cancel": self.action_cancel}[
            event.button.id or "cancel"
        ]()

    # ------------------------------------------------------------------ drafting
    def action_draft(self) -> None:
        model = eva_app(self).services.chat_model
        if self._drafting():
            return
        if model is None:
            self._error("The model is not loaded yet; you can keep the selection verbatim.")
            return
        pairs = [(m.role, m.content) for m in self.selected()]
        memory = _memory(self)
        max_chars, embed = memory.config.max_chars, use_vectors(memory.embedder)
        self._start_drafting(lambda: dr.draft_from_dialogue(model, pairs, max_chars, embed=embed))

    async def on_drafted(self, event: Drafted) -> None:
        self._drafting_done()
        if event.error:
            self._error(f"Drafting failed: {event.error}. You can keep the selection verbatim.")
            return
        if not event.drafts:
            self._error("The model drafted nothing to keep; you can keep the selection verbatim.")
            return
        await self._show(event.drafts)

    async def _show(self, drafts: list[dr.Draft]) -> None:
        box = self.query_one("#drafts", VerticalScroll)
        await box.remove_children()
        await box.mount_all([DraftRow(d, k) for k, d in enumerate(drafts[: dr.MAX_DRAFTS])])
        self.query_one("#save", Button).disabled = False
        self.query_one("#save", Button).focus()  # Enter saves; Shift+Tab goes to the drafts

    async def action_verbatim(self) -> None:
        """The owner's own words of the selection as one draft (Eva's replies left out unless
        only hers are selected), cut to the record limit."""
        msgs = self.selected()
        mine = [m.content.strip() for m in msgs if m.role == "user"] or [
            m.content.strip() for m in msgs
        ]
        max_chars = _memory(self).config.max_chars
        text = " ".join(" ".join(mine).split())[:max_chars].strip()
        if text:
            self._error("")
            await self._show([dr.Draft(text, "fact", 4, False)])

    # ------------------------------------------------------------------ saving
    def action_save(self) -> None:
        if not self.query(DraftRow):
            self._error("Draft first (Ctrl+G), or keep the selection verbatim.")
            return
        if self.query_one("#save", Button).disabled:
            return  # saving already
        items = [v for row in self.query(DraftRow) if (v := row.value()) is not None]
        if not items:
            self._error("Every draft is dropped: nothing to save.")
            return
        scope = str(self.query_one("#scope", Select).value)
        memory = _memory(self)
        self.query_one("#save", Button).disabled = True
        self._save(memory, items, scope)

    @work(thread=True, exit_on_error=False, group="drafting", name="saving memories")
    def _save(self, memory, items, scope) -> None:
        try:
            self.post_message(Saved(memory.save_pinned(items, scope, Source.DIALOGUE)))
        except MemoryOpError as e:
            self.post_message(Saved(None, str(e)))

    def on_saved(self, event: Saved) -> None:
        if event.error:
            self.query_one("#save", Button).disabled = False
            self._error(f"Nothing was saved: {event.error}.")
            return
        assert isinstance(event.result, list)  # save_pinned's ids
        self.dismiss(list(event.result))

    def action_cancel(self) -> None:
        self.dismiss(None)


class InitFromDescription(_DraftingDialog):
    """Write about yourself → drafts → confirm each (source ``init``). Returns saved ids."""

    BINDINGS = [
        HELP,
        Binding("escape", "close", "Close", show=False, id="init.close"),
        Binding("ctrl+g", "draft", "Draft", show=False, priority=True, id="init.draft"),
    ]
    DEFAULT_CSS = """
    InitFromDescription #description { height: 7; }
    InitFromDescription #init-drafts { height: auto; max-height: 18; }
    InitFromDescription .init-row { height: auto; margin-bottom: 1; }
    InitFromDescription .init-row Static { width: 1fr; padding: 1 1 0 0; }
    InitFromDescription .init-row Button { margin-left: 1; }
    InitFromDescription #scope { width: 40; }
    InitFromDescription .error, InitFromDescription .dim { width: 100%; }
    """
    ERROR = "#init-error"

    def __init__(self, scopes: list[tuple[str, str]], scope: str) -> None:
        super().__init__(classes="modal")
        self.scopes = scopes
        self.scope = scope
        self.drafts: list[dr.Draft] = []
        self.saved: list[int] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Tell Eva about yourself", classes="dialog-title")
            yield Label(
                "Up to 1,000 characters: who you are, the people around you, what you "
                "like, how Eva should talk to you. Eva drafts memories (Ctrl+G); you "
                "confirm each one.",
                classes="dim",
            )
            yield EvaTextArea("", id="description", soft_wrap=True)
            yield Label("0 / 1000", id="description-count", classes="dim")
            yield VerticalScroll(id="init-drafts")
            yield scope_field(self.scopes, self.scope)
            yield Label("", id="init-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Draft memories", id="draft", variant="primary")
                yield Button("Done", id="close")

    def on_mount(self) -> None:
        self.query_one("#description", EvaTextArea).focus()

    def on_text_area_changed(self, event: EvaTextArea.Changed) -> None:
        if event.text_area.id != "description":
            return
        n = len(event.text_area.text.strip())
        over = n > dr.MAX_DESCRIPTION
        self.query_one("#description-count", Label).update(
            f"{n} / {dr.MAX_DESCRIPTION}" + (" — too long" if over else "")
        )
        self.query_one("#draft", Button).disabled = over

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        bid = event.button.id or ""
        if bid == "draft":
            self.action_draft()
        elif bid == "close":
            self.action_close()
        elif bid.startswith("save-") or bid.startswith("skip-"):
            self._decide(int(bid.split("-")[1]), bid.startswith("save-"))

    def action_draft(self) -> None:
        model = eva_app(self).services.chat_model
        if self._drafting():
            return
        text = self.query_one("#description", EvaTextArea).text
        try:
            text = dr.check_description(text)
        except MemoryOpError as e:
            self._error(str(e).capitalize() + ".")
            return
        if model is None:
            self._error("The model is not loaded yet; try again in a moment.")
            return
        memory = _memory(self)
        max_chars, embed = memory.config.max_chars, use_vectors(memory.embedder)
        self._start_drafting(lambda: dr.draft_from_description(model, text, max_chars, embed=embed))

    async def on_drafted(self, event: Drafted) -> None:
        self._drafting_done()
        if event.error or not event.drafts:
            self._error(
                f"Drafting failed: {event.error}."
                if event.error
                else "The model drafted nothing; try saying more."
            )
            return
        self.drafts = event.drafts
        box = self.query_one("#init-drafts", VerticalScroll)
        await box.remove_children()
        rows = []
        for k, d in enumerate(event.drafts):
            flags = f"{d.kind} · importance {d.importance}" + (" · private" if d.private else "")
            row = Horizontal(
                Static(f"{d.content}\n[{flags}]", markup=False, id=f"init-text-{k}"),
                Button("Save", id=f"save-{k}", variant="success"),
                Button("Skip", id=f"skip-{k}"),
                classes="init-row",
                id=f"init-row-{k}",
            )
            rows.append(row)
        await box.mount_all(rows)
        self.call_after_refresh(self._focus_next, -1)  # Enter saves, Tab goes to Skip

    def _decide(self, k: int, save: bool) -> None:
        for b in (f"#save-{k}", f"#skip-{k}"):
            self.query_one(b, Button).disabled = True
        self._focus_next(k)
        text = self.query_one(f"#init-text-{k}", Static)
        d = self.drafts[k]
        if not save:
            text.update(f"(skipped) {d.content}")
            return
        services = eva_app(self).services
        scope = str(self.query_one("#scope", Select).value)
        self._save(services.memory, d, scope, k)

    def _focus_next(self, k: int) -> None:
        """Keyboard use: after a decision the next undecided draft's Save has the focus (the
        Done button after the last)."""
        for j in range(k + 1, len(self.drafts)):
            found = self.query(f"#save-{j}")
            if found and not found.first().disabled:
                found.first().focus()
                return
        self.query_one("#close", Button).focus()

    @work(thread=True, exit_on_error=False, group="drafting", name="saving a memory")
    def _save(self, memory, d: dr.Draft, scope: str, k: int) -> None:
        try:
            res = memory.save(
                d.content,
                memory.owner_in(scope),
                d.kind,
                d.importance,
                d.private,
                scope=scope,
                source=Source.INIT,
                actor=Actor.OWNER,
            )
            self.post_message(Saved(res, row=k))
        except MemoryOpError as e:
            self.post_message(Saved(None, str(e), row=k))

    def on_saved(self, event: Saved) -> None:
        k = event.row if event.row is not None else 0
        text = self.query_one(f"#init-text-{k}", Static)
        d = self.drafts[k]
        if event.error:
            text.update(f"(not saved: {event.error}) {d.content}")
            return
        res = event.result
        assert isinstance(res, SaveResult)  # memory.save's result
        self.saved.append(res.id)
        how = {"created": "saved", "reinforced": "already known", "updated": "updated"}.get(
            res.status, res.status
        )
        text.update(f"✓ #{res.id} {how}: {d.content}")
        eva_app(self).memory_changed()

    def action_close(self) -> None:
        self.dismiss(self.saved)
