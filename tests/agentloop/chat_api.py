"""A local server that speaks enough of the OpenAI-compatible `/v1/chat/completions` API (as vLLM and llama.cpp's
server do): scripted answers with tool calls, HTTP errors such as 429 and 503, and answers cut short (`Cut`).

    server = ChatServer([answer(...), Failure(429), ...])    # served in order
    with server:
        OpenAIModel("qwen", settings={"base_url": server.url})
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)


@dataclass
class Failure:
    status: int
    headers: dict = field(default_factory=dict)
    body: str | None = None  # raw body; default: an OpenAI-style error object


@dataclass
class Cut:
    """An answer whose body stops short: the first `keep` bytes of `answer`'s JSON, then the connection closes,
    with the whole body's length announced ("drop": a link that dropped mid-body) or none ("close")."""

    answer: dict
    keep: int
    ending: str = "drop"


def call(name: str, arguments: dict | str, ident: str | None = None) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": ident if ident is not None else f"call_{next(_ids):04d}",
        "type": "function",
        "function": {"name": name, "arguments": raw},
    }


def answer(
    text: str | None = None,
    calls=(),
    finish: str | None = None,
    prompt_tokens=120,
    completion_tokens=30,
    cached_tokens=0,
    model="qwen3-coder",
) -> dict:
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish or ("tool_calls" if calls else "stop")}],
        "usage": usage,
    }


class ChatServer:
    """Serves `script` in order to POST /v1/chat/completions; requests without tools (question selection) are
    served from `selections` when given. Records every request's body and headers."""

    def __init__(self, script, selections=None):
        self.script = list(script)
        self.selections = None if selections is None else list(selections)
        self.requests: list[dict] = []
        self.failures_served: list[int] = []
        self.cuts_served: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                server.requests.append({"body": body, "headers": dict(self.headers)})
                queue = server.script if server.selections is None or body.get("tools") else server.selections
                if not queue:
                    self._send(500, {"error": {"message": "the script has nothing left"}})
                    return
                reply = queue.pop(0)
                if isinstance(reply, Failure):
                    server.failures_served.append(reply.status)
                    raw = (
                        reply.body
                        if reply.body is not None
                        else json.dumps({"error": {"message": f"scripted {reply.status}", "type": "server_error"}})
                    )
                    self._send(reply.status, raw, reply.headers)
                    return
                if isinstance(reply, Cut):
                    server.cuts_served.append(reply.ending)
                    self._send_cut(reply)
                    return
                self._send(200, reply)

            def _send_cut(self, cut: Cut):
                data = json.dumps(cut.answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                if cut.ending == "drop":
                    self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: cut.keep])
                self.wfile.flush()
                self.close_connection = True

            def _send(self, status, payload, headers=None):
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
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
