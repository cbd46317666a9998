"""The memory step on a labelled set of owner messages (issue 26): what it keeps, what it drops.

    python -m bench.memory_step [--split dev|test|all] [--lang en|ru|all] [--limit N]
                                [--gate-only] [--gate NAME] [--reply canned|generated]
                                [--model NAME_OR_GGUF] [--threads N]
                                [--embedder usem3+minilm|usem3|none] [--data FILE ...]
                                [--items all|misses|none]

The data (``bench/data/memory_step_*.json``; both languages unless ``--data`` names files) is a
list of owner messages, each labelled with what must be kept (``keep``: groups of alternatives,
lowercase substrings of the saved text; ``[]`` = nothing), the importance a careful person
would give it, and optionally which stored memory it corrects (``corrects``) or asks to forget
(``forget``). Each item has a ``split``: ``dev`` for choosing and tuning, ``test`` never tuned
on; every figure is printed for both splits and overall, and ``by_category``.

Each item runs on a fresh store with a manual clock: its ``before`` memories are saved as the
owner's (two days earlier), then ``say`` is one owner turn of
:class:`core.chat.conversation.Conversation` — the real turn, so the memory step sees what it sees
in the app (the prompt with the recalled memories, the reply, the related records, the core
ids). Then the store is compared with the ``before``: new records, befores whose content changed
(updated), befores archived.

``--reply`` chooses what the reply is:

- ``generated`` (default): the reply is generated as in the app (capped at 120 tokens), then the
  memory step's JSON call continues the reply's KV cache, as in the app.
- ``canned``: the reply is a short canned line ("Mm, I see.") and only the step runs on the
  model. Meant as the cheap mode, it measured slower: the step's call then evaluates the turn's
  prompt itself, and under load it hit the step's 120 s timeout.

Measured (issue 26) on the same 5 dev items (en-001, -026, -061, -086, -106; the fact gate stops
two), default model, 2 threads, on a machine shared with other model runs (load average 8-11
on 2 cores): ``canned`` 51 and 61 s per message in two runs (the step alone 70-125 s where it
ran; en-001 and en-026 timed out in the second run and kept nothing); ``generated`` 25.5 s per
message (the step 18-41 s where it ran, the reply 4-13 s), all three facts kept. So
``generated`` is the default: closest to the app, and not slower.

``--gate-only`` runs no model at all: it evaluates the fact gate ("may this message carry a
fact") on every item — for choosing the gate by its numbers. Gates are pluggable: ``GATES``
maps a name to a factory ``make(ctx: GateContext) -> Callable[[str], bool]``; ``ctx`` gives the
embedder (loaded on first use) and the dev items (for a gate that learns, never the test split).
``--gate NAME`` also plugs the gate into the real step (``MemoryWriter.gate``). Asking to forget
or to remember passes the step regardless of the gate, as in the app: ``entry_*`` figures are
that whole decision, ``gate_*`` the gate alone.

Metrics (per split, overall, by category and by language):

- ``recall``: items with something to keep from which at least one keep group is in the saved or
  updated text;
- ``small_talk_kept``: items with nothing to keep (``keep == []``) where anything was saved or a
  memory was updated;
- ``facts_kept``: the share of all keep groups found;
- ``importance_agreement``: saved records (new, of items with a labelled importance) whose
  importance is within ±1 of the label;
- ``wrong_forgets``: befores archived that the item did not name in ``forget`` (a corrected
  before may be archived: superseded);
- ``corrections_applied``: items with ``corrects`` where the old record was updated or archived,
  some keep group is in live memory, and the old record does not stay live unchanged beside it;
- ``forgets_applied``: named befores archived; ``wrong_updates``: befores rewritten that the item
  neither corrects nor forgets;
- ``private_marked``: items labelled ``private`` that kept something, every record saved or
  updated from them private (one public record is a leak); ``private_over``: items labelled not
  private that saved something private (only hidden from other audiences: the cheap mistake);
  ``private_marked_model``: the same as ``private_marked`` with only the model's flag and the
  owner's words (the records the classifier of ``core.sensitivity`` turned private left out);
- ``seconds_per_message`` (the whole turn), ``step_seconds_per_message`` (the memory step
  alone), ``model_calls`` (per message: reply rounds + step), ``step_calls``;
- ``gate``: ``gate_recall`` (keep ≠ [] items the gate lets through), ``gate_small_talk_pass``
  (keep == [] items without a forget that it lets through), and the same as ``entry_*``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import environment, peak_rss_mb
from core.chat import owner_message
from core.clock import ManualClock
from core.learned import use_vectors
from core.llm import Done, TextDelta
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED
from core.store.records import Actor, Source
from models.packaged import DEFAULT_CHAT_MODEL  # light: no model library is imported

DATA_DIR = Path(__file__).resolve().parent / "data"
DATA_GLOB = "memory_step_*.json"
CATEGORIES = (
    "introduction",
    "family_friend_pet",
    "job_place",
    "mood_with_fact",
    "plan_date",
    "promise",
    "preference",
    "health",
    "correction",
    "forget",
    "remember",
    "routine",
    "small_talk",
    "question",
    "thanks",
    "weather",
    "reaction",
)
SPLITS = ("dev", "test")
LANGS = ("en", "ru")
EMBEDDERS = ("usem3+minilm", "usem3", "none")
REPLIES = ("canned", "generated")
START = 1_780_000_000.0
DAY = 86_400.0
CANNED = {
    "en": ("Mm, I see.", "Oh, that's nice.", "Got it!"),
    "ru": ("Понятно.", "Ой, как здорово.", "Ясно!"),
}
GENERATED_TOKENS = 120


# ---------------------------------------------------------------------------- data


def load_items(paths: Iterable[str | Path] | None = None) -> list[dict[str, Any]]:
    """Every item of the data files (default: ``bench/data/memory_step_*.json``), in order."""
    files = [Path(p) for p in paths] if paths else sorted(DATA_DIR.glob(DATA_GLOB))
    items: list[dict[str, Any]] = []
    for f in files:
        items.extend(json.loads(f.read_text(encoding="utf-8"))["items"])
    return items


def check_item(item: dict[str, Any]) -> list[str]:
    """What is wrong with an item (empty: well-formed)."""
    bad: list[str] = []
    for key, kind in (
        ("id", str),
        ("lang", str),
        ("split", str),
        ("category", str),
        ("before", list),
        ("say", str),
        ("keep", list),
    ):
        if not isinstance(item.get(key), kind):
            bad.append(f"{key} missing or not {kind.__name__}")
    if bad:
        return bad
    if item["lang"] not in LANGS:
        bad.append(f"lang {item['lang']!r}")
    if item["split"] not in SPLITS:
        bad.append(f"split {item['split']!r}")
    if item["category"] not in CATEGORIES:
        bad.append(f"category {item['category']!r}")
    if not item["say"].strip():
        bad.append("empty say")
    for b in item["before"]:
        if not (
            isinstance(b, dict)
            and isinstance(b.get("content"), str)
            and b["content"].strip()
            and b.get("kind", "fact") in ("fact", "event", "core")
            and b.get("importance", 3) in (1, 2, 3, 4, 5)
        ):
            bad.append(f"bad before {b!r}")
    for g in item["keep"]:
        if not (
            isinstance(g, list)
            and g
            and all(isinstance(a, str) and a.strip() and a == a.lower() for a in g)
        ):
            bad.append(f"bad keep group {g!r}")
    imp = item.get("importance")
    if item["keep"] and imp not in (1, 2, 3, 4, 5):
        bad.append(f"importance {imp!r} for a fact")
    if not item["keep"] and imp is not None:
        bad.append("importance without a fact")
    if "private" in item and not isinstance(item["private"], bool):
        bad.append(f"private {item['private']!r} is not true/false")
    n = len(item["before"])
    c = item.get("corrects")
    if c is not None and not (isinstance(c, int) and 0 <= c < n):
        bad.append(f"corrects {c!r}")
    if c is not None and not item["keep"]:
        bad.append("a correction keeps nothing")
    f = item.get("forget")
    if f is not None and not (
        isinstance(f, list) and f and all(isinstance(i, int) and 0 <= i < n for i in f)
    ):
        bad.append(f"forget {f!r}")
    return bad


def select(
    items: Sequence[dict[str, Any]], split: str = "all", lang: str = "all", limit: int | None = None
) -> list[dict[str, Any]]:
    """Items of this split and language; ``limit`` per split, taken round-robin across the
    categories (in item order within each), so a small run still sees every category."""
    chosen = [
        it
        for it in items
        if (split == "all" or it["split"] == split) and (lang == "all" or it["lang"] == lang)
    ]
    if limit is None:
        return chosen
    out: list[dict[str, Any]] = []
    for sp in SPLITS:
        queues: dict[str, list[dict[str, Any]]] = {}
        for it in chosen:
            if it["split"] == sp:
                queues.setdefault(it["category"], []).append(it)
        taken: list[dict[str, Any]] = []
        while len(taken) < limit and any(queues.values()):
            for cat in list(queues):
                if queues[cat] and len(taken) < limit:
                    taken.append(queues[cat].pop(0))
        out.extend(taken)
    return out


def found(texts: Sequence[str], group: Sequence[str]) -> bool:
    low = [t.lower() for t in texts]
    return any(a in t for t in low for a in group)


# ---------------------------------------------------------------------------- gates


@dataclass
class GateContext:
    """What a gate factory may use: the embedder (loaded on first use) and the dev items."""

    embedder_spec: str = "usem3+minilm"
    train: list[dict[str, Any]] = field(default_factory=list)
    _embedder: Any = None

    @property
    def embedder(self) -> Any:
        if self._embedder is None and self.embedder_spec != "none":
            from bench.companion import load_embedder

            self._embedder = load_embedder(self.embedder_spec)
        return self._embedder


# The keyword gate of the app before issue 26, kept here as a candidate to measure against: a
# sentence speaking of the owner (first person), naming someone or holding a number, and not of
# the weather or the mood of the moment.
_OWNER = frozenset(
    {
        "я",
        "меня",
        "мне",
        "мной",
        "мой",
        "моя",
        "моё",
        "мое",
        "мои",
        "моего",
        "моей",
        "моим",
        "моих",
        "мы",
        "нас",
        "нам",
        "нами",
        "наш",
        "наша",
        "наше",
        "наши",
        "i",
        "i'm",
        "i’m",
        "i've",
        "i'd",
        "i'll",
        "me",
        "my",
        "mine",
        "myself",
        "we",
        "we're",
        "our",
        "ours",
        "us",
    }
)
_EVA = frozenset({"ева", "eva", "евочка"})
_CHATTER = re.compile(
    r"^(привет|здравствуй|добр|хай|пока|спасибо|благодар|ха|хе|ок|окей|ладно|угу|ага|ого|"
    r"hi|hello|hey|thanks|thank|ha|lol|ok|okay|bye|good (morning|night|evening)|cool|nice|wow)",
    re.IGNORECASE,
)
_MOMENT = re.compile(
    r"\b(погод|дожд|снег|снеж|метел|ветр|ветер|ветрен|холодн|жарк|жара|мороз|туман|гроз|"
    r"слякот|солнечн|устал|скучн|weather|rain|snow|wind|cold|hot|sunny|storm|blizzard|freez|"
    r"fog|tired|bored)",
    re.IGNORECASE,
)


def keyword_sentences(text: str) -> list[str]:
    """The sentences of a message that can tell something lasting about the owner: not a
    question, not a greeting, thanks or laughter, not about the weather or the mood of the
    moment, and speaking of the owner (first person), naming someone (a capital letter inside
    the sentence) or holding a number."""
    out = []
    for s in owner_message.sentences_of(text):  # stripped, none empty
        if s.endswith("?") or _MOMENT.search(s):
            continue
        words = owner_message._WORD.findall(s)
        if not words:
            continue
        lowered = {w.lower() for w in words}
        if lowered & _OWNER:
            out.append(s)
            continue
        if _CHATTER.match(s) and len(words) <= 4:
            continue
        named = any(w[:1].isupper() and w.lower() not in _EVA for w in words[1:])
        if named or any(ch.isdigit() for ch in s):
            out.append(s)
    return out


def keyword_gate(text: str) -> bool:
    """Whether a message can tell something lasting about the owner (see fact_sentences)."""
    return bool(keyword_sentences(text))


Gate = Callable[[str], bool]
GATES: dict[str, Callable[[GateContext], Gate]] = {
    # what the app uses (core.chat.owner_message.may_carry_a_fact: fact_sentences and the trained
    # classifier over the embedder's USE vectors; without USE vectors fact_sentences alone)
    "app": lambda ctx: (lambda embed: lambda text: owner_message.may_carry_a_fact(text, embed))(
        use_vectors(ctx.embedder)
    ),
    # the keyword gate the app used before issue 26 (keyword_gate below)
    "keywords": lambda ctx: keyword_gate,
    # every message may carry a fact: the model decides alone (the ceiling of gate recall)
    "all": lambda ctx: lambda text: True,
}
# a permissive gate: any sentence that is not a question, greeting or thanks
GATES["permissive"] = lambda ctx: lambda text: bool(owner_message.fact_sentences(text))


def _classifier(ctx: GateContext) -> Gate:
    """The trained classifier over USE vectors (core/fact_gate.json, bench/train_fact_gate.py;
    trained on dev only — its dev figures here are in-sample, the training script prints the
    cross-validated ones)."""
    gate = owner_message.fact_gate()
    embed = use_vectors(ctx.embedder)
    if gate is None or embed is None:
        raise ValueError("the classifier gate needs core/fact_gate.json and a USE embedder")
    return lambda text: bool(gate.passes(text, embed))


GATES["classifier"] = _classifier
GATES["classifier_or_app"] = lambda ctx: (lambda c: lambda text: c(text) or keyword_gate(text))(
    _classifier(ctx)
)
GATES["classifier_and_permissive"] = lambda ctx: (
    lambda c: lambda text: bool(owner_message.fact_sentences(text)) and c(text)
)(_classifier(ctx))
DEFAULT_GATE = "app"


def register_gate(name: str, make: Callable[[GateContext], Gate]) -> None:
    GATES[name] = make


def make_gate(name: str, ctx: GateContext) -> Gate:
    if name not in GATES:
        raise ValueError(f"gate must be one of {', '.join(GATES)} (got {name!r})")
    return GATES[name](ctx)


def entry(gate: Gate, text: str) -> bool:
    """Whether the app's step would ask the model: the gate, or a request to forget/remember."""
    return bool(
        gate(text) or owner_message.asks_to_forget(text) or owner_message.asks_to_remember(text)
    )


def gate_rows(items: Sequence[dict[str, Any]], gate: Gate) -> list[dict[str, Any]]:
    rows = []
    for it in items:
        t0 = time.perf_counter()
        passed = bool(gate(it["say"]))
        seconds = time.perf_counter() - t0
        rows.append(
            {
                "id": it["id"],
                "split": it["split"],
                "lang": it["lang"],
                "category": it["category"],
                "fact": bool(it["keep"]),
                "asks_forget": bool(it.get("forget")),
                "gate": passed,
                "entry": passed or entry(lambda _t: False, it["say"]),
                "gate_seconds": seconds,
                "say": it["say"],
            }
        )
    return rows


def _share(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def gate_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    facts = [r for r in rows if r["fact"]]
    talk = [r for r in rows if not r["fact"] and not r["asks_forget"]]
    return {
        "n": len(rows),
        "gate_recall": _share(sum(r["gate"] for r in facts), len(facts)),
        "gate_small_talk_pass": _share(sum(r["gate"] for r in talk), len(talk)),
        "entry_recall": _share(sum(r["entry"] for r in facts), len(facts)),
        "entry_small_talk_pass": _share(sum(r["entry"] for r in talk), len(talk)),
        "facts": len(facts),
        "small_talk": len(talk),
        "gate_ms_per_message": round(1000 * sum(r["gate_seconds"] for r in rows) / len(rows), 3)
        if rows
        else None,
    }


# ---------------------------------------------------------------------------- the step


class CountingModel:
    """The real model, counting its calls; with ``canned`` its chat reply is a fixed line (no
    generation) and only the memory step's JSON call runs on the model."""

    def __init__(self, model: Any, canned: bool) -> None:
        self.model = model
        self.canned = canned
        self.reply = CANNED["en"][0]
        self.chat_calls = 0
        self.json_calls = 0
        self.json_seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def stream_chat(
        self, messages, tools=None, cancel=None, max_tokens=None, temperature=0.7
    ) -> Iterator[Any]:
        self.chat_calls += 1
        if not self.canned:
            yield from self.model.stream_chat(messages, tools, cancel, max_tokens, temperature)
            return
        yield TextDelta(self.reply)
        yield Done(0, 0, 1)

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        self.json_calls += 1
        t0 = time.perf_counter()
        try:
            return self.model.generate_json(
                messages, schema, timeout=timeout, max_tokens=max_tokens, cancel=cancel
            )
        finally:
            self.json_seconds += time.perf_counter() - t0


def run_item(
    item: dict[str, Any],
    model: CountingModel,
    embedder: Any = None,
    gate: Gate | None = None,
    reply: str | None = None,
    max_answer_tokens: int = GENERATED_TOKENS,
) -> dict[str, Any]:
    """One item on a fresh store: the befores saved, ``say`` as one owner turn, the diff."""
    from core.memory import tools as memory_tools

    # the texts the private-flag classifier turned private (the model had left them public):
    # private_marked_model counts without them
    flipped: list[str] = []
    classify = memory_tools.sensitive

    def recording(content: str, embed: Any) -> bool:
        out = classify(content, embed)
        if out:
            flipped.append(content)
        return out

    memory_tools.sensitive = recording
    try:
        return _run_item(item, model, embedder, gate, reply, max_answer_tokens, flipped)
    finally:
        memory_tools.sensitive = classify


def _run_item(
    item: dict[str, Any],
    model: CountingModel,
    embedder: Any,
    gate: Gate | None,
    reply: str | None,
    max_answer_tokens: int,
    flipped: list[str],
) -> dict[str, Any]:
    from core.chat.conversation import Conversation
    from core.chat.conversation_config import ConversationConfig
    from core.chat.events import Notice, Remembering, Token, TurnDone, TurnError

    clock = ManualClock(START - 2 * DAY)
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp) / "memory.db", clock=clock, embedder=embedder)
        try:
            before_ids: list[int] = []
            for b in item["before"]:
                r = mem.save(
                    b["content"],
                    OWNER_TRUSTED,
                    kind=b.get("kind", "fact"),
                    importance=b.get("importance", 3),
                    source=Source.OWNER,
                    actor=Actor.OWNER,
                )
                before_ids.append(r.id)
                clock.advance(600)
            old = {r.id: r for r in mem.list(OWNER_TRUSTED, limit=10_000)}
            clock.set(START)
            conv = Conversation(
                mem,
                model,
                config=ConversationConfig(max_answer_tokens=max_answer_tokens),
                clock=clock,
                channel="bench",
            )
            if gate is not None:
                conv.writer.gate = gate
            conv.warm_up(OWNER_TRUSTED)  # as the app does after loading; not timed
            if reply is not None:
                model.reply = reply
            calls0, json0, js0 = model.chat_calls, model.json_calls, model.json_seconds
            tokens: list[str] = []
            notices: list[str] = []
            step_start: float | None = None
            done: TurnDone | None = None
            error = None
            t0 = time.perf_counter()
            for ev in conv.turn(item["say"], OWNER_TRUSTED):
                if isinstance(ev, Token):
                    tokens.append(ev.text)
                elif isinstance(ev, Remembering):
                    step_start = time.perf_counter()
                elif isinstance(ev, Notice):
                    notices.append(ev.text)
                elif isinstance(ev, TurnDone):
                    done = ev
                elif isinstance(ev, TurnError):
                    error = ev.message
            t1 = time.perf_counter()
            live = {r.id: r for r in mem.list(OWNER_TRUSTED, limit=10_000)}
        finally:
            mem.close()
    new = [r for rid, r in live.items() if rid not in old]
    updated = [
        i
        for i, rid in enumerate(before_ids)
        if rid in live and live[rid].content != old[rid].content
    ]
    archived = [i for i, rid in enumerate(before_ids) if rid not in live]
    row: dict[str, Any] = {
        "saved": [
            {
                "content": r.content,
                "importance": r.importance,
                "kind": r.kind.value,
                "private": r.private,
                "by_classifier": r.content in flipped,
            }
            for r in new
        ],
        "updated": [
            {
                "before": i,
                "content": live[before_ids[i]].content,
                "private": live[before_ids[i]].private,
                "by_classifier": live[before_ids[i]].content in flipped,
            }
            for i in updated
        ],
        "archived": archived,
        "live": [r.content for r in live.values()],
        "before_live_unchanged": [
            i for i, rid in enumerate(before_ids) if rid in live and i not in updated
        ],
        "reply": "".join(tokens).strip(),
        "seconds": t1 - t0,
        "step_seconds": (t1 - step_start) if step_start is not None else 0.0,
        "json_seconds": model.json_seconds - js0,
        "model_calls": done.model_calls
        if done is not None
        else (model.chat_calls - calls0 + model.json_calls - json0),
        "step_calls": model.json_calls - json0,
    }
    if notices:
        row["notices"] = notices
    if error:
        row["error"] = error
    return row


def judge(item: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The item's labels against what the step did (pure; the tests call it too)."""
    written = [s["content"] for s in row["saved"]] + [u["content"] for u in row["updated"]]
    groups = [found(written, g) for g in item["keep"]]
    forget = set(item.get("forget") or [])
    corrects = item.get("corrects")
    excused = forget | ({corrects} if corrects is not None else set())
    out: dict[str, Any] = {
        "fact": bool(item["keep"]),
        "recalled": any(groups) if item["keep"] else None,
        "groups_found": sum(groups),
        "groups": len(groups),
        "kept_anything": bool(row["saved"] or row["updated"]),
        "wrong_forgets": sum(1 for i in row["archived"] if i not in forget and i != corrects),
        "wrong_updates": sum(1 for u in row["updated"] if u["before"] not in excused),
        "forgets_applied": sum(1 for i in forget if i in row["archived"]),
        "forgets_asked": len(forget),
    }
    label = item.get("importance")
    if item["keep"] and label is not None:
        out["importance_pairs"] = [(s["importance"], label) for s in row["saved"]]
    else:
        out["importance_pairs"] = []
    private = item.get("private")
    kept = [*row["saved"], *row["updated"]]
    if item["keep"] and isinstance(private, bool) and kept:
        # a leak: a record kept from a private message that any other audience could see
        out["private_ok"] = all(k.get("private") for k in kept) if private else None
        out["private_ok_model"] = (
            all(k.get("private") and not k.get("by_classifier") for k in kept) if private else None
        )
        out["private_over"] = any(k.get("private") for k in row["saved"]) if not private else None
    if corrects is not None:
        changed = corrects in row["archived"] or any(
            u["before"] == corrects for u in row["updated"]
        )
        new_live = any(found(row["live"], g) for g in item["keep"])
        out["correction_applied"] = bool(
            changed and new_live and corrects not in row["before_live_unchanged"]
        )
    return out


def step_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    facts = [r for r in rows if r["judge"]["fact"]]
    talk = [r for r in rows if not r["judge"]["fact"]]
    pairs = [p for r in rows for p in r["judge"]["importance_pairs"]]
    corr = [r for r in rows if "correction_applied" in r["judge"]]
    priv = [r for r in rows if r["judge"].get("private_ok") is not None]
    public = [r for r in rows if r["judge"].get("private_over") is not None]
    n = len(rows)
    return {
        "n": n,
        "recall": _share(sum(bool(r["judge"]["recalled"]) for r in facts), len(facts)),
        "small_talk_kept": _share(sum(r["judge"]["kept_anything"] for r in talk), len(talk)),
        "facts_kept": _share(
            sum(r["judge"]["groups_found"] for r in facts), sum(r["judge"]["groups"] for r in facts)
        ),
        "importance_agreement": _share(sum(abs(a - b) <= 1 for a, b in pairs), len(pairs)),
        "wrong_forgets": sum(r["judge"]["wrong_forgets"] for r in rows),
        "corrections_applied": _share(
            sum(r["judge"]["correction_applied"] for r in corr), len(corr)
        ),
        "forgets_applied": _share(
            sum(r["judge"]["forgets_applied"] for r in rows),
            sum(r["judge"]["forgets_asked"] for r in rows),
        ),
        "wrong_updates": sum(r["judge"]["wrong_updates"] for r in rows),
        "private_marked": _share(sum(r["judge"]["private_ok"] for r in priv), len(priv)),
        "private_over": _share(sum(r["judge"]["private_over"] for r in public), len(public)),
        "private_marked_model": _share(
            sum(r["judge"]["private_ok_model"] for r in priv), len(priv)
        ),
        "seconds_per_message": round(sum(r["seconds"] for r in rows) / n, 3) if n else None,
        "step_seconds_per_message": round(sum(r["step_seconds"] for r in rows) / n, 3)
        if n
        else None,
        "model_calls": round(sum(r["model_calls"] for r in rows) / n, 3) if n else None,
        "step_calls": round(sum(r["step_calls"] for r in rows) / n, 3) if n else None,
        "importance_saved": sorted(a for a, _ in pairs),
        "facts": len(facts),
        "small_talk": len(talk),
        "corrections": len(corr),
    }


def grouped(
    rows: Sequence[dict[str, Any]], metrics: Callable[[Sequence[dict]], dict]
) -> dict[str, Any]:
    """Metrics for each split and overall, each with ``by_category`` and ``by_lang``."""

    def block(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out = metrics(rs)
        out["by_category"] = {
            c: metrics([r for r in rs if r["category"] == c])
            for c in CATEGORIES
            if any(r["category"] == c for r in rs)
        }
        langs = sorted({r["lang"] for r in rs})
        if len(langs) > 1:
            out["by_lang"] = {lg: metrics([r for r in rs if r["lang"] == lg]) for lg in langs}
        return out

    result = {
        sp: block([r for r in rows if r["split"] == sp])
        for sp in SPLITS
        if any(r["split"] == sp for r in rows)
    }
    result["overall"] = block(rows)
    return result


def _short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def run(
    items: Sequence[dict[str, Any]],
    *,
    gate_name: str = DEFAULT_GATE,
    gate_only: bool = False,
    model: Any = None,
    embedder_spec: str = "usem3+minilm",
    threads: int | None = None,
    reply: str = "generated",
    items_out: str | None = None,
    train: Sequence[dict[str, Any]] = (),
    embedder: Any = None,
) -> dict[str, Any]:
    """Evaluate the gate (``gate_only``) or the whole step on ``items``. ``model`` is a chat
    model object or a packaged name / GGUF path (loaded here); ``train`` the dev items a
    learning gate may use."""
    ctx = GateContext(embedder_spec, list(train))
    if embedder is not None:
        ctx._embedder = embedder
    t0 = time.perf_counter()
    gate = make_gate(gate_name, ctx)
    gate_load_s = time.perf_counter() - t0
    result: dict[str, Any] = {
        "bench": "memory_step",
        "gate_name": gate_name,
        "mode": "gate-only" if gate_only else "step",
        "items_total": len(items),
    }
    grows = gate_rows(items, gate)
    gate_block = grouped(grows, gate_metrics)
    if gate_only:
        result.update(gate_block)
        result["gate_load_s"] = round(gate_load_s, 2)
        show = items_out or "misses"
        if show != "none":
            result["items"] = [
                {
                    "id": r["id"],
                    "category": r["category"],
                    "fact": r["fact"],
                    "gate": r["gate"],
                    "say": _short(r["say"]),
                }
                for r in grows
                if show == "all" or r["gate"] != r["fact"]
            ]
        result["environment"] = environment()
        return result
    load_s = 0.0
    if model is None or isinstance(model, str | Path):
        from models.llama import load_chat_model  # the bench is the one place with a real model

        t1 = time.perf_counter()
        model = load_chat_model(str(model or DEFAULT_CHAT_MODEL), n_ctx=8192, n_threads=threads)
        load_s = time.perf_counter() - t1
    counting = (
        model if isinstance(model, CountingModel) else CountingModel(model, reply == "canned")
    )
    emb = ctx.embedder if embedder_spec != "none" else None
    plugged = None if gate_name == DEFAULT_GATE else gate
    rows = []
    for k, (it, g) in enumerate(zip(items, grows, strict=True)):
        lines = CANNED.get(it["lang"], CANNED["en"])
        row = run_item(it, counting, emb, plugged, reply=lines[k % len(lines)])
        row.update(
            {
                "id": it["id"],
                "split": it["split"],
                "lang": it["lang"],
                "category": it["category"],
                "gate": g["gate"],
            }
        )
        row["judge"] = judge(it, row)
        rows.append(row)
        print(
            f"[{k + 1}/{len(items)}] {it['id']} {it['category']}: "
            f"{row['judge']['groups_found']}/{row['judge']['groups']} kept, "
            f"{len(row['saved'])} saved, {row['seconds']:.1f}s",
            file=sys.stderr,
            flush=True,
        )
    result.update(grouped(rows, step_metrics))
    for key in SPLITS + ("overall",):
        if key in result:
            result[key]["gate"] = {k: v for k, v in gate_block[key].items() if k != "by_category"}
    show = items_out or "all"
    if show != "none":
        result["items"] = [
            _item_detail(it, r)
            for it, r in zip(items, rows, strict=True)
            if show == "all" or _missed(r)
        ]
    result.update(
        {
            "model": getattr(model, "name", str(model)),
            "threads": getattr(model, "threads", threads),
            "reply": reply,
            "embedder": embedder_spec,
            "load_s": round(load_s, 2),
            "environment": environment(),
            "peak_rss_mb": peak_rss_mb(),
        }
    )
    return result


def _missed(r: dict[str, Any]) -> bool:
    j = r["judge"]
    return (
        (j["fact"] and j["groups_found"] < j["groups"])
        or (not j["fact"] and j["kept_anything"])
        or bool(j["wrong_forgets"])
        or (j.get("correction_applied") is False)
    )


def _item_detail(it: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    j = r["judge"]
    out = {
        "id": it["id"],
        "category": it["category"],
        "say": _short(it["say"]),
        "gate": r["gate"],
        "saved": [[_short(s["content"], 100), s["importance"]] for s in r["saved"]],
        "saved_private": [bool(s.get("private")) for s in r["saved"]],
        "keep": f"{j['groups_found']}/{j['groups']}",
        "label_importance": it.get("importance"),
        "seconds": round(r["seconds"], 2),
        "step_seconds": round(r["step_seconds"], 2),
        "calls": r["model_calls"],
    }
    if r["updated"]:
        out["updated"] = [[u["before"], _short(u["content"], 100)] for u in r["updated"]]
    if r["archived"]:
        out["archived"] = r["archived"]
    if "correction_applied" in j:
        out["correction_applied"] = j["correction_applied"]
    if j["wrong_forgets"]:
        out["wrong_forgets"] = j["wrong_forgets"]
    if r.get("error"):
        out["error"] = r["error"]
    if r.get("notices"):
        out["notices"] = [_short(n, 100) for n in r["notices"]]
    if r["reply"] and not any(r["reply"] in lines for lines in CANNED.values()):
        out["reply"] = _short(r["reply"], 100)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--data",
        action="append",
        default=None,
        help="a data file (repeatable; default bench/data/memory_step_*.json)",
    )
    p.add_argument("--split", choices=("dev", "test", "all"), default="all")
    p.add_argument("--lang", choices=("en", "ru", "all"), default="all")
    p.add_argument(
        "--limit", type=int, default=None, help="items per split, round-robin across categories"
    )
    p.add_argument(
        "--category",
        default=None,
        help="only these categories (comma-separated, e.g. correction,forget)",
    )
    p.add_argument("--gate-only", action="store_true", help="evaluate the gate alone, no model")
    p.add_argument("--gate", default=DEFAULT_GATE, help=f"one of {', '.join(GATES)}")
    p.add_argument("--model", default=DEFAULT_CHAT_MODEL, help="packaged model name or .gguf path")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--embedder", choices=EMBEDDERS, default=EMBEDDERS[0])
    p.add_argument("--reply", choices=REPLIES, default="generated")
    p.add_argument(
        "--items",
        choices=("all", "misses", "none"),
        default=None,
        help="per-item detail (default: all for a step run, misses for --gate-only)",
    )
    a = p.parse_args(argv)
    if a.gate not in GATES:
        p.error(f"--gate must be one of {', '.join(GATES)}")
    if a.limit is not None and a.limit < 1:
        p.error("--limit must be at least 1")
    everything = load_items(a.data)
    wanted = set(a.category.split(",")) if a.category else set()
    if a.category:
        unknown = wanted - set(CATEGORIES)
        if unknown:
            p.error(f"unknown --category {', '.join(sorted(unknown))}")
    pool = [it for it in everything if not a.category or it["category"] in wanted]
    items = select(pool, a.split, a.lang, a.limit)
    train = [
        it
        for it in everything
        if it["split"] == "dev" and (a.lang == "all" or it["lang"] == a.lang)
    ]
    result = run(
        items,
        gate_name=a.gate,
        gate_only=a.gate_only,
        model=a.model,
        embedder_spec=a.embedder,
        threads=a.threads,
        reply=a.reply,
        items_out=a.items,
        train=train,
    )
    result["data"] = a.data or sorted(
        str(f.relative_to(DATA_DIR.parent.parent)) for f in DATA_DIR.glob(DATA_GLOB)
    )
    result["split"], result["lang"], result["limit"] = a.split, a.lang, a.limit
    result["category"] = a.category
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
