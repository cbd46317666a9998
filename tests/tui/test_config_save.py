"""Config, issue 10 and issue 16: one builder coerces every TOML table into its dataclass with
errors naming the key; settings are saved with tomlkit (comments and layout kept, only changed
keys written, environment overrides never persisted); ``[keymap]`` is validated."""

from __future__ import annotations

import pytest

from core import MemoryConfig
from core.config import SleepConfig
from eva_tui import config as cfg


# ---------------------------------------------------------------------------- the builder
def test_the_builder_coerces_a_table_into_a_core_dataclass():
    """Issue 10: one generic builder: a TOML int becomes a float field's float, "none" unsets an
    optional field, a duration converter reads "12h"; the dataclass's own checks run."""
    mem = cfg.build(MemoryConfig, {"half_life_days": 7, "embedding_model": "none"}, "[memory]")
    assert mem == MemoryConfig(half_life_days=7.0, embedding_model=None)
    assert isinstance(mem.half_life_days, float)
    sleep = cfg.build(SleepConfig, {"every": "12h"}, "[sleep]",
                      convert={"every": lambda v, k: cfg.parse_duration(v, k)})
    assert sleep.every == 12 * 3600
    with pytest.raises(cfg.ConfigError, match=r"^\[memory\] top_k must be >= 1"):
        cfg.build(MemoryConfig, {"top_k": 0}, "[memory]")


@pytest.mark.parametrize(
    "data, message",
    [
        ({"llm": {"model": {"general": 3}}}, "[llm.model] general: must be text"),
        ({"llm": {"model": {"best": "x"}}}, "[llm.model] best: unknown key"),
        ({"llm": {"model": []}}, "[llm.model]: must be a table"),
        ({"llm": {"threads": 0}}, "[llm] threads: must be >= 1"),
        ({"llm": {"context_size": "big"}}, "[llm] context_size: must be a whole number"),
        ({"chat": {"learning": "yes"}}, "[chat] learning: must be true or false"),
        ({"chat": {"detail_level": "huge"}}, "[chat] detail_level: must be one of key"),
        ({"sleep": {"memory": {"model": 1}}}, "[sleep.memory] model: must be text"),
        ({"sleep": {"memory": {"planner": "x"}}}, "[sleep.memory] planner: unknown key"),
        ({"sleep": {"general": "x"}}, "[sleep] general: set it as [llm.model] general"),
        ({"sleep": {"idle_for": "soon"}}, "[sleep] idle_for: must be seconds or a duration"),
        ({"sleep": {"nap": 1}}, "[sleep] nap: unknown key"),
        ({"memory": {"top_k": 2.5}}, "[memory] top_k: must be a whole number"),
    ],
)
def test_every_table_names_the_bad_key(data, message):
    """§9: whatever table a bad value is in, the error names the table, the key and why."""
    with pytest.raises(cfg.ConfigError) as e:
        cfg.from_mapping(data)
    assert message in str(e.value)


def test_optional_models_are_unset_by_an_empty_value():
    """§8: an empty or "none" model name means no model (chat off, planner by the chain)."""
    c = cfg.from_mapping({"llm": {"model": {"general": "", "smartest": "none"}},
                          "sleep": {"memory": {"model": ""}}})
    assert c.llm.general is None and c.llm.smartest is None and c.sleep.memory_model is None
    assert cfg.from_mapping({"llm": {"model": "x.gguf"}}).llm.general == "x.gguf"
