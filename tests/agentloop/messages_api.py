"""A local server that speaks enough of Anthropic's Messages API for the real `anthropic` client: scripted
responses, JSON or server-sent events (when the request asks to stream), HTTP errors such as 429 and 529, streams
that stop short (`Cut`: the connection closed, a link dropped, an `error` event mid-stream), and the model's own
mistakes (a streamed tool input that is not valid JSON, a tool input that is not an object).

    server = MessagesServer(responder)      # responder(request_json) -> Reply | Failure
    with server:
        client = anthropic.Anthropic(api_key="test", base_url=server.url)
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    content: list[dict]
    stop_reason: str | None = None
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read: int = 0
    cache_write: int = 0
    model: str = "claude-sonnet-4-6"
    delta_chars: int = 7  # a streamed text block comes in deltas of this many characters
    event_gap_s: float = 0.0  # a streamed reply's events come this far apart (a server that trickles)

    def message(self, ident: str) -> dict:
        stop = self.stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn")
        return {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_read_input_tokens": self.cache_read,
                "cache_creation_input_tokens": self.cache_write,
            },
        }


@dataclass
class Failure:
    status: int  # 429, 529, 500, 400, ...
    headers: dict = field(default_factory=dict)
    message: str | None = None

    def body(self) -> dict:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}.get(
            self.status, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": self.message or f"scripted {self.status}"}}


@dataclass
class Cut:
    """A streamed reply that stops short: the first `events` server-sent events of `reply`'s stream, then, by
    `ending`: "close", the connection closes as a whole body would end (no length was announced), so that all a
    client sees is the end of the stream; "drop", it closes short of the length its headers announced (a link that
    dropped); "overloaded", an `error` event (overloaded_error), as the API sends one mid-stream, and the end."""

    reply: Reply
    events: int
    ending: str = "close"


@dataclass
class RawStream:
    """A stream served exactly as these (event name, data) pairs say, however broken their order or shape."""

    events: list[tuple[str, dict]]


def text(t: str) -> dict:
    return {"type": "text", "text": t}


_ids = itertools.count(1)


def tool_use(name: str, tool_input, ident: str | None = None) -> dict:
    return {"type": "tool_use", "id": ident or f"toolu_{next(_ids):04d}", "name": name, "input": tool_input}


def broken_tool_use(name: str, streamed_input: str, ident: str | None = None) -> dict:
    """A tool call whose streamed input is this text exactly (not valid JSON, say), as a model may send it."""
    return dict(tool_use(name, {}, ident), streamed_input=streamed_input)


class Script:
    """Scripted replies: turns (requests with tools) and question selections (requests without) from two queues.
    Failures are served before the next reply of their queue."""

    def __init__(self, turns=(), selections=()):
        self.turns = list(turns)
        self.selections = list(selections)

    def __call__(self, request: dict):
        queue = self.turns if request.get("tools") else self.selections
        if not queue:
            if request.get("tools"):
                raise AssertionError("the script has no turn left")
            return Reply([text("QUESTION: none\nREASON: the script has no selection left")])
        return queue.pop(0)


BLOCK_FIELDS = {
    "text": {"type", "text", "cache_control", "citations"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
}


def first_role_refusal(messages: list[dict]) -> str | None:
    if not messages or messages[0].get("role") != "user":
        return "messages: the first message must use the user role"
    return None


def id_refusal(messages: list[dict]) -> str | None:
    """Why the API would refuse these messages for their tool_use ids: each matches ^[a-zA-Z0-9_-]+$ and none
    repeats in the whole request, whichever message holds it (`tool_use` ids must be unique)."""
    seen = set()
    for i, m in enumerate(messages):
        for j, block in enumerate(m.get("content") if isinstance(m.get("content"), list) else []):
            ident = block.get("id") if block.get("type") == "tool_use" else None
            if ident is None:
                continue
            if not re.fullmatch(r"[a-zA-Z0-9_-]+", str(ident)):
                return f"messages.{i}.content.{j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
            if ident in seen:
                return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
            seen.add(ident)
    return None


def api_refusal(body: dict) -> str | None:
    """Why the Messages API would answer this request with a 400, for the rules a conversation can break: the
    first message is the user's; tool_use ids are well formed and
    unique in the request; no block is an empty text or carries fields the API does not know; a tool input
    is an object; every tool_use is answered by a tool_result in the next message, those first in it, and no
    tool_result answers nothing. None when it would accept it. (Like the API, adjacent same-role messages and a
    last assistant message, which the API continues, are accepted.)"""
    messages = body.get("messages") or []
    if (refused := first_role_refusal(messages) or id_refusal(messages)) is not None:
        return refused
    messages = [
        dict(m, content=[{"type": "text", "text": m["content"]}]) if isinstance(m.get("content"), str) else m
        for m in messages
    ]
    for i, m in enumerate(messages):
        content = m.get("content")
        if not content:
            return f"messages.{i}: the message is empty"
        for j, block in enumerate(content):
            unknown = set(block) - BLOCK_FIELDS.get(block.get("type"), set(block))
            if unknown:
                return f"messages.{i}.content.{j}.{sorted(unknown)[0]}: Extra inputs are not permitted"
            if block.get("type") == "text" and not block.get("text", "").strip():
                return f"messages.{i}.content.{j}: text content blocks must contain non-whitespace text"
            if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
                return f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
        asked = [b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"] if i else []
        answered = [b["tool_use_id"] for b in content if b.get("type") == "tool_result"]
        if m.get("role") == "assistant" and answered:
            return f"messages.{i}: tool_result blocks are only allowed in user messages"
        if m.get("role") == "user" and (asked or answered):
            if set(answered) - set(asked):
                return f"messages.{i}: unexpected tool_use_id found in tool_result blocks: {sorted(set(answered) - set(asked))}"
            if set(asked) - set(answered):
                return (
                    f"messages.{i}: tool_use ids were found without tool_result blocks immediately after: "
                    f"{sorted(set(asked) - set(answered))}"
                )
            if any(b.get("type") != "tool_result" for b in content[: len(answered)]):
                return f"messages.{i}: tool_result blocks must come first in the user message"
    if messages[-1].get("role") == "assistant":
        asked = [b["id"] for b in messages[-1]["content"] if b.get("type") == "tool_use"]
        if asked:
            return f"tool_use ids were found without tool_result blocks immediately after: {asked}"
    return None


def _sse(message: dict, delta_chars: int = 7) -> bytes:
    return b"".join(_sse_events(message, delta_chars))


def _sse_event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


OVERLOADED_EVENT = _sse_event(
    "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
)


def _sse_events(message: dict, delta_chars: int = 7) -> list[bytes]:
    """The stream of `message`, one server-sent event an item."""
    events = []
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    events.append(("message_start", {"type": "message_start", "message": start}))
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                )
            )
            t = block["text"]
            for piece in [t[j : j + delta_chars] for j in range(0, len(t), delta_chars)] or [""]:
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}},
                    )
                )
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                    },
                )
            )
            raw = block.get("streamed_input", json.dumps(block["input"]))
            for piece in [raw[j : j + 11] for j in range(0, len(raw), 11)]:
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return [_sse_event(name, data) for name, data in events]


def _stream_bytes(stream: Cut | RawStream, ident: str) -> tuple[bytes, int | None]:
    """What a Cut or a RawStream sends, and the length its headers announce (None: none, the stream ends when the
    connection closes)."""
    if isinstance(stream, RawStream):
        data = b"".join(_sse_event(name, fields) for name, fields in stream.events)
        return data, len(data)
    events = _sse_events(stream.reply.message(ident))
    sent = b"".join(events[: stream.events]) + (OVERLOADED_EVENT if stream.ending == "overloaded" else b"")
    # "drop": the whole stream's length, of which only a part comes
    return sent, len(b"".join(events)) if stream.ending == "drop" else None


class MessagesServer:
    def __init__(self, responder: Callable[[dict], Reply | Failure | Cut | RawStream]):
        self.responder = responder
        self.requests: list[dict] = []
        self.failures_served: list[int] = []
        self.cuts_served: list[str] = []  # the ending of each Cut served
        self.refusals: list[str] = []  # why requests were answered 400 as the API would (api_refusal)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if not self.path.startswith("/v1/messages"):
                    self.send_error(404)
                    return
                server.requests.append({"body": body, "headers": dict(self.headers)})
                refusal = api_refusal(body)
                if refusal is not None:  # as the API would, before any model sees it
                    server.refusals.append(refusal)
                    reply = Failure(400, message=refusal)
                else:
                    reply = server.responder(body)
                if isinstance(reply, Failure):
                    server.failures_served.append(reply.status)
                    data = json.dumps(reply.body()).encode()
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if isinstance(reply, (Cut, RawStream)):
                    server.cuts_served.append(getattr(reply, "ending", "raw"))
                    self._send_cut(reply)
                    return
                message = reply.message(f"msg_{len(server.requests):04d}")
                if body.get("stream") and reply.event_gap_s:
                    self._send_trickle(_sse_events(message, reply.delta_chars), reply.event_gap_s)
                elif body.get("stream"):
                    data = _sse(message, reply.delta_chars)
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:  # a whole message: the server parsed every tool input, so none is left unparsed
                    message["content"] = [
                        {k: v for k, v in b.items() if k != "streamed_input"} for b in message["content"]
                    ]
                    data = json.dumps(message).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def _send_trickle(self, events: list[bytes], gap_s: float):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in events:
                    try:
                        self.wfile.write(event)
                        self.wfile.flush()
                    except OSError:  # the client gave up on the stream
                        break
                    time.sleep(gap_s)
                self.close_connection = True

            def _send_cut(self, cut: Cut | RawStream):
                sent, announced = _stream_bytes(cut, f"msg_{len(server.requests):04d}")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                if announced is not None:
                    self.send_header("content-length", str(announced))
                self.end_headers()
                self.wfile.write(sent)
                self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def turn_requests(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["body"].get("tools")]
