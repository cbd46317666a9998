"""Does the memory line an answer drew on answer the question? (SPEC §8.10: never invent)

The judge holds the first sentence of a reply to a question about the owner until it can be
judged, and holds it for good when it names a name or a number nothing shown holds
(:mod:`core.chat.invention`). An answer can make up nothing and still answer from a line that
does not say it: measured on the default model, "What car do I drive?" got "You drive trams in
Edinburgh." from "I drive trams in Edinburgh", "Where did I study?" got "You studied at a
climbing gym." from "we met at a climbing gym", "What instrument am I learning?" got "the
piano" (bench.companion, unseen scenarios c and d).

So the first sentence of such an answer is checked before the owner sees it: the record it drew
on (:func:`core.chat.retry.grounding_record`: the one holding most of the words the answer added
to the question) is put to the model with the question, and the model's probability of "yes"
to "Does the memory line state the answer to this question?" is read from its logits
(:class:`core.llm.ChoiceModel`). Below :data:`THRESHOLD` the answer does not stand: Eva says she
does not know. An answer to a "what / who / where…" question that drew on no record at all ("You
drive a car." for "What car do I drive?") does not stand either.

Pure: no store. The caller gives the model and the records the turn was shown.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from core.chat.retry import grounding_record
from core.llm import ChoiceModel, Message, ModelError

KEY = "answer"
OPTIONS = ["yes", "no"]
# chosen on the dev half of bench/data/owner_questions.json (the default model's answers, the
# check scored offline): the highest answered share minus invented share — at 0.6 answered
# 0.612 -> 0.537 and invented 0.424 -> 0.118 of the unknown questions (0.3: 0.585 / 0.247)
THRESHOLD = 0.6
TIMEOUT = 20.0  # seconds: the check is one short prompt; a stuck model lets the answer stand


SYSTEM = (
    "You check whether a memory line answers a question. Say yes only when the line itself "
    "states the answer; a line about the same person or topic that does not state the asked "
    "thing means no."
)


def messages(line: str, question: str) -> list[Message]:
    """The check's prompt: the record and the question, asked in English whatever their
    language (the closed answer is scored, not written). Chosen on the dev half of
    bench/data/owner_questions.json, the default model's answers with the check scored
    offline: with this system line, right answers against made-up ones AUC 0.89 (0.86 without
    it; 0.73 with the answer itself shown too)."""
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Memory line: \u00ab{line}\u00bb\nQuestion: \u00ab{question}\u00bb\n"
            "Does the memory line state the answer to this question? Answer yes or no.",
        },
    ]


# the bar for quoting the line recall put first when the answer was "I don't know": chosen on
# the dev half of bench/data/owner_questions.json (the default model's replies that admitted not
# knowing, every shown line scored offline with :func:`messages`): at 0.75 the first recalled
# line answered 10 of 38 known questions and 1 of 44 unknown ones got a quote (which still says
# she is not sure); at 0.7 11 and 2, at 0.8 7 and 0. The second recalled line added nothing at
# any bar.
RESCUE_THRESHOLD = 0.75
# The core lines asked after it, most important first. Recall never brings a core line, and the
# owner's introduction is core in the app: "What's my job?" got "I don't know" over the core line
# "Я Марина, работаю фармацевтом в Туле." (owner session, default model), whose yes is 0.91.
# Dev half of the set, every question against its owner's core line (9 owners), at
# RESCUE_THRESHOLD: 3 of the 6 questions a core line answers pass, none of 40 unknown and none
# of 58 other known questions.
RESCUE_CORE_LINES = 2


@dataclass(frozen=True)
class Check:
    """What the check found: the record the answer drew on ("" when none), the model's
    probability that it answers the question (None when not asked), and whether the answer
    stands."""

    record: str
    p_yes: float | None
    stands: bool
    asked: int = 1  # the model calls it took when p_yes is not None


def check(
    model: object,
    answer: str,
    question: str,
    records: Sequence[str],
    asks_what: bool,
    cancel: threading.Event | None = None,
) -> Check:
    """Whether ``answer`` (the first sentence of a reply to ``question``, about the owner) may
    stand, given the ``records`` the turn was shown. A model that cannot score a choice, or
    fails, lets it stand (the judge's other checks still ran)."""
    record = grounding_record(answer, (), question, records)
    if not record:
        return Check("", None, not asks_what)
    yes = _p_yes(model, record, question, cancel)
    return Check(record, yes, True if yes is None else yes >= THRESHOLD)


def _p_yes(
    model: object, record: str, question: str, cancel: threading.Event | None
) -> float | None:
    """The model's probability that ``record`` states the answer to ``question``; None for a
    model that cannot score a choice, or fails."""
    if not isinstance(model, ChoiceModel):
        return None
    try:
        p = model.choice_probabilities(
            messages(record, question), KEY, OPTIONS, timeout=TIMEOUT, cancel=cancel
        )
    except ModelError:
        return None
    return float(p.get("yes", 0.0))


def rescue(
    model: object,
    question: str,
    recalled: Sequence[str],
    tried: str = "",
    cancel: threading.Event | None = None,
    core: Sequence[str] = (),
) -> Check:
    """Whether the line recall put first (``recalled[0]``), or else one of the first
    :data:`RESCUE_CORE_LINES` ``core`` lines, answers ``question`` though the reply said it does
    not know, or its answer did not stand: asked as :func:`check` asks, a line stands at
    :data:`RESCUE_THRESHOLD` and Eva quotes it, saying she is not sure. Measured on
    bench.owner_questions (default model): "Сколько лет моей дочке?" got "Этого я не знаю…"
    with "Жена — Гульнара… Дочке Алсу 9 лет" recalled first. ``tried``: the record the check
    already asked about (it did not stand: not asked again). The lines are asked in turn until
    one stands."""
    lines: list[str] = []
    for line in (*recalled[:1], *core[:RESCUE_CORE_LINES]):
        if line and line != tried and line not in lines:
            lines.append(line)
    found = Check(lines[0] if lines else "", None, False)
    for n, line in enumerate(lines, start=1):
        yes = _p_yes(model, line, question, cancel)
        if yes is None:
            return found  # a model that cannot score: what the lines before it found
        found = Check(line, yes, yes >= RESCUE_THRESHOLD, asked=n)
        if found.stands:
            break
    return found
