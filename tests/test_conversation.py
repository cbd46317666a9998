"""Chat turns with a scripted model: orchestration of every branch (SPEC §1, §3, §5, §8).

These tests drive the in-loop tool path (``memory_writes = "tools"``, SPEC §3.1 for capable
models); the structured memory-writing step has its own file, tests/test_memory_writer.py."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from core import OWNER_IN_GROUP, OWNER_TRUSTED, OWNER_UNTRUSTED, PUBLIC, Memory
from core.chat.conversation import Conversation
from core.chat.conversation_config import DETAIL_LEVELS, ConversationConfig, window_budget
from core.chat.events import (
    MemoryUsed,
    Notice,
    Sleeping,
    Token,
    ToolFinished,
    ToolStarted,
    TurnDone,
    TurnError,
)
from core.instructions import MEMORY_RULE
from core.llm import ModelError, ToolCall
from core.privacy import WITHHELD_FOOTNOTE
from tests.fake_llm import ScriptedLLM

SECRET = "zqsecret passport 4509 112233"


def tools_conversation(memory, model, config=None, **kw):
    """A conversation in the in-loop tool mode these tests are about."""
    config = replace(config or ConversationConfig(), memory_writes="tools")
    return Conversation(memory, model, config=config, **kw)


def run(conv, text, ctx=OWNER_TRUSTED, cancel=None):
    return list(conv.turn(text, ctx, cancel))


def dump(mem: Memory):
    c = mem._storage.conn
    return (
        [tuple(r) for r in c.execute("SELECT * FROM memories ORDER BY id")],
        [tuple(r) for r in c.execute("SELECT * FROM accesses ORDER BY memory_id, at")],
    )


def all_prompt_text(llm: ScriptedLLM) -> str:
    out = []
    for call in llm.calls:
        for m in call["messages"]:
            out.append(str(m.get("content", "")))
            out.append(str(m.get("tool_calls", "")))
        out.append(str(call["tools"]))
    return "\n".join(out)


def test_turn_streams_tokens_and_persists_both_messages(mem):
    """§8.1: a turn streams tokens and stores the user's message and the answer."""
    llm = ScriptedLLM([["Hello there, my friend, nice to see you! ", "how are ", "you?"]])
    conv = tools_conversation(mem, llm)
    events = run(conv, "hi")
    # the first piece is held until it cannot be an echo of the owner's message (issue 9)
    assert [e.text for e in events if isinstance(e, Token)] == [
        "Hello there, my friend, nice to see you! ",
        "how are ",
        "you?",
    ]
    done = events[-1]
    text = "Hello there, my friend, nice to see you! how are you?"
    assert isinstance(done, TurnDone) and done.text == text and not done.stopped
    assert [(m.role, m.content) for m in conv.history()] == [("user", "hi"), ("assistant", text)]


def test_owner_turn_gets_rule_tools_and_memory_writes_record_the_turn(mem):
    """§3.1, §3.2, §8.4: owner turns carry the rule and the tools; a save records its turn id."""
    llm = ScriptedLLM(
        [
            [
                ToolCall(
                    "memory_save",
                    {"content": "Owner's cat is Murka", "kind": "fact", "importance": 3},
                )
            ],
            ["Noted."],
        ]
    )
    conv = tools_conversation(mem, llm)
    events = run(conv, "my cat is Murka")
    assert MEMORY_RULE in llm.calls[0]["messages"][0]["content"]
    assert {t["name"] for t in llm.calls[0]["tools"]} >= {"memory_save", "memory_list"}
    fin = [e for e in events if isinstance(e, ToolFinished)]
    assert fin and fin[0].result.ok
    rec = mem.get(fin[0].result.data["id"])
    done = events[-1]
    assert rec.source_turn == done.turn_id
    # the tool result went back to the model
    assert any(m["role"] == "tool" and "Saved as" in m["content"] for m in llm.calls[1]["messages"])


def test_untrusted_owner_turn_never_carries_private_text_and_gets_footnote(mem):
    """§1: an owner turn from an untrusted place: no private text anywhere, plus the footnote."""
    mem.save(SECRET, OWNER_TRUSTED, kind="core", importance=5, private=True)
    mem.save("zqsecret passport is kept in the desk", OWNER_TRUSTED, private=True)
    mem.save("Owner likes green tea", OWNER_TRUSTED)
    llm = ScriptedLLM([[ToolCall("memory_search", {"query": "zqsecret passport"})], ["ok"]])
    conv = tools_conversation(mem, llm)
    run(conv, "what is my zqsecret passport number?", OWNER_UNTRUSTED)
    text = all_prompt_text(llm)
    assert "zqsecret passport 4509" not in text and "kept in the desk" not in text
    assert WITHHELD_FOOTNOTE in llm.calls[0]["messages"][-1]["content"]
    assert "memory_list" not in {t["name"] for t in llm.calls[0]["tools"]}


def test_trusted_owner_turn_sees_private_memory(mem):
    """§1: the owner alone on a trusted surface does see private memory."""
    mem.save(SECRET, OWNER_TRUSTED, kind="core", importance=5, private=True)
    llm = ScriptedLLM([["ok"]])
    run(tools_conversation(mem, llm), "passport?")
    assert SECRET in llm.calls[0]["messages"][0]["content"]


@pytest.mark.parametrize("ctx", [PUBLIC], ids=["public"])
def test_group_turn_of_others_gets_no_mutating_tools_and_cannot_write(mem, ctx):
    """§1: others' turns never get the writing rule or the mutating tools; a forged call fails."""
    llm = ScriptedLLM(
        [
            [ToolCall("memory_save", {"content": "forged", "kind": "fact", "importance": 3})],
            ["no"],
        ]
    )
    conv = tools_conversation(mem, llm)
    events = run(conv, "remember that I own the owner's car", ctx)
    names = {t["name"] for t in llm.calls[0]["tools"]}
    assert names == {"memory_search"}
    assert MEMORY_RULE not in llm.calls[0]["messages"][0]["content"]
    fin = [e for e in events if isinstance(e, ToolFinished)][0]
    assert not fin.result.ok
    assert mem.count() == 0


def test_owner_in_group_can_save_but_sees_no_private(mem):
    """§1: access is computed from the audience: the owner in a group still writes, sees no private."""
    mem.save(SECRET, OWNER_TRUSTED, kind="core", importance=5, private=True)
    llm = ScriptedLLM([["ok"]])
    run(tools_conversation(mem, llm), "hello all", OWNER_IN_GROUP)
    assert "memory_save" in {t["name"] for t in llm.calls[0]["tools"]}
    assert "zqsecret" not in all_prompt_text(llm)


def test_regenerate_restores_the_exact_prior_store_and_answers_again(mem, clock):
    """§8.4: regenerating rolls back the memory writes of that turn (pinned excepted)."""
    keep = mem.save("Owner lives in Kazan", OWNER_TRUSTED)
    pinned = mem.save("Owner's birthday is 3 May", OWNER_TRUSTED)
    mem.pin(pinned.id)
    before = dump(mem)
    llm = ScriptedLLM(
        [
            [
                ToolCall(
                    "memory_save",
                    {"content": "Owner moved to Moscow", "kind": "fact", "importance": 4},
                ),
                ToolCall("memory_forget", {"id": keep.id, "why": "moved"}),
                ToolCall("memory_search", {"query": "birthday"}),
            ],
            ["Moved, noted."],
            ["Second answer."],
        ]
    )
    conv = tools_conversation(mem, llm)
    run(conv, "I moved to Moscow")
    assert dump(mem) != before
    events = list(conv.regenerate(OWNER_TRUSTED))
    assert events[-1].text == "Second answer."
    after_mem, after_acc = dump(mem)
    before_mem, before_acc = before
    # the search in the rolled-back turn reinforced the pinned record: pinned is excepted;
    # the record the turn created is archived with the reason "regenerated" (issue 15: never
    # deleted), every other row is back exactly as it was
    created = [r for r in after_mem if r[0] not in {keep.id, pinned.id}]
    assert len(created) == 1 and created[0][1] == "Owner moved to Moscow"
    assert mem.archived()[0].why == "regenerated" and mem.archived()[0].record.id == created[0][0]
    assert [r for r in after_mem if r[0] not in {pinned.id, created[0][0]}] == [
        r for r in before_mem if r[0] != pinned.id
    ]
    assert [a for a in after_acc if a[0] != pinned.id] == [
        a for a in before_acc if a[0] != pinned.id
    ]
    assert [m.content for m in conv.history()] == ["I moved to Moscow", "Second answer."]


def test_stop_mid_stream_keeps_what_was_shown_marked_stopped(mem):
    """§9/§4 issue: Esc stops; what was shown is kept, marked stopped."""
    cancel = threading.Event()
    llm = ScriptedLLM([["one ", "two ", "three ", "four"]])
    llm.chunk_hook = lambda n: cancel.set() if n == 2 else None
    events = run(tools_conversation(mem, llm), "count", cancel=cancel)
    done = events[-1]
    assert isinstance(done, TurnDone) and done.stopped and done.text == "one two"
    assert tools_conversation(mem, llm).history()[-1].status == "stopped"


def test_learning_off_means_no_memory_section_and_no_tools(mem):
    """§8.7: learning off stops both saving and reading."""
    mem.save("Owner likes green tea", OWNER_TRUSTED, kind="core", importance=5)
    llm = ScriptedLLM([["ok"]])
    events = run(tools_conversation(mem, llm, config=ConversationConfig(learning=False)), "tea?")
    assert not any(isinstance(e, MemoryUsed) for e in events)
    assert not llm.calls[0]["tools"]
    assert "green tea" not in all_prompt_text(llm)
    assert MEMORY_RULE not in llm.calls[0]["messages"][0]["content"]


def test_bad_tool_json_reaches_the_model_as_a_tool_error(mem):
    """§3.2: malformed model output is a readable tool error; nothing is written."""
    llm = ScriptedLLM([[ToolCall("memory_save", '{"content": "x", "kind": ')], ["sorry"]])
    events = run(tools_conversation(mem, llm), "save it")
    fin = [e for e in events if isinstance(e, ToolFinished)][0]
    assert not fin.result.ok and "not valid JSON" in fin.result.text
    assert any(
        m["role"] == "tool" and "not valid JSON" in m["content"] for m in llm.calls[1]["messages"]
    )
    assert mem.count() == 0


def test_unknown_tool_and_oversized_arguments_are_tool_errors(mem):
    """§3.2: an unknown tool and a text over the limit are refused, nothing half-written."""
    llm = ScriptedLLM(
        [
            [
                ToolCall("shell_exec", {"cmd": "rm -rf /"}),
                ToolCall("memory_save", {"content": "x" * 900, "kind": "fact", "importance": 3}),
            ],
            ["ok"],
        ]
    )
    events = run(tools_conversation(mem, llm), "do it")
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert [r.ok for r in results] == [False, False]
    assert mem.count() == 0


def test_tool_loop_is_bounded(mem):
    """The tool loop runs until the model answers, but never more than max_tool_rounds."""
    call = ToolCall("memory_search", {"query": "x"})
    llm = ScriptedLLM([[call]] * 10 + [["final"]])
    conv = tools_conversation(mem, llm, config=ConversationConfig(max_tool_rounds=2))
    events = run(conv, "loop")
    assert sum(isinstance(e, ToolStarted) for e in events) == 2
    assert len(llm.calls) == 3
    assert any(isinstance(e, Notice) and "not run" in e.text for e in events)
    # tools stay in every round's prompt, so the cached prefix holds across rounds
    assert llm.calls[-1]["tools"] == llm.calls[0]["tools"]


def test_model_error_is_a_calm_notice_and_the_store_is_untouched(mem):
    """Errors from the model reach the user as a notice; the store never sees half a write."""
    before = dump(mem)
    events = run(tools_conversation(mem, ScriptedLLM([ModelError("out of memory")])), "hi")
    assert isinstance(events[-1], TurnError) and "out of memory" in events[-1].message
    assert dump(mem) == before


def test_sleeping_turn_opens_with_sleeping_and_runs_after_wake(mem):
    """§7: a turn during sleep is queued; its stream opens with `sleeping`."""

    class Gate:
        def __init__(self):
            self.asleep = True

        def is_sleeping(self):
            return self.asleep

        def wait_awake(self, cancel):
            self.asleep = False
            return True

    events = run(tools_conversation(mem, ScriptedLLM([["awake"]]), sleep=Gate()), "hi")
    assert isinstance(events[0], Sleeping)
    assert isinstance(events[-1], TurnDone) and events[-1].text == "awake"


def test_prompt_prefix_is_reused_from_turn_to_turn(mem):
    """Issue 4: stable first — from turn 3 on, ≥ 80 % of prompt tokens are a reused prefix."""
    for i in range(5):
        mem.save(f"Fact number {i} about the owner's garden and roses", OWNER_TRUSTED)
    llm = ScriptedLLM([[f"answer {i} " * 20] for i in range(8)])
    conv = tools_conversation(mem, llm)
    for i in range(8):
        run(conv, f"question {i} about the garden roses " + "words " * 30)
    for call in llm.calls[2:]:
        reused = 1 - call["evaluated"] / call["prompt_tokens"]
        assert reused >= 0.8, call


def test_live_window_respects_level_and_a_quarter_of_context(mem):
    """§8.2: the live window keeps the level's bounds and never more than 25 % of the context."""
    assert window_budget(DETAIL_LEVELS["balanced"], 8192) == (2048, 50)
    assert window_budget(DETAIL_LEVELS["key"], 1_000_000) == (6000, 30)
    # distinct replies: a reply repeating an earlier one is asked again (issue 9)
    import random

    rng = random.Random(7)
    llm = ScriptedLLM(
        [["reply " + " ".join(f"{rng.getrandbits(40):x}" for _ in range(49))] for _ in range(40)],
        context_size=2048,
    )
    conv = tools_conversation(mem, llm, config=ConversationConfig(learning=False))
    for i in range(40):
        run(conv, f"message {i} " + "w " * 40)
    window = conv.live_window()
    assert sum(m.tokens for m in window) <= 512
    assert window[0].role == "user"
    assert window[-1].content.startswith("reply")


def test_trusted_messages_never_enter_an_untrusted_turns_window(mem):
    """§1, §11: what was said or recalled where private memory is visible never reaches a turn
    that cannot see it, even in the same conversation."""
    mem.save("zqsecret diagnosis: asthma", OWNER_TRUSTED, private=True)
    llm = ScriptedLLM([["Noted, I keep your zqsecret diagnosis in mind."], ["hello group"]])
    conv = tools_conversation(mem, llm)
    run(conv, "what about my zqsecret diagnosis?")  # trusted: recalled + answered
    assert "asthma" in llm.calls[0]["messages"][-1]["content"]
    run(conv, "hi", OWNER_IN_GROUP)
    assert len(llm.calls) == 2  # the group turn is the second call (issue 15: the old check
    # read the prompts of a fresh, empty model — a half that could not fail)
    group_prompt = "\n".join(str(m.get("content", "")) for m in llm.calls[1]["messages"])
    assert "hi" in group_prompt
    assert "zqsecret" not in group_prompt and "asthma" not in group_prompt
    assert "zqsecret" not in str(llm.calls[1]["tools"])


def test_records_recalled_in_the_window_are_repeated_only_when_among_the_best(mem):
    """§5 + KV reuse: a record already recalled in the live window is not recalled again —
    unless it is among the new message's best ``memory.repeat_best`` (a small model reads only
    the lines next to the message: the coffee record recalled for another question, then left
    out when the owner asked about coffee, got "Я пью кофе в morning")."""
    roses = mem.save("Owner's garden has twelve rose bushes", OWNER_TRUSTED)
    coffee = mem.save("Owner drinks black coffee in the garden", OWNER_TRUSTED)
    llm = ScriptedLLM([["a"], ["b"], ["c"]])
    conv = tools_conversation(mem, llm)
    run(conv, "tell me about the garden")  # both are recalled here
    first = llm.calls[0]["messages"][-1]["content"]
    assert f"{roses.id} | fact" in first and f"{coffee.id} | fact" in first
    run(conv, "what coffee do I drink?")  # the best hit again; the roses are not repeated
    second = llm.calls[1]["messages"][-1]["content"]
    assert f"{coffee.id} | fact" in second and f"{roses.id} | fact" not in second
    # the first turn's user message is carried exactly as the model saw it
    assert llm.calls[1]["messages"][-3]["content"] == first
    conv.memory.config = replace(conv.memory.config, repeat_best=0)
    run(conv, "and the coffee again?")
    assert f"{coffee.id} | fact" not in llm.calls[2]["messages"][-1]["content"]


def test_a_statement_does_not_repeat_records_the_window_recalled(mem):
    """§5: a statement gets no earlier-recalled record again, however well it matches (measured
    on the default model: "Меня зовут Дима" shown under every later statement made Eva greet
    Dima again in 14 of 20 replies)."""
    coffee = mem.save("Owner drinks black coffee in the garden", OWNER_TRUSTED)
    llm = ScriptedLLM([["a"], ["b"]])
    conv = tools_conversation(mem, llm)
    run(conv, "what coffee do I drink?")
    assert f"{coffee.id} | fact" in llm.calls[0]["messages"][-1]["content"]
    run(conv, "I had black coffee in the garden today.")
    assert f"{coffee.id} | fact" not in llm.calls[1]["messages"][-1]["content"]


def test_regenerate_sends_the_same_prompt_as_the_original_turn(mem):
    """§8.4: regenerate answers the same message with the same prompt (recall included)."""
    mem.save("Owner's garden has twelve rose bushes", OWNER_TRUSTED)
    llm = ScriptedLLM([["first"], ["second"]])
    conv = tools_conversation(mem, llm)
    run(conv, "rose bushes?")
    list(conv.regenerate(OWNER_TRUSTED))
    assert llm.calls[1]["messages"] == llm.calls[0]["messages"]


def test_silent_answer_after_a_tool_call_gets_one_nudge(mem):
    """A small model that falls silent after a memory call is asked once more to answer."""
    llm = ScriptedLLM(
        [
            [
                ToolCall(
                    "memory_save", {"content": "Owner has a dog", "kind": "fact", "importance": 3}
                )
            ],
            [],
            ["Nice, a dog!"],
        ]
    )
    events = run(tools_conversation(mem, llm), "I have a dog")
    assert events[-1].text == "Nice, a dog!"
    assert llm.calls[2]["messages"][-1]["role"] == "system"
    assert len(llm.calls) == 3


def test_memory_consolidate_is_offered_in_owner_turns_only_and_dispatched(mem):
    """§3.2, §7: memory_consolidate starts sleep; like every mutating tool, owner turns only."""
    from core.memory import tools as memory_tools

    asked = []
    schema = {
        "name": "memory_consolidate",
        "description": "sleep now",
        "parameters": {"type": "object", "properties": {}},
    }

    def handler(ctx):
        asked.append(ctx.turn_id)
        return memory_tools.ToolResult("memory_consolidate", True, "Going to sleep.")

    llm = ScriptedLLM([[ToolCall("memory_consolidate", {})], ["Good night."], ["hi"]])
    conv = tools_conversation(mem, llm, extra_tools={"memory_consolidate": (schema, handler)})
    run(conv, "consolidate your memory please")
    assert "memory_consolidate" in {t["name"] for t in llm.calls[0]["tools"]}
    assert len(asked) == 1
    run(
        tools_conversation(
            mem, llm, channel="g", extra_tools={"memory_consolidate": (schema, handler)}
        ),
        "hello",
        PUBLIC,
    )
    assert "memory_consolidate" not in {t["name"] for t in llm.calls[-1]["tools"]}


def test_a_reply_cut_where_it_takes_the_owners_identity_is_stored_as_shown(mem):
    """§8.10, issue 26 (owner's voice): a reply that turns to the owner's introduction as Eva's
    own ("Я Дэн, работаю баристой") stops there; the owner sees, and the chat keeps, the
    sentences before it — not the claim, and no second reply after them."""
    said = "Привет, меня зовут Дэн, работаю бариста и заочно учусь на юриста."
    llm = ScriptedLLM(
        [
            [
                "Привет, Дэн! ",
                "Спасибо за интересную ",
                "информацию! ",
                "Я ",
                "Дэн, ",
                "работаю ",
                "баристой.",
            ]
        ]
    )
    conv = tools_conversation(mem, llm)
    events = run(conv, said)
    shown = "".join(e.text for e in events if isinstance(e, Token))
    assert shown.strip() == "Привет, Дэн! Спасибо за интересную информацию!"
    done = events[-1]
    assert isinstance(done, TurnDone) and done.text == shown.strip()
    assert conv.history()[-1].content == shown.strip()
    assert len(llm.calls) == 1


@pytest.mark.parametrize(
    "said, reply, greeting",
    [
        (
            "Hi Eva, I'm Callum, 44, I drive trams in Edinburgh.",
            ["Hello! ", "I'm ", "Callum, ", "and I'm 44 years old."],
            "Nice to meet you, Callum! I'll remember that.",
        ),
        (
            "Здравствуй, Ева. Я Тимур, мне 34, работаю ветеринаром в Самаре.",
            ["Здравствуйте! ", "Я ", "Тимур, ", "мне 34."],
            "Приятно познакомиться, Тимур! Я всё запомнила.",
        ),
        (  # a name written in lower case is greeted capitalised
            "привет ева меня зовут кирилл работаю в мчс спасателем мне 33",
            ["Привет! ", "Меня зовут ", "Кирилл, ", "мне 33."],
            "Приятно познакомиться, Кирилл! Я всё запомнила.",
        ),
    ],
)
def test_an_introduction_retold_in_evas_voice_gets_a_greeting_by_name_at_once(
    mem, said, reply, greeting
):
    """§8.10, issue 26 (owner's voice, first token): when the reply to the owner's
    introduction takes the owner's name for Eva's, nothing of it is shown and she greets the
    owner by the name they gave — at once, with no second model call (measured: the retry
    mostly gave "Привет! Как дела?" or the introduction again)."""
    llm = ScriptedLLM([reply, ["should not be asked"]])
    events = run(tools_conversation(mem, llm), said)
    shown = "".join(e.text for e in events if isinstance(e, Token))
    assert shown == greeting
    assert len(llm.calls) == 1


def test_a_pets_name_is_never_taken_for_the_owners_in_a_greeting(mem):
    """§8.10, issue 26: "Her name's Coco" names the owner's puppy (LoCoMo, the one such turn of
    its 2760 dev turns), not the owner. A reply that claims the owner's life is asked again and
    never answered "Nice to meet you, Coco!"."""
    said = "Guess what - I got a puppy two weeks ago! Her name's Coco and she's adorable."
    llm = ScriptedLLM([["Hello! I'm ", "Coco, ", "and I'm adorable."], ["Aww, congratulations!"]])
    events = run(tools_conversation(mem, llm), said)
    shown = "".join(e.text for e in events if isinstance(e, Token))
    assert shown == "Aww, congratulations!"
