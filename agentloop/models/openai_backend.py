"""The OpenAI-compatible backend: `/v1/chat/completions` with tools, as vLLM, llama.cpp's server, SGLang and the
like serve it, for teams that run their own models (`--model openai:MODEL`).

Settings (the run's settings, else the environment): base_url (OPENAI_BASE_URL, e.g. http://localhost:8000/v1;
required: there is no sensible default for a server of one's own), api_key (OPENAI_API_KEY; optional, many local
servers want none), max_tokens, max_reply_bytes (agentloop.models.reply.REPLY_MAX_BYTES unless set), max_retries,
backoff_base_s, timeout_s.

The loop speaks the Messages-API shape (content blocks, tool_use / tool_result); this module translates both ways,
so the trace of a run on an OpenAI-compatible model has the same events as any other. Only the standard library
is used for HTTP: one JSON POST per call, no streaming (a local server has no proxy cutting long requests). An
answer cut short (its body short of its announced length, or not whole JSON) is a failed call, retried like a 503.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import socket
import urllib.error
import urllib.request
from typing import Any

from agentloop.errors import ModelFailed, ReplyTooLarge
from agentloop.interfaces import Model, Notify
from agentloop.models.reply import (
    REPLY_MAX_BYTES,
    ModelReply,
    Usage,
    reply_too_large,
    token_count,
    usage_of,
    with_charged_attempts,
)
from agentloop.models.retry import RETRY_STATUSES, ChargedAttempts, RetryPolicy, attempt_timeout, parse_retry_after

FINISH_TO_STOP = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class HTTPFailure(Exception):
    """A non-2xx answer, with what the retry decision needs."""

    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.retry_after = retry_after


class BodyCut(ConnectionError):
    """The answer's body stopped short (the connection closed before the length its headers announced), or came
    whole but is no JSON answer: a reply had begun, and the server may have charged it."""


def classify(exc: Exception) -> tuple[bool, float | None, str]:
    if isinstance(exc, HTTPFailure):
        return exc.status in RETRY_STATUSES, exc.retry_after, f"HTTP {exc.status}"
    if isinstance(exc, (urllib.error.URLError, ConnectionError, TimeoutError, socket.timeout)):
        return True, None, type(exc).__name__
    return False, None, type(exc).__name__


# ------------------------------------------------------------------------------------ Messages API -> OpenAI


def _text_of(content: str | list[Any] | None) -> str:
    """A tool result's content (a string or a list of blocks) as plain text."""
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def to_openai_messages(system: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            texts = [b["text"] for b in blocks if b.get("type") == "text" and b.get("text")]
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            # No text beside tool calls is null, as the API has it; an empty turn is "" (some servers refuse null).
            message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or (None if calls else "")}
            if calls:
                message["tool_calls"] = calls
            out.append(message)
            continue
        # A user turn: tool results first, each its own `tool` message right after the assistant's calls (the
        # API requires that order); then any text (a human's message, a question, a note) as one user message.
        for b in blocks:
            if b.get("type") == "tool_result":
                content = _text_of(b.get("content"))
                if b.get("is_error"):
                    content = "[error] " + content
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": content})
        texts = [b["text"] for b in blocks if b.get("type") == "text" and b.get("text")]
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def to_openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("input_schema") or {"type": "object"},
            },
        }
        for t in tools
    ]


# ------------------------------------------------------------------------------------ OpenAI -> Messages API

_generated_ids = itertools.count(1)


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as a tool_use block, its arguments as the Anthropic backend keeps a streamed input
    (docs/protocol.md 1.2): the JSON value they hold, or, for arguments that are not JSON, `input: {}` and the text
    sent as `raw_input`, so that the loop answers either mistake as invalid input (a value that is not an object
    too, as are arguments sent as a JSON value rather than its text) and counts it toward max_invalid_inputs. (They were passed on as `{"_raw_arguments": ...}`, which the tool
    answered with "missing parameter", and a model that sent no JSON went on until a budget ended the run.)"""
    call = call if isinstance(call, dict) else {}
    function = call.get("function")
    function = function if isinstance(function, dict) else {}  # a function that is no object: no name, no input
    block: dict[str, Any] = {
        "type": "tool_use",
        "id": call.get("id") or f"call_kseek_{next(_generated_ids)}",
        "name": function.get("name", ""),
    }
    arguments = function.get("arguments")
    if arguments is None or arguments == "":  # nothing: a tool without parameters
        return block | {"input": {}}
    if not isinstance(arguments, str):  # some servers send the object itself; another value, the loop answers
        return block | {"input": arguments}
    try:
        return block | {"input": json.loads(arguments)}
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested past what Python reads
        return block | {"input": {}, "raw_input": str(arguments)}


def from_openai_message(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = []
    text = message.get("content")
    if isinstance(text, list):  # some servers return content parts
        text = "".join(p["text"] for p in text if isinstance(p, dict) and isinstance(p.get("text"), str))
    if text:
        content.append({"type": "text", "text": text})
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ModelFailed(
            f"the server's answer has tool_calls that are not a list: {json.dumps(calls)[:200]}", charged_unread=True
        )
    content.extend(_tool_use(call) for call in calls)
    return content


class OpenAIModel(Model):
    def __init__(self, name: str, settings: dict[str, Any] | None = None, notify: Notify | None = None) -> None:
        settings = settings or {}
        self.name = name
        base_url = settings.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ModelFailed(
                "no base URL for the OpenAI-compatible model: set OPENAI_BASE_URL (for example "
                "http://localhost:8000/v1) or give --base-url"
            )
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = settings.get("api_key") or os.environ.get("OPENAI_API_KEY") or ""
        self.max_tokens = int(settings.get("max_tokens", 8192))
        self.max_reply_bytes = int(settings.get("max_reply_bytes", REPLY_MAX_BYTES))
        self.timeout_s = float(settings.get("timeout_s", 600))
        self.notify = notify
        self.retry = RetryPolicy(
            max_retries=int(settings.get("max_retries", 8)), base_s=float(settings.get("backoff_base_s", 1.0))
        )

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            timeout = attempt_timeout(self.timeout_s, self.deadline)  # the run's wall budget bounds the wait
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read(self.max_reply_bytes + 1)
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace")
            raise HTTPFailure(exc.code, text, parse_retry_after(exc.headers.get("retry-after"))) from None
        except http.client.HTTPException as exc:  # IncompleteRead above all: a link that dropped mid-body
            raise BodyCut(f"the server's answer was cut short ({type(exc).__name__})") from None
        if len(raw) > self.max_reply_bytes:
            raise ReplyTooLarge(reply_too_large(len(raw), self.max_reply_bytes))
        try:
            answer: dict[str, Any] = json.loads(raw)
            return answer
        except RecursionError:  # nested past what Python reads: the same again if tried again
            raise ModelFailed("the server's answer nests too deep to be read", charged_unread=True) from None
        except ValueError:
            # A cut-off body (or a proxy's page): worth another try, like a dropped connection; and a reply that
            # had begun, so it may have been charged
            raise BodyCut(f"the server's answer is not JSON: {raw[:200]!r}") from None

    def query(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], purpose: str
    ) -> ModelReply:
        body = {"model": self.name, "messages": to_openai_messages(system, messages), "max_tokens": self.max_tokens}
        if tools:
            body["tools"] = to_openai_tools(tools)
        charged = ChargedAttempts(classify, lambda exc: isinstance(exc, BodyCut))  # a body that began, then stopped
        try:
            answer = self.retry.run(lambda: self._post(body), charged, self.notify, deadline=self.deadline)
        except (HTTPFailure, urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            raise ModelFailed(f"the model call failed: {exc}", charged_unread=charged.count > 0) from exc
        return with_charged_attempts(self._reply(answer), charged.count)

    def _reply(self, answer: dict[str, Any]) -> ModelReply:
        try:
            choice = answer["choices"][0]
            message = choice["message"]
            message.get("content")  # an object, not text or a list: else the AttributeError below
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ModelFailed(f"the server's answer has no choices[0].message: {json.dumps(answer)[:300]}") from None
        content = from_openai_message(message)
        finish = choice.get("finish_reason")
        finish = finish if isinstance(finish, str) and finish else "stop"  # (an object is no key of FINISH_TO_STOP)
        stop = FINISH_TO_STOP.get(finish, finish)
        if stop == "end_turn" and any(b["type"] == "tool_use" for b in content):
            stop = "tool_use"  # some servers say "stop" even when they return tool calls
        model = answer.get("model")
        model = model if isinstance(model, str) and model else self.name
        return ModelReply(content=content, stop_reason=stop, model=model, usage=self._usage(answer, model))

    @staticmethod
    def _usage(answer: dict[str, Any], model: str) -> Usage:
        """The answer's usage (agentloop.models.reply.usage_of): a count that is not one, or cached tokens past the
        prompt's, or no usage at all, makes the call's cost unknown rather than zero or negative."""
        u = answer.get("usage")
        u = u if isinstance(u, dict) else {}
        details = u.get("prompt_tokens_details")
        prompt = token_count(u.get("prompt_tokens"))
        cached = token_count(details.get("cached_tokens") if isinstance(details, dict) else None, required=False)
        uncached = None if prompt is None or cached is None or cached > prompt else prompt - cached
        return usage_of(model, uncached, token_count(u.get("completion_tokens")), cached, 0)
