"""Export and import of chats (issue 28 item 7; SPEC §8.12 "exports chats, and imports history
from other apps (ChatGPT, SillyTavern, Eva's own JSONL) with save-from-dialogue drafts she
reviews"; SPEC §11 "private only on request", "all or nothing").

The fixtures under tests/fixtures/chats/ are written by hand in the shape each app writes:
a ChatGPT ``conversations.json`` with a regenerated branch, a hidden system message, a tool
call and its output, an image part and a message without a time; a SillyTavern chat with its
metadata line, a swipe, a system line and two date formats; and Eva's own export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import ManualClock, Memory, MemoryConfig
from core.chat import imports as io
from core.chat.chats import Chats
from core.chat.export import export_chats
from core.chat.transcript import Transcript
from tests.chat_kit import tui_message

T0 = 1_780_000_000.0
FIX = Path(__file__).parent / "fixtures" / "chats"


@pytest.fixture
def mem():
    m = Memory.open(":memory:", MemoryConfig(), ManualClock(T0))
    yield m
    m.close()


def texts(chat: io.ImportedChat) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in chat.messages]


# ---------------------------------------------------------------------------- reading formats
def test_chatgpt_export_follows_the_branch_the_owner_saw():
    """ChatGPT's mapping tree is followed from current_node up its parents: the regenerated
    answer is not imported; system, tool and hidden messages are skipped and counted; an image
    part is left out of the words; a message without a time takes the one before it."""
    plan = io.parse_file(FIX / "chatgpt_conversations.json", T0)
    assert plan.format == io.CHATGPT and plan.format_name == "ChatGPT export (conversations.json)"
    pies, trip = plan.chats
    assert pies.title == "Рецепт пирожков" and trip.title == "Trip to Tbilisi"
    assert [r for r, _ in texts(pies)] == ["user", "assistant", "user", "assistant"]
    assert "earlier answer" not in json.dumps(texts(pies))
    assert texts(pies)[2] == ("user", "Вот что получилось!")
    assert texts(pies)[3] == ("assistant", "Выглядят отлично! Румяные.")
    assert pies.messages[3].created_at == pies.messages[2].created_at == 1714558100.0
    assert (plan.skipped, plan.times_guessed, plan.messages) == (3, 1, 6)
    assert all(m.private for c in plan.chats for m in c.messages)


def test_sillytavern_chat_reads_metadata_roles_and_dates():
    plan = io.parse_file(FIX / "sillytavern_chat.jsonl", T0)
    assert plan.format == io.SILLYTAVERN
    [chat] = plan.chats
    assert chat.title == "Seraphina · 2024-06-05"
    assert [r for r, _ in texts(chat)] == ["assistant", "user", "assistant", "user"]
    assert texts(chat)[2][1] == "How wonderful. Your grandmother would be proud."  # the swipe
    assert plan.skipped == 1  # the system line
    assert chat.messages[0].created_at == 1717626600.0  # "June 5, 2024 10:30pm"
    assert chat.messages[3].created_at == 1717665302.0  # "2024-6-6 @09h 15m 02s 120ms"


def test_eva_export_reads_flags_status_and_iso_times():
    plan = io.parse_file(FIX / "eva_chats.jsonl", T0)
    assert plan.format == io.EVA
    cat, club = plan.chats
    assert (cat.title, cat.persona, len(cat.messages)) == ("Кот и ветеринар", "default", 2)
    assert club.persona == "bookclub" and not any(m.private for m in club.messages)
    assert club.messages[1].status == "stopped"
    assert "\u2028" in club.messages[1].content  # kept inside the text, not a line break
    assert club.messages[0].created_at == 1779955200.0


@pytest.mark.parametrize(
    "text, where, why",
    [
        # Eva's JSON Lines
        (
            '{"eva_chats": 1}\n{"type": "chat", "id": 1}\n{"type": "message", "chat": 1, '
            '"role": "system", "content": "x", "created_at": 1}\n',
            "line 3",
            "role must be",
        ),
        (
            '{"type": "chat", "id": 1}\n{"type": "message", "chat": 2, "role": "user", '
            '"content": "x", "created_at": 1}\n',
            "line 2",
            "no earlier chat line",
        ),
        (
            '{"type": "chat", "id": 1}\n{"type": "message", "chat": 1, "role": "user", '
            '"content": "x", "created_at": 99999999999999}\n',
            "line 2",
            "out of range",
        ),
        (
            '{"type": "chat", "id": 1}\n{"type": "message", "chat": 1, "role": "user", '
            '"content": "x", "created_at": 1, "privat": true}\n',
            "line 2",
            "unknown field",
        ),
        ('{"type": "chat", "id": 1}\n\n{not json\n', "line 3", "not JSON"),
        ('{"eva_chats": 2}\n', "line 1", "not one this Eva reads"),
        # SillyTavern
        (
            '{"user_name": "A", "character_name": "B"}\n{"name": "A", "is_user": true}\n',
            "line 2",
            "needs mes",
        ),
        ('{"user_name": "A", "character_name": "B"}\n{"mes": 5}\n', "line 2", "must be text"),
        (
            '{"user_name": "A", "character_name": "B"}\n{"mes": "hi", "is_user": "yes"}\n',
            "line 2",
            "is_user must be",
        ),
        # ChatGPT
        (
            '[{"title": "T", "mapping": {"a": {"message": null, "parent": "zz"}}, '
            '"current_node": "a"}]',
            "conversation 1 (“T”)",
            "parent 'zz' is not a node",
        ),
        ('[{"title": "T", "mapping": {}, "current_node": "q"}]', "conversation 1", "current_node"),
        (
            '[{"title": "Loop", "mapping": {"a": {"parent": "b"}, "b": {"parent": "a"}}, '
            '"current_node": "a"}]',
            "conversation 1",
            "loops",
        ),
        ('[{"title": "T"}]', "conversation 1", "no mapping"),
        ('[\n{"title": "T",\n "mapping": {,}}]', "line 3", "not JSON"),
    ],
)
def test_a_bad_line_is_named_and_refuses_the_whole_file(text, where, why):
    """Issue 28 item 7: every line is checked before anything is written; a bad one is
    reported with its place and reason."""
    with pytest.raises(io.ChatImportRefused) as e:
        io.parse(text, T0)
    assert e.value.problems[0][0].startswith(where), e.value.problems
    assert why in e.value.problems[0][1]
    assert str(e.value).startswith("nothing was imported")


def test_an_unknown_file_or_a_memory_export_is_named_as_such():
    for text in ("", "just some notes\n", '{"content": "a memory"}\n', "42\n"):
        with pytest.raises(io.ChatImportRefused, match="not a chat file Eva reads|empty"):
            io.parse(text, T0)
    with pytest.raises(io.ChatImportRefused, match="eva import FILE"):
        io.parse('{"eva_export": 1, "records": 0}\n', T0)


# ---------------------------------------------------------------------------- writing
def test_an_import_writes_searchable_private_chats_to_review(mem):
    """The chats land with their titles, order and times; their messages are found by search,
    only where private memory is visible (what the owner said elsewhere is hers); every
    imported chat waits for the owner's review of drafts, batch by batch."""
    plan = io.parse_file(FIX / "chatgpt_conversations.json", T0)
    chats, tr = mem.attach(Chats), mem.attach(Transcript)
    ids, moved = chats.import_chats(plan.chats, plan.format, T0)
    assert moved == 0 and len(ids) == 2
    pies = chats.get(ids[0])
    assert (pies.title, pies.messages, pies.imported_from) == ("Рецепт пирожков", 4, "chatgpt")
    assert pies.created_at == 1714557601.0 and pies.updated_at == 1714558100.0
    history = tr.chat_history(ids[0])
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert len({m.turn_id for m in history}) == 2  # a question and its answer are one turn
    assert [h.chat_id for h in tr.search("пирожок")] == [ids[0]]
    assert tr.search("пирожок", sees_private=False) == []
    assert [c.id for c in chats.to_review()] == ids
    assert pies.review_from == history[0].id
    chats.reviewed(ids[0], history[1].id)
    assert chats.get(ids[0]).review_from == history[2].id
    chats.reviewed(ids[0], history[-1].id)
    assert [c.id for c in chats.to_review()] == [ids[1]]


def test_an_unknown_persona_goes_to_the_default_one(mem):
    plan = io.parse_file(FIX / "eva_chats.jsonl", T0)
    ids, moved = mem.attach(Chats).import_chats(plan.chats, plan.format, T0)
    assert moved == 1 and mem.attach(Chats).get(ids[1]).persona == "default"


def test_a_failure_while_writing_writes_nothing(mem):
    """SPEC §11: one transaction. The second chat fails while being written: the first one,
    already inserted, is rolled back with it."""
    plan = io.parse_file(FIX / "chatgpt_conversations.json", T0)
    plan.chats[1].title = "x" * 500  # refused by the store's own title check, mid-write
    chats = mem.attach(Chats)
    with pytest.raises(ValueError):
        chats.import_chats(plan.chats, plan.format, T0)
    assert chats.list() == [] and mem.attach(Transcript).search("пирожок") == []


# ---------------------------------------------------------------------------- export
def _chat(mem: Memory, title: str, lines: list[tuple[str, str, bool]]) -> int:
    chats, tr = mem.attach(Chats), mem.attach(Transcript)
    c = chats.create("default", "tui", T0, title).id
    for k, (role, text, private_ok) in enumerate(lines):
        tui_message(
            tr, f"t{c}-{k // 2}", role, text, chat_id=c, at=T0 + k, tokens=3, private_ok=private_ok
        )
    return c


def test_export_leaves_private_messages_out_unless_asked_and_round_trips(mem, tmp_path):
    """Issue 28 item 7, SPEC §11 (private only on request): messages written where private
    memory was visible leave only with ``private``, and the export says how many stayed; a
    chat with nothing left is left out whole (its title says something too). With ``private``
    the JSON Lines export imports back into another store as it was."""
    secret = _chat(
        mem,
        "Diagnosis",
        [("user", "My diagnosis is zqvitrolex", True), ("assistant", "I'll keep it private", True)],
    )
    public = _chat(
        mem,
        "Book club",
        [
            ("user", "Next book: Solaris", False),
            ("assistant", "Good pick", False),
            ("user", "And my sister Anna zqsecret comes", True),
        ],
    )
    chats, tr = mem.attach(Chats), mem.attach(Transcript)
    ex = export_chats(chats, tr, now=T0)
    text = "".join(ex.lines)
    assert (ex.chats, ex.messages, ex.private_left_out) == (1, 2, 3)
    assert "zqvitrolex" not in text and "Diagnosis" not in text and "zqsecret" not in text
    assert "Solaris" in text
    md = "".join(export_chats(chats, tr, "md", now=T0).lines)
    assert "zqvitrolex" not in md and "3 messages written where private memory was visible" in md
    full = export_chats(chats, tr, private=True, now=T0)
    assert full.private_left_out == 0 and full.messages == 5
    one = export_chats(chats, tr, chat_id=secret, private=True, now=T0)
    assert one.chats == 1 and "Solaris" not in "".join(one.lines)
    with Memory.open(":memory:", MemoryConfig(), ManualClock(T0)) as other:
        plan = io.parse("".join(full.lines), T0)
        assert plan.format == io.EVA
        ids, _ = other.attach(Chats).import_chats(plan.chats, plan.format, T0)
        otr = other.attach(Transcript)
        for new, old in zip(ids, (secret, public), strict=True):
            assert other.attach(Chats).get(new).title == chats.get(old).title
            got = [(m.role, m.content, m.created_at) for m in otr.chat_history(new)]
            assert got == [(m.role, m.content, m.created_at) for m in tr.chat_history(old)]
        assert otr.search("solaris", sees_private=False)  # its flag came along
        assert not otr.search("zqvitrolex", sees_private=False)
    with pytest.raises(ValueError, match="format"):
        export_chats(chats, tr, "csv", now=T0)


# ---------------------------------------------------------------------------- the commands
def _cli_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_MEMORY__EMBEDDING_MODEL", "none")


def test_eva_import_chats_and_export_chats_commands(tmp_path, monkeypatch, capsys):
    """`eva import --chats FILE` names the format, shows what it holds and writes it (or, with
    --dry-run, nothing); a bad file exits 1 with the line, and no store is made;
    `eva export --chats` writes JSON Lines or Markdown, private messages only with --private,
    one chat with --chat ID."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user_name": "A", "character_name": "B"}\n{"mes": "ok"}\n{"mes": 1}\n')
    assert cli.main(["--data", str(data), "import", "--chats", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "nothing was imported (SillyTavern chat (.jsonl))" in err and "line 3:" in err
    assert not (data / "memory.db").exists()
    gpt = str(FIX / "chatgpt_conversations.json")
    assert cli.main(["--data", str(data), "import", "--chats", gpt, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "ChatGPT export (conversations.json): 2 chats, 6 messages" in out
    assert "dry run: nothing was written" in out and not (data / "memory.db").exists()
    assert cli.main(["--data", str(data), "import", "--chats", gpt]) == 0
    out = capsys.readouterr().out
    assert "imported 2 chats with 6 messages" in out and "Draft memories from imported" in out
    assert cli.main(["--data", str(data), "export", "--chats"]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out.splitlines()[0])["chats"] == 0
    assert "6 messages written where private memory was visible were left out" in got.err
    assert (
        cli.main(
            ["--data", str(data), "export", "--chats", "--private", "--format", "md", "--chat", "2"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Trip to Tbilisi" in out and "пирожки" not in out
    assert cli.main(["--data", str(data), "export", "--chats", "--chat", "99"]) == 1
    assert "no chat #99" in capsys.readouterr().err
    assert cli.main(["--data", str(data), "export", "--chats", "--include-archive"]) == 2
    capsys.readouterr()
    # a chat file given to the memory import is named for what it is, and nothing is read in
    for fixture in ("sillytavern_chat.jsonl", "chatgpt_conversations.json", "eva_chats.jsonl"):
        assert cli.main(["--data", str(data), "import", str(FIX / fixture)]) == 2
        assert "holds chats, not memories: `eva import --chats" in capsys.readouterr().err
    assert cli.main(["--data", str(data), "import", str(FIX / "eva_chats.jsonl"), "--dry-run"]) == 2
    capsys.readouterr()
