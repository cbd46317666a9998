"""[llm] kv_cache_keys (issue 32 item 3): the KV cache's key type is a config key, q8_0 by
default, validated with the choices named, and handed to llama.cpp by the model loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from eva_runtime import config as cfg
from eva_runtime import loader as loader_mod
from eva_runtime.loader import ModelLoader


def test_kv_cache_keys_default_to_q8_0_and_anything_else_is_refused():
    assert cfg.from_mapping({}).llm.kv_cache_keys == "q8_0"
    assert cfg.from_mapping({"llm": {"kv_cache_keys": "f16"}}).llm.kv_cache_keys == "f16"
    with pytest.raises(cfg.ConfigError, match=r"\[llm\] kv_cache_keys: must be one of q8_0, f16"):
        cfg.from_mapping({"llm": {"kv_cache_keys": "q4"}})


def test_the_loader_hands_the_key_type_to_llama_cpp(tmp_path, monkeypatch):
    gguf = tmp_path / "own.gguf"
    gguf.write_bytes(b"GGUF")
    seen: dict = {}

    class FakeLlama:
        @staticmethod
        def load_chat_model(path: str, **kw):
            seen.update(kw, path=path)
            return object()

    class FakePackaged:
        REGISTRY: dict = {}

        @staticmethod
        def resolve_gguf(spec: str, progress=None) -> Path:
            return Path(spec)

    monkeypatch.setattr(loader_mod, "_llama", lambda: FakeLlama)
    monkeypatch.setattr(loader_mod, "_packaged", lambda: FakePackaged)
    ModelLoader().chat_model(str(gguf), kv_cache_keys="f16")
    assert seen["kv_cache_keys"] == "f16" and seen["path"] == str(gguf)
