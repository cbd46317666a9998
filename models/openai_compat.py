"""A chat model behind an OpenAI-compatible HTTP server, implementing :class:`core.llm.ChatModel`
(SPEC §9 "chat models", issue 31): Ollama, llama.cpp's ``llama-server``, LM Studio, KoboldCpp,
``python -m llama_cpp.server``.

- Only the standard library (``http.client``): no new dependency.
- **Privacy first.** A ``base_url`` whose host is not loopback (``localhost``, ``127.0.0.0/8``,
  ``::1``) is refused unless ``allow_remote`` — in the constructor, before any connection is
  made (:func:`check_base_url`). No name is resolved to decide it: a host name other than
  ``localhost`` counts as remote.
- Every call streams (SSE). Cancelling (the ``cancel`` event) or a deadline shuts the socket
  down from a watcher thread, which unblocks the read at once; the server sees the client go
  and stops generating. A server that dies mid-reply is a :class:`core.llm.ModelError` with a
  clear message, never a half answer passed on as whole.
- Structured steps (memory step, sleep decisions, summaries, drafts) ask the server for
  JSON-schema output: ``response_format`` ``json_schema`` (OpenAI, llama-server, LM Studio,
  Ollama), else llama-cpp-python's ``json_object`` + ``schema``; the mode that works is kept.
  Whatever the server says it did, the answer is checked against the schema
  (:mod:`models.schema_check`); a misfit is retried once, then refused with a
  :class:`SchemaRefused` that says so — nothing half parsed reaches the caller.
- Token counts: the server's ``usage`` (asked with ``stream_options.include_usage``) when it
  reports one; otherwise an estimate of :data:`BYTES_PER_TOKEN` UTF-8 bytes a token (an
  over-count for English and Russian on the Qwen and Llama tokenizers, so the prompt budget
  errs on the safe side), corrected by the ratio the server's own counts show once it reports
  any. ``Done.extra["tokens_estimated"]`` says which.
- KV reuse: messages are sent as the core builds them (its stable prefix stays byte-identical)
  and ``cache_prompt: true`` is asked (llama-server keeps the prompt's KV cache; other servers
  ignore the key). ``warm_up`` on a loopback server sends the prefix with ``max_tokens: 1``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from core.llm import ChatEvent, Done, Message, ModelError, TextDelta, ToolCall
from core.locality import check_base_url, is_loopback
from models.chat_template import DEFAULT_SYSTEM, tools_system_block
from models.schema_check import problem as schema_problem
from models.toolcalls import RESPONSE_OPEN, ToolCallStream, tool_function

BYTES_PER_TOKEN = 3.0  # the stated estimate when the server reports no usage
SCHEMA_MODES = ("json_schema", "json_object", "none")


class RemoteRefused(ModelError):
    """A non-loopback ``base_url`` without ``allow_remote`` (SPEC §9): nothing was contacted."""


class SchemaRefused(ModelError):
    """The server's JSON did not fit the step's schema twice: the step is refused."""


class ServerError(ModelError):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def _api_root(base_url: str) -> str:
    """The path the endpoints hang off: ``/v1`` unless the URL names one (``…/v1``,
    ``…/api/v1``)."""
    path = urlsplit(base_url).path.rstrip("/")
    return path if path else "/v1"


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The core's messages in the OpenAI wire form (tool calls with ids and JSON-string
    arguments; a tool result with the id of its call)."""
    out: list[dict[str, Any]] = []
    last_ids: list[str] = []
    for m in messages:
        role = m.get("role", "user")
        content = m.get("content")
        msg: dict[str, Any] = {"role": role, "content": "" if content is None else str(content)}
        if role == "assistant" and m.get("tool_calls"):
            calls: list[dict[str, Any]] = []
            for i, tc in enumerate(m["tool_calls"]):
                if isinstance(tc, ToolCall):
                    name, args, cid = tc.name, tc.arguments, tc.id
                else:
                    fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
                    name, args, cid = fn.get("name", ""), fn.get("arguments", {}), tc.get("id")
                cid = cid or f"call_{len(out)}_{i}"
                calls.append(
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": args
                            if isinstance(args, str)
                            else json.dumps(args, ensure_ascii=False),
                        },
                    }
                )
            msg["tool_calls"] = calls
            last_ids = [c["id"] for c in calls]
        if role == "tool":
            msg["tool_call_id"] = m.get("tool_call_id") or (
                last_ids.pop(0) if last_ids else "call_0"
            )
            if m.get("name"):
                msg["name"] = m["name"]
        out.append(msg)
    return out


class OpenAICompatModel:
    """:class:`core.llm.ChatModel` over ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        name: str | None = None,
        context_size: int = 8192,
        allow_remote: bool = False,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        structured_temperature: float = 0.2,
        schema_mode: str | None = None,
    ) -> None:
        why = check_base_url(base_url, allow_remote)
        if why:
            raise RemoteRefused(why)
        if schema_mode is not None and schema_mode not in SCHEMA_MODES:
            raise ValueError(f"schema_mode must be one of {SCHEMA_MODES}")
        parts = urlsplit(base_url)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = name or model
        self.context_size = context_size
        self.remote = not is_loopback(base_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._root = _api_root(base_url)
        self._api_key = api_key
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.structured_temperature = structured_temperature
        self.schema_mode = schema_mode  # learned on the first structured call
        self.native_tools = True  # False once the server refused a ``tools`` field
        self._bytes_per_token = BYTES_PER_TOKEN
        self.tokens_estimated = True  # until the server reports a usage
        self.last_done: Done | None = None
        self.retries = 0  # structured calls asked again after a misfit (tests and benches)

    # ------------------------------------------------------------------ HTTP
    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self.connect_timeout)

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if self._api_key:
            h["Authorization"] = f"Bearer {self._api_key}"
        return h

    def _where(self) -> str:
        return f"the model server at {self.base_url}"

    def get_json(self, path: str, timeout: float = 5.0) -> Any:
        conn = self._connect()
        conn.timeout = timeout
        try:
            conn.request("GET", self._root + path, headers=self._headers())
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise ServerError(
                    f"{self._where()} answered {resp.status} to GET {path}", resp.status
                )
            return json.loads(body)
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise ModelError(f"{self._where()} cannot be reached ({e})") from None
        finally:
            conn.close()

    def list_models(self, timeout: float = 5.0) -> list[str]:
        """The model ids the server reports (``GET /v1/models``)."""
        data = self.get_json("/models", timeout)
        items = data.get("data") if isinstance(data, dict) else None
        return [str(m["id"]) for m in items or () if isinstance(m, dict) and m.get("id")]

    def _stream(
        self, payload: dict[str, Any], cancel: threading.Event | None, deadline: float | None
    ) -> Iterator[dict[str, Any]]:
        """POST a streaming chat completion; yields each SSE ``data`` object. Cancel or the
        deadline shut the socket down (the generator then just ends: the caller checks which)."""
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        conn = self._connect()
        finished = threading.Event()
        watcher: threading.Thread | None = None
        try:
            try:
                conn.request("POST", self._root + "/chat/completions", body, self._headers())
                sock = conn.sock
                if sock is not None:
                    sock.settimeout(self.timeout)
                if sock is not None and (cancel is not None or deadline is not None):

                    def watch() -> None:
                        while not finished.is_set():
                            if (cancel is not None and cancel.is_set()) or (
                                deadline is not None and time.monotonic() > deadline
                            ):
                                with contextlib.suppress(OSError):
                                    sock.shutdown(socket.SHUT_RDWR)
                                return
                            finished.wait(0.02)

                    watcher = threading.Thread(target=watch, daemon=True, name="eva-http-cancel")
                    watcher.start()
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                if self._interrupted(cancel, deadline):
                    return
                raise ModelError(f"{self._where()} cannot be reached ({e})") from None
            if resp.status != 200:
                try:
                    raw = resp.read(4000)
                except (OSError, http.client.HTTPException):
                    raw = b""
                raise ServerError(
                    f"{self._where()} answered {resp.status}: {_error_text(raw)}", resp.status
                )
            ended = False
            try:
                while True:
                    line = resp.readline()
                    if not line:
                        break
                    line = line.strip()
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        ended = True
                        break
                    try:
                        obj = json.loads(data)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and obj.get("error"):
                        raise ServerError(
                            f"{self._where()} failed: {_error_text(json.dumps(obj).encode())}"
                        )
                    if isinstance(obj, dict):
                        if any(
                            isinstance(c, dict) and c.get("finish_reason")
                            for c in obj.get("choices") or ()
                        ):
                            ended = True  # a usage chunk and "[DONE]" may follow
                        yield obj
            except (OSError, http.client.HTTPException) as e:
                if self._interrupted(cancel, deadline):
                    return
                raise ModelError(f"{self._where()} broke off the reply ({e})") from None
            if not ended and not self._interrupted(cancel, deadline):
                raise ModelError(f"{self._where()} closed the connection mid-reply")
        finally:
            finished.set()
            conn.close()

    @staticmethod
    def _interrupted(cancel: threading.Event | None, deadline: float | None) -> bool:
        return (cancel is not None and cancel.is_set()) or (
            deadline is not None and time.monotonic() > deadline
        )

    # ------------------------------------------------------------------ tokens
    def count_tokens(self, text: str) -> int:
        """The stated estimate (no tokenizer here): UTF-8 bytes / bytes-a-token, rounded up;
        the ratio follows the server's own counts once it reports any."""
        if not text:
            return 0
        return max(1, math.ceil(len(text.encode("utf-8")) / self._bytes_per_token))

    def _prompt_estimate(self, messages: list[dict[str, Any]], tools: Any = None) -> int:
        n = sum(self.count_tokens(str(m.get("content") or "")) + 4 for m in messages)
        if tools:
            n += self.count_tokens(json.dumps(tools, ensure_ascii=False))
        return n + 2

    def _learn_ratio(self, messages: list[dict[str, Any]], reported: int) -> None:
        """Follow the server's counts: the ratio of the prompt's bytes to its reported tokens
        (kept a tenth on the safe side, and within 2..6 bytes a token)."""
        size = sum(len(str(m.get("content") or "").encode("utf-8")) for m in messages)
        if reported > 0 and size >= 200:
            ratio = 0.9 * size / reported
            self._bytes_per_token = min(6.0, max(2.0, ratio))
            self.tokens_estimated = False

    # ------------------------------------------------------------------ one call
    def _call(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None,
        cancel: threading.Event | None,
        deadline: float | None,
        max_tokens: int | None,
        temperature: float,
        response_format: dict[str, Any] | None = None,
    ) -> Iterator[str | ToolCall | Done]:
        """One streamed completion: text pieces, then native tool calls, then one Done."""
        wire = openai_messages(messages)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "stream": True,
            "temperature": temperature,
            "stream_options": {"include_usage": True},
            "cache_prompt": True,
        }
        if max_tokens is not None:
            payload["max_tokens"] = max(1, max_tokens)
        if tools:
            if self.native_tools:
                payload["tools"] = [
                    {"type": "function", "function": tool_function(t)} for t in tools
                ]
            else:
                payload["messages"] = _tools_in_system(wire, tools)
        if response_format is not None:
            payload["response_format"] = response_format
        if tools:
            payload["stop"] = [RESPONSE_OPEN]  # a made-up tool response is not the reply
        t0 = time.perf_counter()
        first: float | None = None
        usage: dict[str, Any] | None = None
        timings: dict[str, Any] | None = None
        n_pieces = 0
        finish: str | None = None
        calls: dict[int, dict[str, Any]] = {}
        try:
            chunks = self._stream(payload, cancel, deadline)
            for obj in chunks:
                if isinstance(obj.get("usage"), dict):
                    usage = obj["usage"]
                if isinstance(obj.get("timings"), dict):
                    timings = obj["timings"]
                for ch in obj.get("choices") or ():
                    delta = ch.get("delta") or ch.get("message") or {}
                    finish = ch.get("finish_reason") or finish
                    text = delta.get("content")
                    if text:
                        if first is None:
                            first = time.perf_counter() - t0
                        n_pieces += 1
                        yield str(text)
                    for tc in delta.get("tool_calls") or ():
                        if first is None:
                            first = time.perf_counter() - t0
                        slot = calls.setdefault(
                            int(tc.get("index", len(calls))),
                            {"id": "", "name": "", "arguments": ""},
                        )
                        slot["id"] = tc.get("id") or slot["id"]
                        fn = tc.get("function") or {}
                        slot["name"] += fn.get("name") or ""
                        slot["arguments"] += fn.get("arguments") or ""
        except ServerError as e:
            if (
                tools
                and self.native_tools
                and e.status in (400, 422, 500, 501)
                and "tool" in str(e).lower()
            ):
                self.native_tools = False  # the text form (Qwen's <tool_call>) from now on
                yield from self._call(
                    messages,
                    tools=tools,
                    cancel=cancel,
                    deadline=deadline,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    response_format=response_format,
                )
                return
            raise
        if (
            deadline is not None
            and time.monotonic() > deadline
            and not (cancel is not None and cancel.is_set())
        ):
            raise ModelError(f"the model server did not finish in time ({n_pieces} pieces)")
        stopped = cancel is not None and cancel.is_set()
        if not stopped:
            for i in sorted(calls):
                c = calls[i]
                args: dict[str, Any] | str = c["arguments"]
                with contextlib.suppress(ValueError):
                    parsed = json.loads(c["arguments"] or "{}")
                    if isinstance(parsed, dict):
                        args = parsed
                yield ToolCall(c["name"], args, id=c["id"] or f"call_{i}")
        estimated = usage is None or not usage.get("prompt_tokens")
        if estimated:
            prompt = self._prompt_estimate(payload["messages"], payload.get("tools"))
            completion = n_pieces
        else:
            assert usage is not None
            prompt = int(usage.get("prompt_tokens") or 0)
            completion = int(usage.get("completion_tokens") or n_pieces)
            self._learn_ratio(payload["messages"], prompt)
        cached = 0
        details = (usage or {}).get("prompt_tokens_details")
        if isinstance(details, dict) and details.get("cached_tokens"):
            cached = int(details["cached_tokens"])
        elif timings and timings.get("cache_n") is not None:
            cached = int(timings["cache_n"])
        yield Done(
            prompt_tokens=prompt,
            evaluated_tokens=max(0, prompt - cached),
            completion_tokens=completion,
            stopped=stopped,
            seconds=time.perf_counter() - t0,
            first_token_seconds=first,
            extra={
                "truncated": finish == "length",
                "cached_tokens": cached,
                "model": self.name,
                "tokens_estimated": estimated,
                "backend": "openai",
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
        splitter = ToolCallStream([tool_function(t)["name"] for t in tools]) if tools else None
        done: Done | None = None
        native: list[ToolCall] = []
        for item in self._call(
            messages,
            tools=tools,
            cancel=cancel,
            deadline=None,
            max_tokens=max_tokens,
            temperature=temperature,
        ):
            if isinstance(item, Done):
                done = item
            elif isinstance(item, ToolCall):
                native.append(item)
            elif splitter is None:
                yield TextDelta(item)
            else:
                shown = splitter.feed(item)
                if shown:
                    yield TextDelta(shown)
        assert done is not None
        calls: list[ToolCall] = list(native)
        if splitter is not None:
            rest = splitter.finish()
            if done.stopped:
                splitter.calls.clear()
                rest = "" if rest.lstrip().startswith(("<tool_call>", "{", "```json")) else rest
            if rest:
                yield TextDelta(rest)
            calls += [
                ToolCall(c.name, c.arguments, id=f"call_{i}")
                for i, c in enumerate(splitter.calls, start=len(native))
            ]
        if calls:
            done = replace(done, extra={**done.extra, "tool_calls": len(calls)})
        self.last_done = done
        yield from calls
        yield done

    def warm_up(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> bool:
        """Ask a loopback server to read this prefix into its cache (one token generated).
        A remote server is not asked (it would cost the owner for nothing sure)."""
        if self.remote or not messages:
            return False
        try:
            for _ in self._call(
                messages,
                tools=tools,
                cancel=None,
                deadline=time.monotonic() + 120,
                max_tokens=1,
                temperature=0.0,
            ):
                pass
        except ModelError:
            return False
        return True

    def force_tool_call(
        self,
        messages: list[Message],
        tool: dict[str, Any],
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> ToolCall:
        fn = tool_function(tool)
        schema = fn.get("parameters") or {"type": "object"}
        note = (
            f"Answer by calling the function {fn['name']}: "
            f"{fn.get('description', '').strip()} Reply with its arguments only, as one "
            "JSON object."
        )
        args = self.generate_json(
            [*messages, {"role": "system", "content": note}], schema, timeout=timeout, cancel=cancel
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
        """Schema-constrained JSON through the server; checked here whatever the server did.
        A misfit is asked once more; a second misfit is refused (:class:`SchemaRefused`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        why = ""
        partial = ""  # the last answer cut at max_tokens (ModelError.partial)
        for attempt in range(2):
            if attempt:
                self.retries += 1
            text = self._structured_text(messages, schema, deadline, max_tokens, cancel)
            if cancel is not None and cancel.is_set():
                raise ModelError("the structured call was cancelled")
            try:
                value = json.loads(_strip_fence(text), strict=False)
            except ValueError as e:
                cut = self.last_done is not None and self.last_done.extra.get("truncated")
                why = "output cut at max_tokens" if cut else f"not JSON: {e}"
                partial = _strip_fence(text) if cut else partial
                continue
            if not isinstance(value, dict):
                why = "not a JSON object"
                continue
            misfit = schema_problem(value, schema)
            if misfit is None:
                return value
            why = misfit
        raise SchemaRefused(
            f"the model server's answer did not fit the step's schema twice "
            f"({why}); nothing was written",
            partial=partial,
        )

    def _structured_text(
        self,
        messages: list[Message],
        schema: dict[str, Any],
        deadline: float | None,
        max_tokens: int | None,
        cancel: threading.Event | None,
    ) -> str:
        modes = [self.schema_mode] if self.schema_mode else list(SCHEMA_MODES)
        last: ServerError | None = None
        for mode in modes:
            fmt: dict[str, Any] | None
            msgs = messages
            if mode == "json_schema":
                fmt = {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema, "strict": True},
                }
            elif mode == "json_object":
                fmt = {"type": "json_object", "schema": schema}
            else:
                fmt = None
                msgs = [
                    *messages,
                    {
                        "role": "system",
                        "content": "Reply with one JSON object only, no prose, that fits "
                        "this JSON schema: " + json.dumps(schema, ensure_ascii=False),
                    },
                ]
            parts: list[str] = []
            try:
                for item in self._call(
                    msgs,
                    tools=None,
                    cancel=cancel,
                    deadline=deadline,
                    max_tokens=max_tokens,
                    temperature=self.structured_temperature,
                    response_format=fmt,
                ):
                    if isinstance(item, Done):
                        self.last_done = item
                    elif isinstance(item, str):
                        parts.append(item)
            except ServerError as e:
                # a server that does not know this response_format says 400/422 (or 500, as
                # llama_cpp.server does for a validation error): try the next form
                if fmt is not None and e.status in (400, 415, 422, 500, 501) and len(modes) > 1:
                    last = e
                    continue
                raise
            self.schema_mode = mode
            return "".join(parts).strip()
        raise last or ModelError("the model server refused every JSON form")

    def close(self) -> None:
        """Nothing to free: each call has its own connection."""


def _error_text(raw: bytes) -> str:
    try:
        obj = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:300] or "no details"
    err = obj.get("error", obj) if isinstance(obj, dict) else obj
    if isinstance(err, dict):
        err = err.get("message") or err.get("detail") or err
    return str(err).strip()[:300]


def _strip_fence(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


def _tools_in_system(
    wire: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    block = tools_system_block(tools)
    out = [dict(m) for m in wire]
    if out and out[0]["role"] == "system":
        out[0]["content"] += block
    else:
        out.insert(0, {"role": "system", "content": DEFAULT_SYSTEM + block})
    return out


def api_key_from(env_var: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The key in the environment variable the config names (never the key itself)."""
    if not env_var:
        return None
    return (environ if environ is not None else os.environ).get(env_var) or None
