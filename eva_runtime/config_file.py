"""The config file read and written: :func:`load` reads the TOML file, then applies the ``EVA_``
environment overrides; edits are written back with tomlkit (the owner's comments and layout
kept). The tables and their checks are :mod:`eva_runtime.config`'s.

An environment variable ``EVA_<TABLE>__<KEY>`` overrides one key (``EVA_MEMORY__TOP_K=5``,
``EVA_LLM__MODEL__GENERAL=/models/x.gguf``); its value is read as a TOML value when it parses as
one, else as a string. Any other ``EVA_`` variable that is not one of :data:`OTHER_ENV` is an
error too, with the spelling probably meant (``EVA_MEMORY_TOP_K`` → ``EVA_MEMORY__TOP_K``),
never silently ignored (issue 25).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from core.errors import clip, clip_text
from eva_runtime.config import (
    SECTIONS,
    ConfigError,
    EvaConfig,
    clip_key,
    default_config_path,
    from_mapping,
    known_keys,
)

ENV_PREFIX = "EVA_"


def parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):  # "[[[[…" too deep is text, not a value
        return raw


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
    return ConfigError(f"environment variable {clip_key(name)}: {why}{tail}")


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
            f"environment variable {clip_key(name)} is not a setting; did you mean {hint}?"
        )
    return ConfigError(
        f"environment variable {clip_key(name)} is not a setting; unset it "
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
