"""The packaged chat models for the tests marked real_model: every such test loads one the same
way (seed 0, so a run can be repeated) and is skipped, saying what to install, where it is
missing — never failed for want of a model."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from models import packaged

if TYPE_CHECKING:
    from models.llama import LlamaChatModel


def packaged_chat_model(
    name: str = packaged.TEST_CHAT_MODEL, *, setup: str = "make setup-dev", **kw: Any
) -> LlamaChatModel:
    """The packaged model ``name`` loaded with seed 0 and ``kw`` (n_ctx, …), or the test
    skipped: ``setup`` is the make target that installs it."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: run `make setup-dev`")
    from models.llama import load_chat_model

    if not packaged.is_installed(name):
        pytest.skip(f"packaged model {name!r} is not installed: run `{setup}`")
    return load_chat_model(name, seed=0, **kw)


def module_model(name: str = packaged.TEST_CHAT_MODEL, **kw: Any) -> Iterator[LlamaChatModel]:
    """For a module-scoped fixture (``yield from``): the model, closed after the last test."""
    model = packaged_chat_model(name, **kw)
    yield model
    model.close()
