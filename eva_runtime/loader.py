"""The one place Eva (the TUI, the CLI, the server) reaches concrete models (``models/``),
imported lazily.

``models`` pulls in llama.cpp and fastembed, which are slow to import and may be absent: nothing
here is imported until a model is actually wanted, and always from a worker thread. Every
failure becomes :class:`ModelUnavailable` whose message says what is missing and how to fix it.
Tests replace the :class:`ModelLoader` with a fake of the same shape.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from core.embedding import Embedder
from core.llm import ChatModel
from core.locality import check_base_url

Progress = Callable[[int, int], None]


class ModelUnavailable(RuntimeError):
    """A model cannot be provided; the message names it and the fix."""


def _missing(name: str, e: ImportError) -> ModelUnavailable:
    return ModelUnavailable(
        f"{name} cannot be imported ({e}); run `make setup` to install Eva's model support"
    )


# Imported inside functions (slow, optional dependencies), but by plain import statements so
# import-linter sees every arrow from here into models/.
def _packaged() -> ModuleType:
    try:
        from models import packaged
    except ImportError as e:
        raise _missing("models.packaged", e) from None
    return packaged


def _llama() -> ModuleType:
    try:
        from models import llama
    except ImportError as e:
        raise _missing("models.llama", e) from None
    return llama


def _openai() -> ModuleType:
    try:
        from models import openai_compat
    except ImportError as e:
        raise _missing("models.openai_compat", e) from None
    return openai_compat


def _embedders() -> ModuleType:
    try:
        from models import embedders
    except ImportError as e:
        raise _missing("models.embedders", e) from None
    return embedders


def packaged_chat_models() -> list[str]:
    """The packaged chat models' names — the list a bad model path's error names too (the
    settings help shows the same, issue 16); empty when ``models`` cannot be imported."""
    try:
        packaged = _packaged()
    except ModelUnavailable:
        return []
    return [n for n, m in packaged.REGISTRY.items() if not isinstance(m, packaged.FastembedDir)]


SERVER_PREFIX = "openai:"  # a model of the [llm] base_url server, whatever the backend
LOCAL_PREFIX = "llama.cpp:"  # a packaged name or GGUF path in-process, whatever the backend


def route(spec: str, backend: str = "llama.cpp") -> tuple[str, str]:
    """(backend, name) of a model spec (issue 31): ``openai:NAME`` is the server's model NAME,
    ``llama.cpp:SPEC`` a packaged model or GGUF run in-process; a bare spec is the configured
    backend's (with ``backend = "openai"``, the server's model names)."""
    if spec.startswith(SERVER_PREFIX):
        return "openai", spec[len(SERVER_PREFIX) :]
    if spec.startswith(LOCAL_PREFIX):
        return "llama.cpp", spec[len(LOCAL_PREFIX) :]
    return backend, spec


def spec_for(backend: str, name: str, configured: str) -> str:
    """The spec that names ``name`` on ``backend`` from a config whose backend is
    ``configured`` (bare when they agree, prefixed when not)."""
    if backend == configured:
        return name
    return (SERVER_PREFIX if backend == "openai" else LOCAL_PREFIX) + name


@dataclass(frozen=True)
class ModelChoice:
    """One entry of the model picker (issue 31 item 3)."""

    spec: str  # what [llm.model] general is set to
    label: str
    source: str  # "packaged" | "local" | "server"
    ready: bool = True  # installed / reachable
    note: str = ""


def gpu_offload() -> bool | None:
    """Whether the installed llama.cpp was built with a GPU backend (CUDA, Metal, Vulkan…);
    None when llama-cpp-python cannot be imported."""
    try:
        import llama_cpp
    except ImportError:
        return None
    try:
        return bool(llama_cpp.llama_supports_gpu_offload())
    except Exception:  # noqa: BLE001 - an old binding without the call
        return None


class ModelLoader:
    """Resolves model specs (packaged names or local paths) and loads them."""

    # ------------------------------------------------------------------ chat models
    def check_chat(self, spec: str | None) -> str | None:
        """None when ``spec`` can be loaded; otherwise what to do (cheap: reads no weights)."""
        if not spec:
            return "no chat model is configured: set [llm.model] general in the config"
        try:
            packaged = _packaged()
        except ModelUnavailable as e:
            return str(e)
        m = packaged.REGISTRY.get(spec)
        if m is not None:
            if packaged.is_installed(spec):
                return None
            return f"chat model {spec!r} is not installed — run `{m.make_target}`"
        if Path(spec).expanduser().is_file():
            return None
        known = ", ".join(n for n in packaged.REGISTRY if n != packaged.MINILM)
        return (
            f"chat model {spec!r} is neither a packaged model ({known}) nor a .gguf file "
            "that exists — fix [llm.model] general in the config"
        )

    def chat_model(
        self,
        spec: str,
        *,
        context_size: int = 8192,
        threads: int | None = None,
        progress: Progress | None = None,
        gpu_layers: int = 0,
        kv_cache_keys: str | None = None,
    ) -> ChatModel:
        problem = self.check_chat(spec)
        if problem:
            raise ModelUnavailable(problem)
        packaged = _packaged()
        llama = _llama()
        try:
            path = packaged.resolve_gguf(spec, progress=progress)
        except packaged.PackagedModelError as e:
            raise ModelUnavailable(str(e)) from None
        kwargs: dict[str, Any] = {"n_ctx": context_size, "name": self.describe(spec)}
        if threads:
            kwargs["n_threads"] = threads
        if gpu_layers:
            kwargs["n_gpu_layers"] = gpu_layers
        if kv_cache_keys:
            kwargs["kv_cache_keys"] = kv_cache_keys
        try:
            return llama.load_chat_model(str(path), **kwargs)
        except Exception as e:  # llama.cpp failures: show the owner, keep the app alive
            raise ModelUnavailable(f"chat model {spec!r} failed to load: {e}") from None

    # ------------------------------------------------------------------ a model server
    def check_server(self, base_url: str | None, allow_remote: bool) -> str | None:
        """None when Eva may talk to this server (no connection is made to decide)."""
        return check_base_url(base_url, allow_remote)

    def server_model(
        self,
        name: str,
        *,
        base_url: str | None,
        allow_remote: bool = False,
        api_key_env: str | None = None,
        context_size: int = 8192,
        probe: bool = True,
    ) -> ChatModel:
        """The server's model ``name`` (issue 31). Refused before any connection when the
        server is not on this machine and ``allow_remote`` is off; with ``probe``, the server
        must answer ``GET /v1/models``."""
        problem = self.check_server(base_url, allow_remote)
        if problem:
            raise ModelUnavailable(problem)
        oc = _openai()
        key = oc.api_key_from(api_key_env)
        if api_key_env and key is None:
            raise ModelUnavailable(
                f"[llm] api_key_env names {api_key_env}, which is not set in the environment"
            )
        assert base_url is not None
        model = oc.OpenAICompatModel(
            base_url, name, api_key=key, context_size=context_size, allow_remote=allow_remote
        )
        if probe:
            try:
                model.list_models()
            except Exception as e:
                raise ModelUnavailable(f"{e} — start the server or fix [llm] base_url") from None
        return model

    def server_models(
        self, base_url: str | None, allow_remote: bool = False, api_key_env: str | None = None
    ) -> list[str]:
        """The model ids the server reports (``/v1/models``); raises ModelUnavailable."""
        m = self.server_model(
            "", base_url=base_url, allow_remote=allow_remote, api_key_env=api_key_env, probe=False
        )
        try:
            return m.list_models()  # type: ignore[attr-defined]
        except Exception as e:
            raise ModelUnavailable(str(e)) from None

    def choices(self, llm: Any, extra_paths: tuple[str | None, ...] = ()) -> list[ModelChoice]:
        """What the model picker lists: the packaged chat models, the GGUF files in the models
        directory (and any configured path), and the server's models when one is set."""
        out: list[ModelChoice] = []
        try:
            packaged = _packaged()
        except ModelUnavailable:
            packaged = None
        seen: set[str] = set()
        if packaged is not None:
            for name in packaged_chat_models():
                installed = packaged.is_installed(name)
                m = packaged.REGISTRY[name]
                out.append(
                    ModelChoice(
                        spec_for("llama.cpp", name, llm.backend),
                        name,
                        "packaged",
                        installed,
                        "" if installed else f"run `{m.make_target}`",
                    )
                )
                with contextlib.suppress(Exception):
                    seen.add(str(packaged.resolve_gguf(name)) if installed else name)
            files: list[Path] = []
            with contextlib.suppress(OSError):
                files = sorted(packaged.models_dir().glob("*.gguf"))
            for p in files:
                if str(p) not in seen:
                    seen.add(str(p))
                    out.append(
                        ModelChoice(spec_for("llama.cpp", str(p), llm.backend), p.name, "local")
                    )
        for path in extra_paths:
            if path and route(path, llm.backend)[0] == "llama.cpp":
                name = route(path, llm.backend)[1]
                if name.endswith(".gguf") and str(Path(name).expanduser()) not in seen:
                    seen.add(str(Path(name).expanduser()))
                    out.append(
                        ModelChoice(
                            spec_for("llama.cpp", name, llm.backend),
                            Path(name).name,
                            "local",
                            Path(name).expanduser().is_file(),
                        )
                    )
        if llm.base_url:
            try:
                names = self.server_models(llm.base_url, llm.allow_remote, llm.api_key_env)
            except ModelUnavailable as e:
                out.append(ModelChoice("", "the model server", "server", False, str(e)))
            else:
                out += [ModelChoice(spec_for("openai", n, llm.backend), n, "server") for n in names]
        return out

    # ------------------------------------------------------------------ embedders
    def check_embedder(self, spec: str | None) -> str | None:
        if not spec:
            return None
        try:
            embedders = _embedders()
        except ModelUnavailable as e:
            return str(e)
        try:
            return embedders.check_embedder(spec) or None
        except Exception as e:
            return str(e)

    def fallback_embedder(self, spec: str | None) -> str | None:
        """What to load instead when ``spec`` cannot (models.embedders.fallback_of)."""
        try:
            return _embedders().fallback_of(spec)
        except ModelUnavailable:
            return None

    def embedder(self, spec: str) -> Embedder:
        embedders = _embedders()
        try:
            return embedders.load_embedder(spec)
        except Exception as e:
            raise ModelUnavailable(f"embedder {spec!r} failed to load: {e}") from None

    def describe(self, spec: str) -> str:
        """A short human name for the status bar ("qwen2.5-coder-1.5b", "my-model.gguf")."""
        return Path(spec).name if ("/" in spec or spec.endswith(".gguf")) else spec
