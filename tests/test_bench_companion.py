"""bench.companion on a tiny inline scenario with a scripted model: what it counts as saved,
answered, echoed, leaked markup and wrong language, and the JSON it promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import companion
from bench.companion import default_memory_factory, run
from tests.fake_llm import ScriptedLLM

ECHO_MSG = "I really love my dog Bublik, he is the best corgi in the world."
ECHO_REPLY = "Yes! You really love your dog Bublik, he is the best corgi in the world."

SCENARIO = {
    "facts": [["lena", "лена"], ["peanut", "арахис"]],
    "trivia": [["rainy", "дожд"], ["umbrella", "зонт"]],
    "forgotten": [["pottery", "гончар"]],
    "private": [["nurse"]],
    "sessions": [
        {
            "chat": "a",
            "day": 0,
            "say": [
                "My sister Lena is a nurse.",
                "It's rainy today, how are you?",
                "I lost my umbrella at the station.",
            ],
        },
        {"chat": "b", "day": 1, "say": ["I'm allergic to peanuts.", ECHO_MSG]},
        {"chat": "a", "day": 2, "say": ["I signed up for pottery classes."]},
    ],
    "questions": [
        {"chat": "new", "day": 5, "ask": "What is my sister's name?", "expect": [["lena", "лена"]]},
        {
            "chat": "new",
            "day": 5,
            # told, then asked: the owner's words support an answer (a question that only
            # asks would not: core.language.only_asks)
            "ask": "Lena has a new flat. Where does Lena live?",
            "expect": [["lena"]],
            "forbid": ["nurse"],
        },
        {"chat": "new", "day": 5, "ask": "Как зовут мою сестру?", "expect": [["lena", "лена"]]},
        {
            "chat": "new",
            "day": 5,
            "ask": "What do you remember about me?",
            "expect": [["lena"], ["nurse"]],
        },
    ],
}

REPLIES = [
    ["That's lovely, ", "tell me more about her."],  # sister Lena
    ["I'm fine, thanks! ", "Stay dry."],  # rainy small talk: no memory step
    ["Oh no, I hope someone hands it in soon!"],  # umbrella
    ["Noted, ", "I will keep that in mind."],  # peanuts
    [w + " " for w in ECHO_REPLY.split()],  # an echo: held back, asked again
    ["Bublik sounds like a wonderful friend!"],  # … the reply the owner sees
    ["Have fun with the clay!"],  # pottery
    ["Your sister ", "is Lena."],  # Q1: answered
    # Q2: a forbidden word (a word the shown memory holds, so the never-invent guard lets it
    # pass: a made-up city for Lena, or a place nothing shown holds, is asked again)
    ["Lena lives ", "with a nurse."],
    ["Her name is Lena."],  # Q3: English, stopped unseen …
    ["Her name is Lena."],  # … and English again: a mismatch
    ["Sure <tool_result>ok</tool_result> ", "Lena is a nurse."],  # Q4: markup the guard misses
]


def _save(content: str, private: bool = False) -> dict:
    return {
        "ops": [
            {"op": "save", "content": content, "kind": "fact", "importance": 3, "private": private}
        ]
    }


# only messages that can carry a fact get a memory step (questions and small talk do not)
PLANS = [
    _save("The owner's sister Lena is a nurse.", private=True),
    _save("The owner lost an umbrella at the station."),  # small talk wrongly saved
    {"ops": []},  # the peanut allergy is missed
    {"ops": []},  # the dog (an echo turn)
    _save("The owner signed up for pottery classes."),
]

REQUIRED_KEYS = {
    "masculine_self",
    "statement_owner_voice",
    "model",
    "writes",
    "threads",
    "scenario",
    "facts_saved",
    "facts_total",
    "facts_missing",
    "trivia_saved",
    "answered",
    "questions",
    "answer_rate",
    "markup_replies",
    "echo_replies",
    "language_mismatches",
    "first_token_first_turn_s",
    "first_token_later_p50_s",
    "first_token_later_p95_s",
    "seconds_per_turn",
    "model_calls_per_turn",
    "memories",
    "turns",
    "environment",
    "load_s",
    "peak_rss_mb",
    "forgotten_still_saved",
    "repeated_replies",
}
TURN_KEYS = {
    "chat",
    "day",
    "text",
    "reply",
    "first_token_s",
    "seconds",
    "model_calls",
    "ops",
    "masculine_self",
}


@pytest.fixture(scope="module")
def result_and_model():
    model = ScriptedLLM(replies=[list(r) for r in REPLIES], plans=[dict(p) for p in PLANS])
    result = run(model, SCENARIO, "structured", default_memory_factory(None), scenario_name="tiny")
    return result, model


def test_json_keys_and_shape(result_and_model):
    result, _ = result_and_model
    assert result.keys() >= REQUIRED_KEYS
    json.dumps(result, ensure_ascii=False)  # all of it is JSON
    assert result["model"] == "scripted"
    assert result["writes"] == "structured"
    assert result["scenario"] == "tiny"
    assert len(result["turns"]) == 10
    for row in result["turns"]:
        assert row.keys() >= TURN_KEYS
    assert [t["chat"] for t in result["turns"]] == ["a"] * 3 + ["b", "b", "a"] + ["new"] * 4
    assert [t["day"] for t in result["turns"]] == [0, 0, 0, 1, 1, 2] + [5] * 4
    assert result["first_token_first_turn_s"] is not None
    assert result["first_token_later_p50_s"] is not None
    assert result["first_token_later_p95_s"] >= result["first_token_later_p50_s"]
    assert result["seconds_per_turn"] > 0
    # calls: 6 sessions with 5 memory steps and one echo retry, 4 questions with one retry and
    # one memory step (the question that tells something first)
    assert result["model_calls_per_turn"] == pytest.approx((6 + 5 + 1 + 4 + 1 + 1) / 10)
    assert [t["model_calls"] for t in result["turns"]][:3] == [2, 1, 2]
    assert result["environment"]["cpus"] >= 1
    assert result["peak_rss_mb"] > 0


def test_facts_trivia_forgotten_private(result_and_model):
    result, _ = result_and_model
    assert result["facts_total"] == 2
    assert result["facts_saved"] == 1  # Lena saved, the peanut allergy missed
    assert result["facts_missing"] == ["peanut"]
    assert result["trivia_saved"] == 1  # the umbrella saved; the rain was never offered
    assert result["forgotten_still_saved"] == 1
    assert result["private_marked"] == 1 and result["private_total"] == 1
    contents = {m["content"]: m for m in result["memories"]}
    assert contents["My sister Lena is a nurse."]["private"] is True
    assert contents["I signed up for pottery classes."]["kind"] == "fact"
    # the clock follows the scenario's days, a few minutes more per message
    assert 2 < contents["I signed up for pottery classes."]["day"] < 2.1
    assert 0 < contents["My sister Lena is a nurse."]["day"] < 0.1
    saves = [op for t in result["turns"] for op in t["ops"]]
    assert [op["name"] for op in saves] == ["memory_save"] * 3
    assert all(op["ok"] for op in saves)


def test_answers_and_forbid(result_and_model):
    result, _ = result_and_model
    questions = [t for t in result["turns"] if t.get("question")]
    assert [q["answered"] for q in questions] == [True, False, True, True]
    assert result["answered"] == 3 and result["questions"] == 4
    assert result["answer_rate"] == 0.75


def test_reply_hygiene_counts(result_and_model):
    result, _ = result_and_model
    assert result["echo_replies"] == 0  # the echo was held back and asked again
    assert result["turns"][4]["reply"] == "Bublik sounds like a wonderful friend!"
    assert result["markup_replies"] == 1 and result["turns"][9]["markup"]
    assert result["language_mismatches"] == 1 and result["turns"][8]["language_mismatch"]


def test_each_chat_is_its_own_window_and_warmed_once(result_and_model):
    _, model = result_and_model
    assert len(model.warmed) == 3  # chats a, b, new
    said = {text for s in SCENARIO["sessions"] for text in s["say"]}

    def call_for(text):
        return next(c["messages"] for c in model.calls if text in c["messages"][-1]["content"])

    first_question = call_for("What is my sister's name?")
    assert not any(
        m["role"] in ("user", "assistant") and any(t in m["content"] for t in said)
        for m in first_question[:-1]
    )
    later_a = call_for("I signed up for pottery classes.")  # chat "a" again: its window
    assert any(
        m["role"] == "user" and "My sister Lena is a nurse." in m["content"] for m in later_a[:-1]
    )
    in_b = call_for("I'm allergic to peanuts.")  # chat "b" starts empty
    assert not any("My sister Lena is a nurse." in m["content"] for m in in_b)


def test_matching_helpers():
    assert companion.is_answered("Её зовут Лена.", [["lena", "лена"]])
    assert not companion.is_answered("Её зовут Лена.", [["lena", "лена"], ["14"]])
    assert not companion.is_answered("Lena, in Tbilisi", [["lena"]], ["tbilisi"])
    assert companion.is_answered("Anything", [])
    # a name told in one script, answered in the other (companion_c: "Пиксель" → "Piksel")
    assert companion.is_answered("Your pet's name is Piksel.", [["pixel", "пиксел"]])
    assert not companion.is_answered("Your pet's name is Rex.", [["pixel", "пиксел"]])
    assert not companion.is_answered("Pixel lives in Tbilisi.", [["pixel"]], ["тбилиси"])
    assert companion.language_mismatch("", "Hello?")
    assert not companion.language_mismatch("14", "Когда?")
    assert companion.language_mismatch("Fine", "Как дела?")
    assert not companion.language_mismatch("Хорошо", "Как дела?")
    assert companion.has_markup("ok <tools>") and companion.has_markup('"arguments": 1')
    assert not companion.has_markup("a < b")
    assert companion.is_echo_reply(ECHO_REPLY, ECHO_MSG)
    assert not companion.is_echo_reply("Bublik sounds like a wonderful friend!", ECHO_MSG)


def test_a_reply_copied_from_an_earlier_one_of_its_chat_is_counted_as_repeated():
    """Issue 9: ``repeated_replies`` counts Eva copying her own earlier reply of the same chat —
    not the same answer to the same question, nor the same words in another chat."""
    turns = [
        {"chat": "a", "text": "I have a dog.", "reply": "How nice! How are you?"},
        {"chat": "a", "text": "My wife plays the piano.", "reply": "How nice! How are you?"},
        {"chat": "b", "text": "I live in Kazan.", "reply": "How nice! How are you?"},
        {"chat": "a", "text": "My wife plays the piano.", "reply": "How nice! How are you?"},
        {"chat": "a", "text": "I like chess.", "reply": "Chess! Who do you play with?"},
    ]
    companion.mark_repeats(turns)
    assert [t["repeated"] for t in turns] == [False, True, False, False, False]


@pytest.mark.parametrize(
    ("reply", "masculine"),
    [
        ("Я очень рад, что вы рассказали!", True),
        ("Да, я понял. Как прошёл день?", True),
        ("Рад слышать! Как ты?", True),
        ("Я рада за тебя!", False),
        ("Поняла, спасибо.", False),
        ("Ты готов к экзамену?", False),  # the owner, not Eva
        ("Это был хороший день.", False),
    ],
)
def test_eva_speaking_of_herself_in_the_masculine_is_counted(reply, masculine):
    assert companion.masculine_self(reply) is masculine


def test_a_reply_that_reads_the_statement_back_first_is_an_echo():
    """The bench counts what the judge holds (ReplyJudge.recites): the owner's message read
    back at the reply's start with a comment after it."""
    msg = "Привет! Я Полина, мне 29, работаю логопедом в детском саду, живу в Калининграде."
    assert companion.is_echo_reply(msg + " Это интересный и полезный момент.", msg)
    assert not companion.is_echo_reply("Приятно познакомиться, Полина!", msg)


def test_empty_reply_is_a_language_mismatch():
    scenario = {
        "facts": [],
        "sessions": [],
        "questions": [{"chat": "new", "day": 1, "ask": "Hi?", "expect": [["x"]]}],
    }
    model = ScriptedLLM(replies=[[""], [""]], plans=[])
    result = run(model, scenario, "structured", default_memory_factory(None))
    assert result["turns"][0]["reply"] == ""
    assert result["language_mismatches"] == 1
    assert result["answered"] == 0 and result["answer_rate"] == 0
    assert result["first_token_first_turn_s"] is None
    assert result["facts_saved"] == 0 and result["facts_total"] == 0


def test_bad_writes_is_refused():
    with pytest.raises(ValueError):
        run(ScriptedLLM(), {"sessions": []}, "loop", default_memory_factory(None))


def test_packaged_scenario_is_well_formed():
    data = json.loads(Path(companion.DEFAULT_SCENARIO).read_text(encoding="utf-8"))
    assert len(data["facts"]) >= 12 and len(data["questions"]) >= 12
    assert data["trivia"] and data["forgotten"]
    for group in data["facts"] + data["trivia"] + data["forgotten"]:
        assert group and all(isinstance(a, str) and a == a.strip() and a for a in group)
    langs = {companion.language.detect(q["ask"]) for q in data["questions"]}
    assert langs == {"ru", "en"}
    assert all(q["chat"] not in {s["chat"] for s in data["sessions"]} for q in data["questions"])
    last_session = max(s["day"] for s in data["sessions"])
    assert all(q["day"] > last_session for q in data["questions"])
    for q in data["questions"]:
        assert all(group for group in q["expect"])
    said = " ".join(t for s in data["sessions"] for t in s["say"]).lower()
    assert "забудь" in said


def test_cli_runs_with_a_scripted_model(monkeypatch, capsys, tmp_path):
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "facts": [["lena"]],
                "sessions": [{"chat": "a", "day": 0, "say": ["My sister is Lena."]}],
                "questions": [],
            }
        ),
        encoding="utf-8",
    )

    def fake_run(model, scen, writes, memory_factory, **kw):
        return run(
            ScriptedLLM(replies=[["Nice."]], plans=[_save("Sister: Lena.")]),
            scen,
            writes,
            default_memory_factory(None),
            **kw,
        )

    monkeypatch.setattr(companion, "run", fake_run)
    assert (
        companion.main(["--scenario", str(scenario), "--embedder", "none", "--threads", "1"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["facts_saved"] == 1 and out["threads"] == 1 and out["scenario"] == str(scenario)
    assert out["embedder"] == "none"


def test_tools_mode_counts_the_loop_saves():
    from core.llm import ToolCall

    scenario = {
        "facts": [["peanut"]],
        "sessions": [{"chat": "a", "day": 0, "say": ["I'm allergic to peanuts."]}],
        "questions": [],
    }
    call = ToolCall(
        "memory_save",
        {"content": "The owner is allergic to peanuts.", "kind": "fact", "importance": 4},
    )
    model = ScriptedLLM(replies=[[call], ["Noted, no peanuts."]])
    result = run(model, scenario, "tools", default_memory_factory(None))
    assert result["writes"] == "tools"
    assert result["facts_saved"] == 1
    assert result["turns"][0]["ops"][0]["name"] == "memory_save"
    assert result["turns"][0]["model_calls"] == 2 and not model.json_calls


# ---------------------------------------------------------------------------- issue 26


def test_an_unknown_question_is_invented_unless_the_reply_admits_or_asks_back():
    """Issue 26: the failures measured on the default model count as invented; honest replies
    in either language (broad wording, or a question back) do not; a forbid word always does."""
    q = {"ask": "Сколько мне лет?", "unknown": True, "expect": []}
    for made_up in (
        "Мне 12 лет.",
        "Спорт у моего сына - футбол.",
        "I am learning Russian.",
        "I don't have any children.",
        "Я не люблю никаких книг.",
        "Your brother's name is Igor.",
    ):
        assert companion.is_invented(made_up, q), made_up
    for honest in (
        "Не знаю — ты мне этого не говорил.",
        "Ты не рассказывала мне об этом.",
        "Хм, не помню такого. Подскажешь?",
        "I don't know, you haven't told me.",
        "You didn't mention a brother. What's his name?",
        "I’m not sure!",
        "Сколько же тебе лет?",
    ):
        assert not companion.is_invented(honest, q), honest
    known = {"ask": "What's my brother's name?", "expect": [], "forbid": ["igor"]}
    assert companion.is_invented("Your brother is Igor, I don't know more.", known)
    assert not companion.is_invented("Your husband is Oleg.", {"ask": "?", "expect": []})


def test_owner_voice_is_a_first_person_clause_holding_a_remembered_fact():
    memories = [
        "The owner works at the radio station.",
        "Готовится к марафону в мае.",
        "My dog is called Bublik",
    ]
    assert companion.owner_voice("Я работаю на радио.", "Где я работаю?", memories)
    assert companion.owner_voice(
        "Мне сейчас готовлюсь к марафону!", "К чему я готовлюсь?", memories
    )
    assert companion.owner_voice("My dog is Bublik.", "What is my dog's name?", memories)
    assert not companion.owner_voice("Ты работаешь на радио.", "Где я работаю?", memories)
    assert not companion.owner_voice(
        "I remember, you work at the radio.", "Where do I work?", memories
    )
    assert not companion.owner_voice("I'm glad to help!", "Where do I work?", memories)


UNKNOWN_SCENARIO = {
    "facts": [["bublik"]],
    "sessions": [
        {"chat": "a", "day": 0, "say": ["My corgi is called Bublik."]},
        {"chat": "a", "day": 2, "say": ["So windy today."]},
    ],
    "questions": [
        {"chat": "new", "day": 4, "ask": "What is my dog's name?", "expect": [["bublik"]]},
        {"chat": "new", "day": 4, "ask": "How old am I?", "unknown": True, "expect": []},
        {
            "chat": "new",
            "day": 4,
            "ask": "What's my brother's name?",
            "unknown": True,
            "expect": [],
        },
        {"chat": "new", "day": 4, "ask": "Where do I work?", "unknown": True, "expect": []},
    ],
}


def _unknown_model():
    return ScriptedLLM(
        replies=[
            ["What a lovely name!"],
            ["Stay warm!"],
            ["Your dog is Bublik."],
            ["You are 12 years old."],
            ["I don't know, you haven't told me. What is it?"],
            ["My dog is Bublik and I work as a vet."],
        ],
        plans=[_save("My corgi is called Bublik.")],
    )


def test_unknown_questions_invented_and_owner_voice_are_counted():
    """The scoring alone (the reply guard would ask some of these again in a real run)."""
    questions = UNKNOWN_SCENARIO["questions"]
    replies = [
        "Your dog is Bublik.",
        "You are 12 years old.",
        "I don't know, you haven't told me. What is it?",
        "My dog is Bublik and I work as a vet.",
    ]
    turns = [{"text": "My corgi is called Bublik.", "reply": "Lovely!"}] + [
        {"text": q["ask"], "reply": r, "question": True}
        for q, r in zip(questions, replies, strict=True)
    ]
    scores = companion.score_questions(turns, questions, ["My corgi is called Bublik."])
    assert scores["unknown_questions"] == 3 and scores["questions"] == 4
    assert scores["invented"] == 2 and scores["unknown_admitted"] == 1
    assert scores["owner_voice"] == 1
    assert scores["answered"] == 2 and scores["answer_rate"] == 0.5
    assert scores["known_answer_rate"] == 1.0
    rows = turns[1:]
    assert [r["invented"] for r in rows] == [False, True, False, True]
    assert [r["owner_voice"] for r in rows] == [False, False, False, True]


def test_a_run_prints_the_never_invent_counts():
    result = run(_unknown_model(), UNKNOWN_SCENARIO, "structured", default_memory_factory(None))
    assert result.keys() >= {
        "invented",
        "unknown_questions",
        "unknown_admitted",
        "owner_voice",
        "known_answer_rate",
    }
    assert result["unknown_questions"] == 3
    assert "nights" not in result


def test_nights_sleep_at_every_day_boundary_the_scenario_crosses():
    """--nights: the app's scheduler at each boundary (days 1, 2, 3, 4 here); with the default
    config a store under ``min_memories`` skips the memory stage and costs no model call."""
    result = run(
        _unknown_model(), UNKNOWN_SCENARIO, "structured", default_memory_factory(None), nights=True
    )
    assert result["nights"] == 4
    assert [n["day"] for n in result["night_runs"]] == [1, 2, 3, 4]
    assert all(n["status"] == "skipped" for n in result["night_runs"])
    assert result["night_calls"] == 0 and result["night_seconds"] >= 0
    assert result["facts_saved"] == 1


def test_runs_keep_the_mean_on_top_and_every_run_with_min():
    a = {
        "answer_rate": 1.0,
        "invented": 0,
        "model": "m",
        "turns": [1],
        "memories": [],
        "environment": {"cpus": 2},
    }
    b = {
        "answer_rate": 0.5,
        "invented": 2,
        "model": "m",
        "turns": [2],
        "memories": [],
        "environment": {"cpus": 2},
    }
    out = companion.aggregate([a, b])
    assert out["answer_rate"] == 0.75 and out["invented"] == 1
    assert out["min"]["answer_rate"] == 0.5 and out["max"]["invented"] == 2
    assert out["runs"] == [a, b] and out["runs_n"] == 2 and "turns" not in out
    assert companion.aggregate([a]) is a


def test_new_scenarios_are_well_formed():
    """Issue 26: each scenario holds ≥ 9 facts, a correction, a private fact, a forget, ≥ 4
    unknown questions, in both languages; the default one has ≥ 4 unknown questions too."""
    data_dir = Path(companion.DEFAULT_SCENARIO).parent
    default = json.loads(Path(companion.DEFAULT_SCENARIO).read_text(encoding="utf-8"))
    assert sum(bool(q.get("unknown")) for q in default["questions"]) >= 4
    for name in ("companion_a.json", "companion_b.json", "companion_c.json"):
        data = json.loads((data_dir / name).read_text(encoding="utf-8"))
        assert len(data["facts"]) >= 9 and data["private"] and data["forgotten"], name
        assert sum(bool(q.get("unknown")) for q in data["questions"]) >= 4, name
        said = [t for s in data["sessions"] for t in s["say"]]
        langs = {companion.language.detect(t) for t in said + [q["ask"] for q in data["questions"]]}
        assert langs == {"ru", "en"}, name
        assert any(w in " ".join(said).lower() for w in ("forget", "забудь")), name
        last = max(s["day"] for s in data["sessions"])
        assert all(q["day"] > last for q in data["questions"]), name
        for q in data["questions"]:
            assert all(group for group in q["expect"]), name


def test_the_openai_backend_needs_a_loopback_server_url():
    """Issue 31 item 6: `bench.companion --backend openai` runs through a local server named by
    --base-url; without one it stops with a usage error, and a server off this machine is refused
    before any connection (memory must not leave the machine unasked, SPEC §9)."""
    import pytest

    from bench import companion
    from models.openai_compat import RemoteRefused

    with pytest.raises(SystemExit) as e:
        companion.main(["--backend", "openai", "--embedder", "none"])
    assert e.value.code == 2
    with pytest.raises(RemoteRefused):
        companion.main(
            [
                "--backend",
                "openai",
                "--base-url",
                "http://eva.invalid:8080/v1",
                "--model",
                "qwen",
                "--embedder",
                "none",
            ]
        )


def test_a_statement_retold_in_evas_voice_is_counted_as_statement_owner_voice():
    """Issue 26 (owner's voice): a reply to a statement that tells the owner's words as Eva's
    own is counted; a reply to the owner, or Eva's own feelings, is not."""
    model = ScriptedLLM(
        replies=[
            ["That's great! I love driving trams in Edinburgh."],
            ["Oh, you drive trams? That sounds like a fun job!"],
            ["I'm so happy for her!"],
        ],
        plans=[{"ops": []}] * 3,
    )
    scenario = {
        "facts": [],
        "sessions": [
            {
                "chat": "a",
                "day": 0,
                "say": [
                    "Hi Eva, I'm Callum, I drive trams in Edinburgh.",
                    "I drive trams all day, it's tiring.",
                    "Isla got her yellow belt in judo!",
                ],
            }
        ],
        "questions": [],
    }
    result = run(model, scenario, "structured", default_memory_factory(None), scenario_name="t")
    assert [t["owner_voice"] for t in result["turns"]] == [True, False, False]
    assert result["statement_owner_voice"] == 1
