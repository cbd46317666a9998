"""Config, issue 10 and issue 16: one builder coerces every TOML table into its dataclass with
errors naming the key; settings are saved with tomlkit (comments and layout kept, only changed
keys written, environment overrides never persisted); ``[keymap]`` is validated."""

from __future__ import annotations

import pytest
from textual.widgets import Select

from core import MemoryConfig
from core.config import SleepConfig
from eva_runtime import config as cfg
from eva_runtime import config_file
from tests.tui.conftest import SEED, SIZE, aio, settle


# ---------------------------------------------------------------------------- the builder
def test_the_builder_coerces_a_table_into_a_core_dataclass():
    """Issue 10: one generic builder: a TOML int becomes a float field's float, "none" unsets an
    optional field, a duration converter reads "12h"; the dataclass's own checks run."""
    mem = cfg.build(MemoryConfig, {"half_life_days": 7, "embedding_model": "none"}, "[memory]")
    assert mem == MemoryConfig(half_life_days=7.0, embedding_model=None)
    assert isinstance(mem.half_life_days, float)
    sleep = cfg.build(
        SleepConfig,
        {"every": "12h"},
        "[sleep]",
        convert={"every": lambda v, k: cfg.parse_duration(v, k)},
    )
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
    c = cfg.from_mapping(
        {"llm": {"model": {"general": "", "smartest": "none"}}, "sleep": {"memory": {"model": ""}}}
    )
    assert c.llm.general is None and c.llm.smartest is None and c.sleep.memory_model is None
    assert cfg.from_mapping({"llm": {"model": "x.gguf"}}).llm.general == "x.gguf"


# ---------------------------------------------------------------------------- saving (issue 16, bug 1)
OWNER_FILE = """\
# Eva — my settings (keep this comment)

[llm.model]
general = "mine.gguf"   # the model I like

[chat]
# how much Eva keeps in view
detail_level = "key"
"""


def test_saving_keeps_comments_and_layout_and_writes_only_the_changed_key(tmp_path):
    """Issue 16 bug 1: a save changes the one key it was given; comments, spacing, order and
    the other keys stay; no default and no empty table is added."""
    path = tmp_path / "config.toml"
    path.write_text(OWNER_FILE)
    config_file.save_changes(path, {"chat.detail_level": "detailed"})
    assert path.read_text() == OWNER_FILE.replace('"key"', '"detailed"')
    config_file.save_changes(path, {"sleep.memory.model": "x.gguf", "llm.model.smartest": None})
    text = path.read_text()
    assert text.startswith(OWNER_FILE.replace('"key"', '"detailed"'))
    assert "[sleep]" not in text and "[memory]" not in text  # no empty table on the way
    assert text.endswith('[sleep.memory]\nmodel = "x.gguf"\n')
    assert config_file.load(path, environ={}).sleep.memory_model == "x.gguf"


def test_a_refused_save_loses_nothing(tmp_path):
    """§9: a value that would not read back valid is refused with its key; the file is as it
    was; a file that is not TOML is reported, never overwritten."""
    path = tmp_path / "config.toml"
    path.write_text(OWNER_FILE)
    with pytest.raises(cfg.ConfigError, match=r"\[chat\] detail_level"):
        config_file.save_changes(path, {"chat.detail_level": "huge"})
    assert path.read_text() == OWNER_FILE
    path.write_text("[chat\n# mine\n")
    with pytest.raises(cfg.ConfigError, match=str(path)):
        config_file.save_changes(path, {"chat.learning": False})
    assert path.read_text() == "[chat\n# mine\n"


def test_the_form_writes_only_what_the_owner_changed():
    """Issue 16 bug 1: the settings form turns into changes only the fields that differ from
    what was shown; an emptied field removes its key (or writes its 'off' value)."""
    from screens.settings import changed_keys, current_values

    shown = current_values(cfg.from_mapping({}))
    assert changed_keys(dict(shown), shown) == {}
    form = {**shown, "chat.learning": False, "llm.model.smartest": "", "memory.embedding_model": ""}
    form["llm.model.general"] = ""
    assert changed_keys(form, shown) == {
        "chat.learning": False,
        "llm.model.general": None,
        "memory.embedding_model": "none",
    }


# ---------------------------------------------------------------------------- keymap (issue 16, bug 2)
@pytest.mark.parametrize(
    "keymap, message",
    [
        ({"app.memories": "banana"}, "[keymap] app.memories: 'banana' is not a key name"),
        ({"app.memories": "f2,ctrl+banana"}, "[keymap] app.memories: 'banana' is not a key"),
        ({"chat.stop": "hyper+cmd+g"}, "[keymap] chat.stop: 'cmd' is not a modifier"),
        (
            {"app.memorys": "f2"},
            "[keymap] app.memorys: unknown binding id (did you mean 'app.memories'?)",
        ),
        ({"nothing.like.it": "f2"}, "[keymap] nothing.like.it: unknown binding id"),
    ],
)
def test_a_bad_keymap_is_refused_with_the_key_and_the_reason(keymap, message):
    """Issue 16 bug 2: an unknown binding id or a key name no terminal sends is refused."""
    with pytest.raises(cfg.ConfigError) as e:
        cfg.from_mapping({"keymap": keymap})
    assert message in str(e.value)


def test_good_keymaps_are_kept():
    """§9: ids with keys, modifiers, punctuation names and lists are accepted as they were."""
    keymap = {
        "chat.stop": "escape,ctrl+g",
        "memories.search": "slash",
        "app.sleep": ["f9", "z"],
        "record.close": "question_mark",
        "memories.pin": "ctrl+t",
    }
    assert cfg.from_mapping({"keymap": keymap}).keymap["app.sleep"] == "f9,z"


def test_the_cli_exits_2_on_a_bad_keymap(tmp_path, capsys):
    """Issue 16 bug 2: like every config error, `eva` says which key and why, and exits 2."""
    from eva_tui import cli

    path = tmp_path / "config.toml"
    path.write_text('[keymap]\n"app.memories" = "banana"\n')
    assert cli.main(["--config", str(path), "--data", str(tmp_path), "doctor"]) == 2
    err = capsys.readouterr().err
    assert "[keymap] app.memories: 'banana' is not a key name" in err


def test_binding_ids_are_the_ones_the_app_declares():
    """Issue 16 bug 2: the ids the keymap accepts are exactly those of the app's bindings."""
    import importlib
    import inspect
    import pkgutil

    from textual.binding import Binding

    import eva_tui.widgets
    import screens
    from eva_runtime.keymap import BINDING_IDS
    from eva_tui.app import EvaApp

    declared = {b.id for b in EvaApp.BINDINGS if isinstance(b, Binding)}
    for pkg in (screens, eva_tui.widgets):
        for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
            for _, cls in inspect.getmembers(importlib.import_module(info.name), inspect.isclass):
                declared |= {
                    b.id for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding)
                }
    assert declared - {None} == BINDING_IDS


def test_the_keymap_knows_the_key_names_textual_binds():
    """Issue 16 item 2 / issue 30: the config checks [keymap] keys without importing Textual
    (`eva sleep` and `eva serve` load no UI), so its list of key names must be Textual's own —
    and a name it accepts by its Unicode name must be one Textual reads as that character."""
    from textual.keys import KEY_TO_UNICODE_NAME, Keys, key_to_character

    from eva_runtime.keymap import TEXTUAL_KEY_NAMES, key_problem

    textual = {k.value for k in Keys} | set(KEY_TO_UNICODE_NAME)
    assert {n for n in textual if "+" not in n} == TEXTUAL_KEY_NAMES
    for name in (
        "question_mark",
        "full_stop",
        "colon",
        "apostrophe",
        "tilde",
        "banana",
        "latin_small_letter_a",
        "cyrillic_small_letter_a",
        "f25",
        "ctrl+banana",
    ):
        *_, last = name.split("+")
        char = key_to_character(last)
        textual_ok = last in textual or (char is not None and char.isascii())
        if last in ("colon", "apostrophe", "tilde"):  # Eva's own extra names
            textual_ok = True
        assert (key_problem(name) is None) == textual_ok, name


@aio
async def test_the_settings_screen_saves_only_changes_and_never_an_override(env_factory):
    """Issue 16 bug 1, seen on screen: with ``EVA_LLM__MODEL__GENERAL=`` set, saving a changed
    detail level keeps the file's ``general`` line and comments, writes the one key, adds no
    defaults; a second save with nothing changed writes nothing."""
    env = env_factory(seed=SEED)
    env.config_path.write_text('[memory]\nembedding_model = "none"\n\n' + OWNER_FILE)
    env.services.config = config_file.load(env.config_path, environ={"EVA_LLM__MODEL__GENERAL": ""})
    assert env.services.config.llm.general is None  # the override is in force
    before = env.config_path.read_text()
    async with env.app.run_test(size=SIZE) as pilot:
        await pilot.press("f6")
        await settle(pilot)
        assert pilot.app.screen.query_one("#set-llm-model-general").value == ""
        pilot.app.screen.query_one("#set-chat-detail-level", Select).value = "detailed"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert env.config_path.read_text() == before.replace('"key"', '"detailed"')
        assert env.services.conversation.config.detail_level == "detailed"
        env.config_path.write_text(before)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert env.config_path.read_text() == before  # nothing changed since the save
