"""The one place the TUI reaches concrete models (``models/``), imported lazily.

``models`` pulls in llama.cpp and fastembed, which are slow to import and may be absent: nothing
here is imported until a model is actually wanted, and always from a worker thread. Every
failure becomes :class:`ModelUnavailable` whose message says what is missing and how to fix it.
Tests replace the :class:`ModelLoader` with a fake of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from core.embedding import Embedder
from core.llm import ChatModel

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
        try:
            return llama.load_chat_model(str(path), **kwargs)
        except Exception as e:  # llama.cpp failures: show the owner, keep the app alive
            raise ModelUnavailable(f"chat model {spec!r} failed to load: {e}") from None

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

    # ------------------------------------------------------------------ tests and doctor
    def provides(self, spec: str) -> bool:
        return self.check_chat(spec) is None

    def describe(self, spec: str) -> str:
        """A short human name for the status bar ("qwen2.5-coder-1.5b", "my-model.gguf")."""
        return Path(spec).name if ("/" in spec or spec.endswith(".gguf")) else spec
