"""A GGUF chat model on llama-cpp-python, implementing :class:`core.llm.ChatModel` (SPEC §7, §8).

- The prompt is rendered with the GGUF's own chat template (jinja2, as llama-cpp-python does);
  tool schemas are written into the system message by us, in Qwen2.5's own format (a ``<tools>``
  block and the ``<tool_call>`` answer format, :mod:`models.chat_template`), which keeps them in
  the stable, cached prefix and works the same for templates that know no tools.
  ``chatml-function-calling`` is not used.
- Generation runs token by token through ``Llama.generate``, which keeps the KV cache and
  re-evaluates only the suffix after the longest common token prefix with the previous call.
  We never reset it. ``Done.prompt_tokens`` vs ``Done.evaluated_tokens`` reports the reuse
  (counted exactly, by wrapping ``Llama.eval``).
- Tool calls are split out of the stream by :class:`models.toolcalls.ToolCallStream`; text that
  may be a call is held back, so a call never reaches the owner as text.
- ``force_tool_call`` / ``generate_json`` constrain decoding with a GBNF grammar made from the
  JSON schema (``LlamaGrammar.from_json_schema``) and stop at a wall-clock deadline
  (→ :class:`core.llm.ModelError`).
- Cancelling (``cancel`` event) is checked between tokens and between prompt batches; an
  interruptible structured call (background work) is also stopped inside a decode, by
  llama.cpp's abort callback (:class:`models.abort_hook.AbortHook`).

One generation runs at a time per model (a lock); the TUI calls these from a worker thread.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from core.llm import ChatEvent, Done, Message, ModelError, TextDelta, ToolCall
from models.abort_hook import INTERRUPTIBLE_BATCH, AbortHook, _Abort
from models.chat_template import CHATML_TEMPLATE, prepare_messages
from models.choice_scoring import choice_probabilities
from models.gbnf import schema_grammar
from models.kv_snapshots import KVSnapshots, _common_prefix
from models.scripts import ScriptGuard
from models.toolcalls import RESPONSE_OPEN, ToolCallStream, tool_function

if TYPE_CHECKING:
    from llama_cpp.llama_types import ChatCompletionRequestMessage

# Special tokens that end a turn even when the vocabulary does not flag them end-of-generation.
_STOP_TOKEN_TEXTS = ("<|im_end|>", "<|endoftext|>", "<|im_start|>", "<|eot_id|>", "<end_of_turn>")


def _template_messages(
    messages: list[Message], tools: list[dict[str, Any]] | None
) -> list[ChatCompletionRequestMessage]:
    # llama_cpp types a formatter's messages as TypedDicts; its Jinja template reads plain dicts
    return cast("list[ChatCompletionRequestMessage]", prepare_messages(messages, tools))


# The KV cache's key types (ggml type ids). Keys only: quantized values need flash attention,
# which on this CPU evaluated prompts 41 % slower (33.8 vs 57.2 tok/s, 2,400 tokens, default
# model, 2 threads). q8_0 keys, measured the same way: 1386 → 1333 MB resident after load,
# 1514 → 1445 MB after that prompt and 40 tokens, a snapshot of it 65.7 → 50.3 MB, prompt
# 57.4 → 56.9 tok/s, generation 17.0 → 17.5 tok/s, the same 40 greedy tokens (issue 32 item 3).
KV_TYPES = {"q8_0": 8, "f16": 1}


def default_threads() -> int:
    """``$EVA_LLM_THREADS``, else every core of an idle machine and one fewer of a busy one
    (measured: ``models.profiles.auto_threads``)."""
    from models.profiles import auto_threads

    return auto_threads()


class LlamaChatModel:
    """:class:`core.llm.ChatModel` on a local GGUF file."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_batch: int = 512,
        seed: int = 0,
        chat_template: str | None = None,
        top_k: int = 20,
        top_p: float = 0.8,
        min_p: float = 0.05,
        repeat_penalty: float = 1.05,
        structured_temperature: float = 0.2,
        n_gpu_layers: int = 0,
        kv_cache_keys: str = "q8_0",
        verbose: bool = False,
    ) -> None:
        """``n_gpu_layers``: layers offloaded to the GPU ([llm] gpu_layers; -1 all). A
        llama.cpp built without a GPU backend runs them on the CPU. ``kv_cache_keys``: the
        type of the KV cache's keys ([llm] kv_cache_keys, :data:`KV_TYPES`)."""
        try:
            from llama_cpp import Llama
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ModelError("llama-cpp-python is not installed: run `make setup`") from e
        path = Path(model_path)
        if not path.is_file():
            raise ModelError(f"model file not found: {path}")
        threads = n_threads or default_threads()
        if kv_cache_keys not in KV_TYPES:
            raise ModelError(
                f"kv_cache_keys: must be one of {', '.join(KV_TYPES)} (got {kv_cache_keys!r})"
            )
        t0 = time.perf_counter()
        try:
            # Issue 32 item 3, measured with the default model at n_ctx 8192:
            # use_mmap=False: on x86 llama.cpp repacks most weights for its SIMD kernels
            # (CPU_REPACK, 597 MB of the 1060) into memory of its own, and from a mapped file
            # the pages it read them from stayed resident as well; read once instead, 1932 →
            # 1342 MB resident after load, the same tokens out, no slower to load.
            # n_ubatch 256: the attention scores of a prompt batch (its tokens × the cache ×
            # the heads, in f32) are the compute memory that grows with the context; after a
            # 4,000-token prompt +156 MB at 512, +92 MB at 256, the same tokens out.
            self._llm = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_batch=n_batch,
                n_threads=threads,
                n_threads_batch=threads,
                seed=seed,
                n_gpu_layers=n_gpu_layers,
                n_ubatch=min(n_batch, 256),
                use_mmap=False,
                type_k=KV_TYPES[kv_cache_keys],
                verbose=verbose,
            )
        except Exception as e:  # llama.cpp reports a bad file as ValueError/RuntimeError
            raise ModelError(f"cannot load {path.name}: {e}") from e
        self.load_seconds = time.perf_counter() - t0
        self.path = path
        self.name = name or path.stem
        self.context_size = int(self._llm.n_ctx())
        self.top_k, self.top_p, self.min_p = top_k, top_p, min_p
        self.repeat_penalty = repeat_penalty
        self.structured_temperature = structured_temperature
        self.last_done: Done | None = None  # stats of the last call (also of the JSON calls)
        self.threads = threads
        self._lock = threading.Lock()
        self._waiters = 0  # calls waiting for the lock: a warm-up under way gives way to them
        self._waiters_lock = threading.Lock()
        self._n_batch = n_batch
        self._eval_batch = n_batch  # prompt tokens evaluated between two abort checks
        self._eval_count = 0
        self._abort: Callable[[], bool] | None = None
        self._hook: AbortHook | None = None
        self._wrap_eval()
        self.snapshots = KVSnapshots()
        # a reply stopped in flight left the cache unsaved: a choice asked next (the answer
        # check, core.chat.answerable) saves it first (:meth:`keep_stopped_reply`)
        self._stopped_unsaved = False
        self._scripts = ScriptGuard(lambda i: self._llm.detokenize([i]), self._llm.n_vocab())

        model = self._llm._model
        eos_id, bos_id = self._llm.token_eos(), self._llm.token_bos()
        self._eos_text = model.token_get_text(eos_id) if eos_id != -1 else ""
        self._bos_text = model.token_get_text(bos_id) if bos_id != -1 else ""
        template = (
            chat_template or self._llm.metadata.get("tokenizer.chat_template") or (CHATML_TEMPLATE)
        )
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._formatter = Jinja2ChatFormatter(
            template, eos_token=self._eos_text, bos_token=self._bos_text
        )
        self._prefix_formatter = Jinja2ChatFormatter(
            template,
            eos_token=self._eos_text,
            bos_token=self._bos_text,
            add_generation_prompt=False,
        )
        self._stop_ids = {eos_id} if eos_id != -1 else set()
        for text in _STOP_TOKEN_TEXTS:
            ids = self._llm.tokenize(text.encode(), add_bos=False, special=True)
            if len(ids) == 1:
                self._stop_ids.add(ids[0])

    # ------------------------------------------------------------------ plumbing
    def _wrap_eval(self) -> None:
        """Count evaluated tokens exactly and make long prompt evaluation interruptible: the
        instance attribute shadows ``Llama.eval``, which ``Llama.generate`` calls."""
        orig = self._llm.eval

        def eval_(tokens) -> None:
            tokens = list(tokens)
            step = self._eval_batch
            for i in range(0, len(tokens), step):
                if self._abort is not None and self._abort():
                    raise _Abort()
                chunk = tokens[i : i + step]
                try:
                    orig(chunk)
                except RuntimeError:
                    if self._hook is not None and self._hook.fired:
                        raise _Abort() from None  # the abort callback stopped the decode
                    raise
                self._eval_count += len(chunk)

        self._llm.eval = eval_  # type: ignore[method-assign]

    def close(self) -> None:
        with self._lock:
            self._llm.close()

    def render(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> str:
        """The exact prompt text for these messages (generation prompt included)."""
        try:
            return self._formatter(messages=_template_messages(messages, tools)).prompt
        except Exception as e:
            raise ModelError(f"cannot render the chat template: {e}") from e

    def warm_up(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> bool:
        """Evaluate the prompt prefix these messages render to (no generation prompt) into the
        KV cache, reusing what is already there, as ``Llama.generate`` would. Background work:
        it stops as soon as another call waits for the model (False)."""
        try:
            prompt = self._prefix_formatter(messages=_template_messages(messages, tools)).prompt
        except Exception as e:
            raise ModelError(f"cannot render the chat template: {e}") from e
        tokens = self.tokenize(prompt)
        if len(tokens) >= self.context_size:
            return False
        self._scripts.prepare()
        with self._model():
            return self._eval_prefix(tokens)

    @contextlib.contextmanager
    def _model(self) -> Iterator[None]:
        """Hold the model (one call at a time), counted as waiting until it is ours: a warm-up
        under way stops for any call that waits (it is background work, issue 12)."""
        with self._waiters_lock:
            self._waiters += 1
        try:
            self._lock.acquire()
        finally:
            with self._waiters_lock:
                self._waiters -= 1
        try:
            yield
        finally:
            self._lock.release()

    def _eval_prefix(self, tokens: list[int]) -> bool:
        """Make the KV cache hold exactly ``tokens``, evaluating only what it lacks (at least
        the last token, so its logits are fresh), then keep a snapshot of it. Gives way (False,
        the cache keeps what was evaluated so far) as soon as another call waits for the
        model. Must hold ``self._lock``."""
        llm = self._llm
        keep = self._reuse_cache(tokens)

        def wanted() -> bool:
            return self._waiters > 0

        self._abort = wanted
        try:
            with self._interruptible(wanted):
                llm.eval(tokens[keep:])
        except _Abort:
            return False
        finally:
            self._abort = None
        self._snapshot()  # a background call later evicts it; the next turn restores it
        return True

    @contextlib.contextmanager
    def _interruptible(self, check: Callable[[], bool]) -> Iterator[None]:
        """Background work a turn may stop (a warm-up, a summary, a sleep decision): the prompt
        is read in batches of INTERRUPTIBLE_BATCH, not n_batch, and llama.cpp's abort callback
        asks ``check`` inside each decode (:class:`AbortHook`). Must hold ``self._lock``."""
        if self._hook is None:
            self._hook = AbortHook(self._llm)
        self._eval_batch = min(self._n_batch, INTERRUPTIBLE_BATCH)
        try:
            with self._hook.armed(check):
                yield
        finally:
            self._eval_batch = self._n_batch

    def _reuse_cache(self, tokens: list[int]) -> int:
        """Make the KV cache hold the longest prefix of ``tokens`` it (or a snapshot) already
        has, leaving at least the last token to evaluate so its logits are fresh; returns where
        evaluation starts and resets the evaluated-token count. Must hold ``self._lock``."""
        llm = self._llm
        self._restore(tokens)
        keep = _common_prefix(llm._input_ids[: llm.n_tokens], tokens)
        llm.n_tokens = max(0, min(keep, len(tokens) - 1))
        self._eval_count = 0
        return int(llm.n_tokens)

    def _restore(self, tokens: list[int]) -> None:
        try:
            self.snapshots.restore(self._llm, tokens)
        except Exception:  # a snapshot is only a shortcut: evaluate from scratch
            self._llm.n_tokens = 0

    def keep_stopped_reply(self) -> None:
        """Save the cache of a reply stopped in flight before another prompt replaces it. The
        answer check stops a reply after its first sentence and asks its own short question;
        without this the chat's next turn read its whole prompt again (the stopped reply's
        prefix was in no snapshot). Must hold ``self._lock``."""
        if self._stopped_unsaved:
            self._stopped_unsaved = False
            self._snapshot()

    def _snapshot(self) -> None:
        with contextlib.suppress(Exception):  # memory pressure: go on without one
            self.snapshots.save(self._llm)

    def tokenize(self, text: str) -> list[int]:
        add_special = not (self._bos_text and text.startswith(self._bos_text))
        return self._llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _is_stop(self, tok: int) -> bool:
        if tok in self._stop_ids:
            return True
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self._llm._model.vocab, tok))

    def _generate(
        self,
        tokens: list[int],
        *,
        max_tokens: int | None,
        temperature: float,
        grammar: Any = None,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
        stop_texts: tuple[str, ...] = (),
        interruptible: bool = False,
    ) -> Iterator[str | Done]:
        """Run one generation; yields decoded text pieces, then one :class:`Done`.
        Raises ModelError when the deadline passes. ``interruptible`` (background work a turn
        may stop) arms llama.cpp's abort callback: a cancel stops even a decode under way.
        Must hold ``self._lock``."""
        n_prompt = len(tokens)
        room = self.context_size - n_prompt
        if room <= 0:
            raise ModelError(
                f"the prompt has {n_prompt} tokens; the context holds {self.context_size}"
            )
        budget = room if max_tokens is None else max(0, min(max_tokens, room))
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text_so_far, emitted = "", 0
        stopped = timed_out = truncated = False
        n_done = 0
        first: float | None = None
        evaluated = 0
        t0 = time.perf_counter()

        def abort() -> bool:
            nonlocal timed_out
            if deadline is not None and time.monotonic() > deadline:
                timed_out = True
                return True
            return cancel is not None and cancel.is_set()

        from llama_cpp import LogitsProcessorList

        forbid = self._scripts.processor(tokens)
        self._restore(tokens)
        self._eval_count = 0
        self._abort = abort
        armed = contextlib.ExitStack()
        gen = self._llm.generate(
            tokens,
            top_k=self.top_k,
            top_p=self.top_p,
            min_p=self.min_p,
            temp=temperature,
            repeat_penalty=self.repeat_penalty,
            grammar=grammar,
            logits_processor=None if forbid is None else LogitsProcessorList([forbid]),
        )
        try:
            if interruptible:
                armed.enter_context(self._interruptible(abort))
            if budget == 0:
                truncated = True
            else:
                for tok in gen:
                    if first is None:
                        first = time.perf_counter() - t0
                        evaluated = self._eval_count
                    if self._is_stop(tok):
                        break
                    n_done += 1
                    piece = decoder.decode(self._llm.detokenize([tok]))
                    if piece:
                        text_so_far += piece
                        cut = -1
                        for s in stop_texts:
                            j = text_so_far.find(s, max(0, emitted - len(s)))
                            if j >= 0 and (cut < 0 or j < cut):
                                cut = j
                        if cut >= 0:
                            if cut > emitted:
                                yield text_so_far[emitted:cut]
                            emitted = len(text_so_far)
                            break
                        safe = len(text_so_far) - _stop_prefix_tail(text_so_far, stop_texts)
                        if safe > emitted:
                            yield text_so_far[emitted:safe]
                            emitted = safe
                    if abort():
                        stopped = not timed_out
                        break
                    if n_done >= budget:
                        truncated = True
                        break
        except _Abort:
            stopped = not timed_out
        finally:
            armed.close()
            self._abort = None
            gen.close()
        if timed_out:
            raise ModelError(f"generation timed out after {n_done} tokens")
        if first is None:
            evaluated = self._eval_count
        tail = decoder.decode(b"", final=True)
        text_so_far += tail
        if emitted < len(text_so_far) and not stopped:
            rest = text_so_far[emitted:]
            for s in stop_texts:
                j = rest.find(s)
                if j >= 0:
                    rest = rest[:j]
            if rest:
                yield rest
        yield Done(
            prompt_tokens=n_prompt,
            evaluated_tokens=evaluated,
            completion_tokens=n_done,
            stopped=stopped,
            seconds=time.perf_counter() - t0,
            first_token_seconds=first,
            extra={
                "truncated": truncated,
                "cached_tokens": n_prompt - evaluated,
                "model": self.name,
            },
        )

    # ------------------------------------------------------------------ ChatModel
    def stream_chat(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        cancel: threading.Event | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.7,
    ) -> Iterator[ChatEvent]:
        prompt = self.render(messages, tools)
        tokens = self.tokenize(prompt)
        splitter = ToolCallStream([tool_function(t)["name"] for t in tools]) if tools else None
        with self._model():
            done: Done | None = None
            for item in self._generate(
                tokens,
                max_tokens=max_tokens,
                temperature=temperature,
                cancel=cancel,
                stop_texts=(RESPONSE_OPEN,) if tools else (),
            ):
                if isinstance(item, Done):
                    done = item
                    break
                if splitter is None:
                    yield TextDelta(item)
                    continue
                shown = splitter.feed(item)
                if shown:
                    yield TextDelta(shown)
            assert done is not None
            calls: list[ToolCall] = []
            if splitter is not None:
                rest = splitter.finish()
                if done.stopped:
                    # cancelled: nothing is executed, and a cut-off call is not shown either
                    splitter.calls.clear()
                    if _looks_like_call(rest):
                        rest = ""
                if rest:
                    yield TextDelta(rest)
                calls = [
                    ToolCall(c.name, c.arguments, id=f"call_{i}")
                    for i, c in enumerate(splitter.calls)
                ]
            if calls:
                done = replace(done, extra={**done.extra, "tool_calls": len(calls)})
            self.last_done = done
            if not done.stopped:
                self._snapshot()
            self._stopped_unsaved = done.stopped
        yield from calls
        yield done

    def force_tool_call(
        self,
        messages: list[Message],
        tool: dict[str, Any],
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> ToolCall:
        fn = tool_function(tool)
        schema = fn.get("parameters") or {"type": "object"}
        prefix = f'<tool_call>\n{{"name": "{fn["name"]}", "arguments": '
        args = self._constrained(
            self.render(messages, [tool]) + prefix, schema, timeout, None, cancel
        )
        return ToolCall(name=fn["name"], arguments=args, id="call_0")

    def generate_json(
        self,
        messages: list[Message],
        schema: dict[str, Any],
        timeout: float | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        return self._constrained(self.render(messages), schema, timeout, max_tokens, cancel)

    # scored from the logits: :func:`models.choice_scoring.choice_probabilities`
    choice_probabilities = choice_probabilities

    def _constrained(
        self,
        prompt: str,
        schema: dict[str, Any],
        timeout: float | None,
        max_tokens: int | None,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """Grammar-constrained JSON. ``cancel`` (e.g. sleep's wake) stops it between tokens;
        a cancelled call raises ModelError and frees the model at once."""
        from llama_cpp import LlamaGrammar

        try:
            grammar = LlamaGrammar.from_string(schema_grammar(schema), verbose=False)
        except Exception as e:
            raise ModelError(f"cannot build a grammar from the schema: {e}") from e
        tokens = self.tokenize(prompt)
        deadline = None if timeout is None else time.monotonic() + timeout
        parts: list[str] = []
        with self._model():
            # A structured call with a cancel (a summary, a sleep decision: background work a
            # turn may stop) is interruptible: the turn waiting for the model gets it within
            # milliseconds (see _interruptible).
            for item in self._generate(
                tokens,
                max_tokens=max_tokens,
                temperature=self.structured_temperature,
                grammar=grammar,
                deadline=deadline,
                cancel=cancel,
                interruptible=cancel is not None,
            ):
                if isinstance(item, Done):
                    self.last_done = item
                else:
                    parts.append(item)
        if cancel is not None and cancel.is_set():
            raise ModelError("the structured call was cancelled")
        text = "".join(parts).strip()
        try:
            value = json.loads(text, strict=False)  # a raw newline inside a string is harmless
        except ValueError as e:
            cut = bool(self.last_done and self.last_done.extra.get("truncated"))
            why = "output cut at max_tokens" if cut else str(e)
            raise ModelError(
                f"the model's JSON does not parse ({why})", partial=text if cut else ""
            ) from e
        if not isinstance(value, dict):
            raise ModelError("the model's JSON is not an object")
        return value


def _stop_prefix_tail(text: str, stops: tuple[str, ...]) -> int:
    """Length of the longest tail of ``text`` that may be the start of a stop string."""
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return best


def _looks_like_call(text: str) -> bool:
    t = text.lstrip()
    return t.startswith(("<tool_call>", "{", "```json", "[{"))


def load_chat_model(spec: str | None = None, **kwargs: Any) -> LlamaChatModel:
    """Load a chat model from a packaged name (default ``qwen2.5-coder-1.5b``) or a GGUF path,
    with its profile's sampling and threads (``models.profiles``; explicit kwargs win).
    Raises :class:`core.llm.ModelError` (with the install command) when it is not available."""
    from models.packaged import DEFAULT_CHAT_MODEL, REGISTRY, PackagedModelError, resolve_gguf
    from models.profiles import profile_for

    spec = spec or DEFAULT_CHAT_MODEL
    try:
        path = resolve_gguf(spec)
    except PackagedModelError as e:
        raise ModelError(str(e)) from e
    profile = profile_for(spec if spec in REGISTRY else None)
    kwargs.setdefault("name", spec if spec in REGISTRY else Path(spec).stem)
    kwargs.setdefault("n_ctx", profile.context_size)
    for key in ("top_k", "top_p", "min_p", "repeat_penalty", "structured_temperature"):
        kwargs.setdefault(key, getattr(profile, key))
    return LlamaChatModel(path, **kwargs)  # threads: default_threads() unless given
