"""The Anthropic backend: the `anthropic` SDK's Messages API with tool use, retries, prompt caching and costs.

Settings (the run's settings, else the environment): api_key (ANTHROPIC_API_KEY), base_url (ANTHROPIC_BASE_URL),
max_tokens, stream (stream each response and assemble it; needed for long outputs), max_reply_bytes (the most a reply
may hold, agentloop.models.reply.REPLY_MAX_BYTES unless set), max_retries, backoff_base_s, timeout_s.

Prompt caching: the stable prefix (tools and system prompt) carries one cache breakpoint and the newest message
another, so each turn re-reads the conversation so far from the cache instead of paying for it again.

A streamed response is assembled here from the raw events, not by the SDK's helper, which raises on a tool input
that is not valid JSON and loses the whole response: the model's mistake becomes a tool_use block with `input: {}`
and the text it sent as `raw_input`, which the loop answers with an error the model can read.

A stream is whole only once its `message_stop` has come. One that stops short (the connection closed, a link that
dropped mid-body, an `error` event such as `overloaded_error` mid-stream) is a failed call, retried as a 529 before
the stream would be (same backoff, same limit): taken as it was, it would end the turn with a cut tool call lost.
Blocks are put together by the index each event names, not in the order they began (a stream may interleave them);
an event that names a block never started (or one started twice), or comes without what it carries, is a broken
stream (StreamBroken), tried again in the same way. A message_delta without usage leaves message_start's standing.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Iterable
from typing import Any, cast

import anthropic

from agentloop.errors import ModelFailed, ReplyTooLarge
from agentloop.interfaces import Model, Notify
from agentloop.models.reply import (
    REPLY_MAX_BYTES,
    ModelReply,
    reply_too_large,
    token_count,
    usage_of,
    with_charged_attempts,
)
from agentloop.models.retry import RETRY_STATUSES, ChargedAttempts, RetryPolicy, attempt_timeout, parse_retry_after

CACHE = {"type": "ephemeral"}
# An `error` event in a stream that began 200 OK: the status the same error has before a stream (the API's error
# types), which decides whether it is retried.
STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class StreamCut(Exception):
    """A stream that ended before its `message_stop`: the reply is not whole, and the call is tried again.
    `events_seen`: how many of its events came (one or more: the reply had begun, and may have been charged)."""

    def __init__(self, message: str, events_seen: int = 0) -> None:
        super().__init__(message)
        self.events_seen = events_seen


class StreamBroken(Exception):
    """A stream event that cannot be read into the message (a delta of a block never started, an event without what
    it carries): read_stream says it as a StreamCut, so the call is tried again and may have been charged."""


def _http_errors(*names: str) -> tuple[type[Exception], ...]:
    """The HTTP library's error classes of these names: httpx's, or httpx2's in the SDK versions built on it."""
    found = []
    for module in ("httpx", "httpx2"):
        for name in names:
            try:
                found.append(getattr(importlib.import_module(module), name))
            except (ImportError, AttributeError):
                continue
    return tuple(found)


# a read cut mid-body (the SDK wraps these while it sends the request, not while a stream is read)
TRANSPORT_ERRORS = _http_errors("TransportError")
# a connection never made: the request did not reach the server, which charged nothing
CONNECT_ERRORS = _http_errors("ConnectError", "ConnectTimeout")


def began_a_reply(exc: Exception) -> bool:
    """Whether a failed attempt may have been charged, its usage never read: a stream cut after some events, an
    error event mid-stream, or a connection lost once the request was sent (a body cut short, a read that timed
    out while the model worked). Not a connection never made."""
    if isinstance(exc, StreamCut):
        return exc.events_seen > 0
    if isinstance(exc, anthropic.APIConnectionError):
        return not isinstance(exc.__cause__, CONNECT_ERRORS)
    return isinstance(exc, anthropic.APIStatusError) and _stream_error_type(exc) is not None


def _stream_error_type(exc: anthropic.APIStatusError) -> str | None:
    """The error type of an `error` event that came mid-stream (the response itself said 200), else None."""
    if exc.status_code != 200 or not isinstance(exc.body, dict):
        return None
    error = exc.body.get("error")
    return error.get("type") if isinstance(error, dict) else None


def classify(exc: Exception) -> tuple[bool, float | None, str]:
    if isinstance(exc, anthropic.APIStatusError):
        mid_stream = _stream_error_type(exc)
        if mid_stream is not None:
            return STREAM_ERROR_STATUS.get(mid_stream, 500) in RETRY_STATUSES, None, f"{mid_stream} mid-stream"
        retry_after = parse_retry_after(exc.response.headers.get("retry-after") if exc.response is not None else None)
        return exc.status_code in RETRY_STATUSES, retry_after, f"HTTP {exc.status_code}"
    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return True, None, type(exc).__name__
    if isinstance(exc, StreamCut):
        return True, None, str(exc)
    return False, None, type(exc).__name__


def block_to_dict(block: dict[str, Any]) -> dict[str, Any]:
    """A response's content block (the API's JSON) as the trace keeps it."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        # no id is the model's mistake, answered by the loop (agentloop.models.reply.received), not a KeyError
        out = {"type": "tool_use", "id": block.get("id"), "name": block.get("name", ""), "input": block.get("input")}
        if "raw_input" in block:
            out["raw_input"] = block["raw_input"]
        return out
    return block


# The SDK's raw stream events (anthropic.types.RawMessageStreamEvent), read by their `type` alone: Any, since the
# SDK's union does not narrow on `event.type`, and the tests hand in stand-ins of the same shape.
StreamEvent = Any


class _Assembly:
    """A streamed message being put together: each block's text, thinking and input JSON kept as pieces and
    joined once at the end (appending to a string made a long reply cost quadratic time: 1 MB of 7-character
    deltas took 120 s), and the bytes of the reply counted against REPLY_MAX_BYTES."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.message: dict[str, Any] = {}
        # by the index each content_block_start gives, not by arrival: a stream may interleave its blocks
        self.blocks: dict[int, dict[str, Any]] = {}
        self.pieces: dict[tuple[int, str], list[str]] = {}  # (block index, field) -> its pieces
        self.size = 0

    def add(self, index: int, key: str, piece: str) -> None:
        self.size += len(piece.encode("utf-8", errors="surrogatepass"))
        if self.size > self.max_bytes:
            raise ReplyTooLarge(reply_too_large(self.size, self.max_bytes))
        self.pieces.setdefault((index, key), []).append(piece)

    def finish(self) -> dict[str, Any]:
        for (index, key), pieces in self.pieces.items():
            joined = "".join(pieces)
            if key != "input_json":
                self.blocks[index][key] = self.blocks[index].get(key, "") + joined
                continue
            try:
                self.blocks[index]["input"] = json.loads(joined) if joined.strip() else {}
            except (ValueError, RecursionError):  # a thousand levels deep is not JSON Python reads either
                self.blocks[index]["input"] = {}
                self.blocks[index]["raw_input"] = joined
        for index, block in self.blocks.items():
            if block.get("type") == "tool_use" and (index, "input_json") not in self.pieces:
                block.setdefault("input", {})
        self.message["content"] = [self.blocks[index] for index in sorted(self.blocks)]
        return self.message


def read_stream(
    events: Iterable[StreamEvent], max_bytes: int = REPLY_MAX_BYTES, deadline: float | None = None
) -> dict[str, Any]:
    """The message a stream of raw server-sent events describes, as the API's JSON. Tool inputs are parsed whole,
    at the end: one that does not parse (invalid, or cut short by max_tokens) is kept as `raw_input`. StreamCut
    when the stream ends before its `message_stop`, or its link drops, or it is still coming at `deadline` (the
    run's wall budget: a server that trickles its events never trips a read's timeout); ModelFailed once the
    reply's text passes `max_bytes` (the call is not tried again: the model would send as much again)."""
    assembly = _Assembly(max_bytes)
    seen, stopped = 0, False
    try:
        for event in events:
            seen += 1
            stopped = stopped or event.type == "message_stop"
            _read_event(event, assembly)
            if deadline is not None and not stopped and time.monotonic() > deadline:
                raise StreamCut(f"the stream was still coming after {seen} events when the wall budget ran out", seen)
    except TRANSPORT_ERRORS as exc:
        raise StreamCut(f"the stream's link dropped after {seen} events ({type(exc).__name__})", seen) from exc
    except StreamBroken as exc:
        raise StreamCut(f"the stream broke at its event {seen}: {exc}", seen) from exc
    if not stopped:
        raise StreamCut(f"the stream ended after {seen} events without message_stop", seen)
    return assembly.finish()


def _read_event(event: StreamEvent, assembly: _Assembly) -> None:
    """Add one raw event to the message being assembled (in place)."""
    message, blocks = assembly.message, assembly.blocks
    if event.type == "message_start":
        message.update(_part(event, "message"))
    elif event.type == "content_block_start":
        blocks[_index(event, blocks, new=True)] = _part(event, "content_block")
    elif event.type == "content_block_delta":
        index = _index(event, blocks, new=False)
        _read_delta(blocks[index], event.delta, index, assembly)
    elif event.type == "message_delta":
        message["stop_reason"] = event.delta.stop_reason
        # Usage on a message_delta is cumulative: it replaces what message_start said, field by field.
        if getattr(event, "usage", None) is not None:  # (none: what message_start said stands)
            message.setdefault("usage", {}).update(event.usage.to_dict(mode="json", exclude_none=True))


def _part(event: StreamEvent, name: str) -> dict[str, Any]:
    """The object an event carries under `name` (the message, a content block), as JSON. StreamBroken without it."""
    part = getattr(event, name, None)
    if part is None:
        raise StreamBroken(f"a {event.type} event came without its {name}")
    return cast("dict[str, Any]", part.to_dict(mode="json", exclude_none=True))


def _index(event: StreamEvent, blocks: dict[int, dict[str, Any]], new: bool) -> int:
    """The block an event names: one not started yet for a content_block_start, else one started. StreamBroken for
    any other (a delta of a block never started raised IndexError, which ended the run internal_error)."""
    index = getattr(event, "index", None)
    if not isinstance(index, int) or (index in blocks) == new:
        said = "started again" if new else "never started"
        raise StreamBroken(f"a {event.type} event named content block {index!r}, {said}")
    return index


def _read_delta(block: dict[str, Any], delta: StreamEvent, index: int, assembly: _Assembly) -> None:
    if delta.type == "text_delta":
        assembly.add(index, "text", delta.text)
    elif delta.type == "input_json_delta":
        assembly.add(index, "input_json", delta.partial_json)
    elif delta.type == "thinking_delta":
        assembly.add(index, "thinking", delta.thinking)
    elif delta.type == "signature_delta":
        block["signature"] = delta.signature
    elif delta.type == "citations_delta":
        block.setdefault("citations", []).append(delta.citation.to_dict(mode="json", exclude_none=True))


def with_cache_breakpoints(
    system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> tuple[list[Any], list[Any], list[Any]]:
    system_blocks = [{"type": "text", "text": system, "cache_control": CACHE}] if system else []
    tools = [dict(t) for t in tools]
    if tools and not system_blocks:
        tools[-1]["cache_control"] = CACHE
    messages = [{"role": m["role"], "content": [dict(b) for b in m["content"]]} for m in messages]
    if messages:
        last = messages[-1]["content"]
        for block in reversed(last):
            if block.get("type") in ("text", "tool_result", "tool_use", "image", "document"):
                block["cache_control"] = CACHE
                break
    return system_blocks, messages, tools


def _other_kind(name: str) -> str:
    """For a model id that is not Claude's (`gpt-4o`, `qwen3-coder`), how to name another kind of model: an id
    without a prefix is taken for Anthropic's, so the missing key alone would not say what went wrong."""
    if name.lower().startswith("claude"):
        return ""
    return (
        f". '{name}' is taken for an Anthropic model id; a model of an OpenAI-compatible endpoint is named "
        f"openai:{name} (with OPENAI_BASE_URL), a recorded run replay:TRACE"
    )


class AnthropicModel(Model):
    def __init__(
        self,
        name: str,
        settings: dict[str, Any] | None = None,
        notify: Notify | None = None,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        settings = settings or {}
        self.name = name
        self.max_tokens = int(settings.get("max_tokens", 8192))
        self.stream = bool(settings.get("stream", True))
        self.max_reply_bytes = int(settings.get("max_reply_bytes", REPLY_MAX_BYTES))
        self.timeout_s = float(settings.get("timeout_s", 600))
        self.notify = notify
        self.retry = RetryPolicy(
            max_retries=int(settings.get("max_retries", 8)), base_s=float(settings.get("backoff_base_s", 1.0))
        )
        if client is None:
            api_key = settings.get("api_key") or os.environ.get("ANTHROPIC_API_KEY")
            if not api_key:
                raise ModelFailed(
                    f"no Anthropic API key: set ANTHROPIC_API_KEY or the run's api_key setting{_other_kind(name)}"
                )
            base_url = settings.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None
            # Retries are ours (they are reported as notes and use our backoff), so the SDK's are off.
            client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=self.timeout_s)
        self.client = client

    def query(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], purpose: str
    ) -> ModelReply:
        system_blocks, messages, tools = with_cache_breakpoints(system, messages, tools)
        # the conversation's JSON as it is: the SDK's TypedDict params would re-declare the Messages API here
        kwargs: dict[str, Any] = {"model": self.name, "max_tokens": self.max_tokens, "messages": messages}
        if system_blocks:
            kwargs["system"] = system_blocks
        if tools:
            kwargs["tools"] = tools

        def call() -> dict[str, Any]:
            timeout = attempt_timeout(self.timeout_s, self.deadline)  # the run's wall budget bounds the wait
            if self.stream:
                with self.client.messages.create(**kwargs, stream=True, timeout=timeout) as events:
                    return read_stream(events, self.max_reply_bytes, self.deadline)
            # The response's own JSON, not the SDK's typed message: it keeps a tool input that is not an object.
            # (the SDK types the parsed body as `object`; the Messages API answers a JSON object)
            response = self.client.messages.with_raw_response.create(**kwargs, timeout=timeout)
            size = len(response.http_response.content)
            if size > self.max_reply_bytes:
                raise ReplyTooLarge(reply_too_large(size, self.max_reply_bytes))
            try:
                return cast("dict[str, Any]", response.json())
            except RecursionError:  # nested past what Python reads: the same again if tried again
                raise ModelFailed("the model's reply nests too deep to be read", charged_unread=True) from None

        charged = ChargedAttempts(classify, began_a_reply)
        try:
            message = self.retry.run(call, charged, self.notify, deadline=self.deadline)
        except (anthropic.APIError, StreamCut) as exc:
            why = f"the model call failed: {type(exc).__name__}: {exc}"
            raise ModelFailed(why, charged_unread=charged.count > 0) from exc
        return with_charged_attempts(self._reply(message), charged.count)

    def _reply(self, message: dict[str, Any]) -> ModelReply:
        u = message.get("usage")
        u = u if isinstance(u, dict) else {}  # no usage at all: every count unknown, not zero
        model = message.get("model")
        model = model if isinstance(model, str) and model else self.name
        usage = usage_of(
            model,
            token_count(u.get("input_tokens")),
            token_count(u.get("output_tokens")),
            token_count(u.get("cache_read_input_tokens"), required=False),
            token_count(u.get("cache_creation_input_tokens"), required=False),
        )
        content = message.get("content") or []
        if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
            raise ModelFailed(
                f"the model's reply has content that is not a list of blocks: {json.dumps(content)[:200]}",
                charged_unread=True,
            )
        return ModelReply(
            content=[block_to_dict(b) for b in content],
            stop_reason=message.get("stop_reason") or "end_turn",
            model=model,
            usage=usage,
        )
