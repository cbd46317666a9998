"""Issue 15 (clear errors: config) and issue 16 item 6: a --config that names a missing file, a
typo in an ``EVA_`` variable's table part, a key in the wrong table (``EVA_LLM__GENERAL``), a bad
``EVA_LLM_THREADS``, and saving settings over the ``[llm] model = "x"`` shorthand each give a
clear error naming the source (or the right result) — never defaults silently, never a
traceback. Keymap values are checked too (that fix landed earlier; verified here)."""

from __future__ import annotations

import pytest

from eva_runtime import config as cfg
from eva_runtime import config_file
from eva_tui import cli


def test_config_naming_a_missing_file_is_an_error(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(cfg.ConfigError, match="no such config file"):
        config_file.load(missing, environ={})
    assert config_file.load(
        None, environ={"XDG_CONFIG_HOME": str(tmp_path)}
    ).llm.general  # defaults


def test_the_cli_says_so_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    rc = cli.main(["--config", str(tmp_path / "nope.toml"), "--data", str(tmp_path), "doctor"])
    err = capsys.readouterr().err
    assert rc == 2 and "nope.toml" in err and "no such config file" in err


@pytest.mark.parametrize(
    ("var", "meant"),
    [
        ("EVA_MEMROY__TOP_K", "EVA_MEMORY__TOP_K"),
        ("EVA_LLMS__MODEL__GENERAL", "EVA_LLM__MODEL__GENERAL"),
        ("EVA_SLEPP__EVERY", "EVA_SLEEP__EVERY"),
    ],
)
def test_a_typo_in_the_table_part_is_an_error_with_the_meant_variable(tmp_path, var, meant):
    with pytest.raises(cfg.ConfigError) as e:
        config_file.load(None, environ={"XDG_CONFIG_HOME": str(tmp_path), var: "5"})
    msg = str(e.value)
    assert msg.startswith(f"environment variable {var}:") and f"did you mean {meant}?" in msg


def test_eva_llm_general_names_the_variable_and_suggests_the_model_key(tmp_path):
    """Issue 16 item 6: the error names the variable as the source (not a config file that does
    not exist) and suggests EVA_LLM__MODEL__GENERAL."""
    with pytest.raises(cfg.ConfigError) as e:
        config_file.load(None, environ={"XDG_CONFIG_HOME": str(tmp_path), "EVA_LLM__GENERAL": ""})
    msg = str(e.value)
    assert msg.startswith("environment variable EVA_LLM__GENERAL:")
    assert "did you mean EVA_LLM__MODEL__GENERAL?" in msg
    assert "config.toml" not in msg


def test_a_bad_value_in_a_variable_names_the_variable_and_a_good_one_still_works(tmp_path):
    with pytest.raises(cfg.ConfigError, match="environment variable EVA_MEMORY__TOP_K: .*top_k"):
        config_file.load(
            None, environ={"XDG_CONFIG_HOME": str(tmp_path), "EVA_MEMORY__TOP_K": "many"}
        )
    c = config_file.load(
        None,
        environ={
            "XDG_CONFIG_HOME": str(tmp_path),
            "EVA_MEMORY__TOP_K": "5",
            "EVA_MODELS_DIR": "/x",
        },
    )  # other EVA_ variables are not config
    assert c.memory.top_k == 5 and c.overrides == ("EVA_MEMORY__TOP_K",)


def test_a_file_error_still_names_the_file(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[memory]\ntop_kk = 3\n")
    with pytest.raises(cfg.ConfigError, match=f"^{p}: \\[memory\\] top_kk: unknown key"):
        config_file.load(p, environ={"EVA_MEMORY__TOP_K": "5"})


@pytest.mark.parametrize("bad", ["abc", "0", "-2", "1.5"])
def test_a_bad_eva_llm_threads_is_an_error(tmp_path, bad):
    with pytest.raises(cfg.ConfigError, match="EVA_LLM_THREADS: must be a whole number"):
        config_file.load(None, environ={"XDG_CONFIG_HOME": str(tmp_path), "EVA_LLM_THREADS": bad})
    from models.profiles import auto_threads

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVA_LLM_THREADS", bad)
        with pytest.raises(ValueError, match="EVA_LLM_THREADS"):
            auto_threads(cpus=4, load=0.0)
        mp.setenv("EVA_LLM_THREADS", "3")
        assert auto_threads(cpus=4, load=0.0) == 3


def test_saving_a_model_over_the_llm_model_shorthand(tmp_path):
    """`[llm] model = "x"` means model.general; saving a model key turns it into the table and
    keeps the owner's other keys and comments (was a raw TypeError)."""
    p = tmp_path / "config.toml"
    p.write_text('# my settings\n[llm]\nmodel = "qwen2.5-coder-0.5b"\ncontext_size = 4096\n')
    config_file.save_changes(p, {"llm.model.smartest": "qwen2.5-coder-1.5b"})
    c = config_file.load(p, environ={})
    assert (c.llm.general, c.llm.smartest, c.llm.context_size) == (
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-1.5b",
        4096,
    )
    config_file.save_changes(p, {"llm.model.general": "other.gguf"})
    assert config_file.load(p, environ={}).llm.general == "other.gguf"
    assert p.read_text().startswith("# my settings")


def test_a_value_where_a_table_is_needed_is_a_clear_error(tmp_path):
    p = tmp_path / "config.toml"
    p.write_text("chat = 3\n")
    with pytest.raises(cfg.ConfigError):
        config_file.save_changes(p, {"chat.learning": False})


@pytest.mark.parametrize(("key", "value"), [("app.memories", "banana"), ("no.such", "f2")])
def test_keymap_values_and_ids_are_checked(tmp_path, key, value):
    """Issue 15 / 16 item 2 (landed before this branch): a bad key or an unknown binding id is
    an error naming the key."""
    p = tmp_path / "c.toml"
    p.write_text(f'[keymap]\n"{key}" = "{value}"\n')
    with pytest.raises(cfg.ConfigError, match=f"\\[keymap\\] {key}"):
        config_file.load(p, environ={})


# ---------------------------------------------------------------------------------- issue 25
@pytest.mark.parametrize(
    ("var", "meant"),
    [
        ("EVA_MEMORY_TOP_K", "EVA_MEMORY__TOP_K"),
        ("EVA_LLM_MODEL_GENERAL", "EVA_LLM__MODEL__GENERAL"),
        ("EVA_SLEEP_DRY_RUN", "EVA_SLEEP__DRY_RUN"),
        ("EVA_MEMORY_TOPK", "EVA_MEMORY__TOP_K"),
        ("EVA_MODEL_DIR", "EVA_MODELS_DIR"),
    ],
)
def test_an_eva_variable_that_is_not_a_setting_is_an_error_with_the_meant_one(tmp_path, var, meant):
    """Issue 25 item D: EVA_MEMORY_TOP_K=5 (one underscore) was silently ignored, so the owner
    believed top_k was 5. An EVA_ variable that is neither a setting nor one Eva reads
    elsewhere is an error naming it, with the spelling probably meant."""
    with pytest.raises(cfg.ConfigError) as e:
        config_file.load(None, environ={"XDG_CONFIG_HOME": str(tmp_path), var: "5"})
    assert str(e.value).startswith(
        f"environment variable {var} is not a setting; did you mean {meant}?"
    )


def test_the_cli_refuses_a_misspelt_variable_with_exit_2(tmp_path, monkeypatch, capsys):
    """Issue 25 item D: on the command line the misspelt variable is one sentence, exit 2."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_MEMORY_TOP_K", "5")
    rc = cli.main(["--data", str(tmp_path / "d"), "doctor"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "EVA_MEMORY_TOP_K is not a setting; did you mean EVA_MEMORY__TOP_K?" in err
    monkeypatch.setenv("EVA_WHATEVER", "1")
    monkeypatch.delenv("EVA_MEMORY_TOP_K")
    assert cli.main(["--data", str(tmp_path / "d"), "doctor"]) == 2
    assert "EVA_WHATEVER is not a setting" in capsys.readouterr().err


def test_the_eva_variables_eva_reads_elsewhere_are_accepted(tmp_path):
    """Issue 25 item D: EVA_DEBUG, EVA_MODELS_DIR, EVA_LLM_THREADS, EVA_CMAKE_ARGS are not
    settings but are read by other parts: they pass; and every EVA_ name the code reads from
    the environment is one of them (a new one must be added to OTHER_ENV)."""
    import re
    from pathlib import Path

    env = {
        "XDG_CONFIG_HOME": str(tmp_path),
        "EVA_DEBUG": "1",
        "EVA_MODELS_DIR": "/m",
        "EVA_LLM_THREADS": "2",
        "EVA_CMAKE_ARGS": "-DGGML_NATIVE=ON",
    }
    assert config_file.load(None, environ=env).overrides == ()
    root = Path(__file__).resolve().parents[2]
    read = set()
    for path in [*root.rglob("*.py"), *root.glob("scripts/*.sh")]:
        if {"tests", ".venv", ".git"} & set(path.relative_to(root).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        read |= set(
            re.findall(r"(?:environ\.get\(|getenv\(|environ\[)\s*['\"](EVA_[A-Z0-9_]+)", text)
        )
        read |= set(re.findall(r"\$\{?(EVA_[A-Z0-9_]+)", text))
    assert read and read <= set(config_file.OTHER_ENV), read - set(config_file.OTHER_ENV)


@pytest.mark.parametrize("where", ["file", "env"])
def test_a_huge_bad_config_value_is_clipped(tmp_path, monkeypatch, capsys, where):
    """Issue 25 item C5: a 1 MB bad value in the config file or an EVA_ variable is not echoed
    whole: the error quotes 80 characters of it and "…"."""
    huge = "x" * 1_000_000
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    args = ["--data", str(tmp_path / "d"), "doctor"]
    if where == "file":
        p = tmp_path / "c.toml"
        p.write_text(f'[memory]\ntop_k = "{huge}"\n[chat]\n"{huge}" = 1\n')
        args = ["--config", str(p), *args]
    else:
        monkeypatch.setenv("EVA_MEMORY__TOP_K", huge)
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "top_k" in err and "…" in err and len(err) < 600, len(err)
    if where == "file":
        p.write_text(f'[chat]\n"{huge}" = 1\n')
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert "unknown key" in err and len(err) < 600, len(err)
