"""Scoring a closed question's options from the logits (issue 27 item 3: sleep reads a closed
answer with its probability): the probability of each whole JSON answer, without generating
one. It is :meth:`models.llama.LlamaChatModel.choice_probabilities`."""

from __future__ import annotations

import json
import math
import threading
import time
from typing import TYPE_CHECKING, Any

from core.llm import Done, Message, ModelError
from models.abort_hook import _Abort

if TYPE_CHECKING:
    from models.llama import LlamaChatModel


def choice_probabilities(
    model: LlamaChatModel,
    messages: list[Message],
    key: str,
    options: list[str],
    timeout: float | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, float]:
    """:meth:`core.llm.ChoiceModel.choice_probabilities`. Each answer is the whole JSON
    text ``{"key": "option"}`` tokenized as the tokenizer cuts it (a prompt ending in the
    opening quote would force a cut the model rarely saw: measured on the default model,
    such a prefix gave "no longer true" 0.35 where greedy decoding wrote it). The prompt and
    the answers' common first tokens are evaluated once (reusing the cache as a generation
    would), then each answer's remaining tokens are scored one by one from the logits;
    log P(answer) is their sum, normalised among the options. Interruptible like a
    structured call with a cancel."""
    if len(options) < 2:
        raise ModelError("a choice needs at least two options")
    prompt = model.tokenize(model.render(messages))
    seqs = [
        model._llm.tokenize(
            json.dumps({key: o}, ensure_ascii=False).encode("utf-8"),
            add_bos=False,
            special=False,
        )
        for o in options
    ]
    common = 0
    while all(len(q) > common + 1 and q[common] == seqs[0][common] for q in seqs):
        common += 1
    tokens = prompt + seqs[0][:common]
    if len(tokens) + max(len(q) for q in seqs) >= model.context_size:
        raise ModelError(
            f"the prompt has {len(tokens)} tokens; the context holds {model.context_size}"
        )
    deadline = None if timeout is None else time.monotonic() + timeout
    t0 = time.perf_counter()

    def abort() -> bool:
        if deadline is not None and time.monotonic() > deadline:
            return True
        return cancel is not None and cancel.is_set()

    with model._model():
        llm = model._llm
        model.keep_stopped_reply()
        keep = model._reuse_cache(tokens)
        model._abort = abort
        logps: list[float] = []
        try:
            with model._interruptible(abort):
                llm.eval(tokens[keep:])
                evaluated = model._eval_count
                base = llm.n_tokens
                first = _last_log_probs(llm)
                for seq in seqs:
                    rest = seq[common:]
                    lp = float(first[rest[0]])
                    llm.n_tokens = base
                    for prev, nxt in zip(rest, rest[1:], strict=False):
                        llm.eval([prev])
                        lp += float(_last_log_probs(llm)[nxt])
                    logps.append(lp)
                llm.n_tokens = len(prompt)  # the cache holds the prompt, as after a call
        except _Abort:
            raise ModelError("the choice was cancelled or timed out") from None
        finally:
            model._abort = None
    top = max(logps)
    weights = [math.exp(lp - top) for lp in logps]
    total = sum(weights)
    model.last_done = Done(
        prompt_tokens=len(tokens),
        evaluated_tokens=evaluated,
        completion_tokens=0,
        seconds=time.perf_counter() - t0,
        extra={"cached_tokens": len(tokens) - evaluated, "model": model.name},
    )
    return {o: w / total for o, w in zip(options, weights, strict=True)}


def _last_log_probs(llm: Any) -> Any:
    """Log-softmax of the logits of the last token evaluated (llama.cpp keeps them for the
    last token of each batch when logits_all is off)."""
    import numpy as np

    logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
    top = logits.max()
    return logits - top - np.log(np.exp(logits - top).sum())
