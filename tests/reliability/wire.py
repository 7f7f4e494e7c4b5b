"""A worker socket spoken by hand (docs/protocol.md section 2) against a live server, for tests that need to see
each ack and nack."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from websockets.sync.client import connect


def note_event(run_id: int, seq: int, text: str | None = None) -> dict:
    return {
        "type": "event",
        "v": 1,
        "run_id": run_id,
        "seq": seq,
        "kind": "note",
        "ts": datetime(2026, 11, 30, 12, 0, tzinfo=UTC).isoformat(),
        "payload": {"text": text or f"note {seq}"},
        "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
    }


def usage_event(run_id: int, seq: int) -> dict:
    """A model call's usage (1 token in, 2 out, $0.001): the only kind a run's totals count (docs/protocol.md 1.1)."""
    counts = {"tokens_in": 1, "tokens_out": 2, "cost_usd": 0.001}
    payload = {"purpose": "turn", "model": "m", **counts}
    return note_event(run_id, seq) | {"kind": "usage", "payload": payload, "usage": counts}


class WireWorker:
    def __init__(self, port: int, token: str):
        self._connection = connect(
            f"ws://127.0.0.1:{port}/ws/worker/",
            open_timeout=10,
            max_size=None,
            additional_headers={"Authorization": f"Bearer {token}"},
        )
        self.ws = self._connection.__enter__()
        self.send({"type": "hello", "v": 1, "host": "wire", "gpus": ["cpu"], "targets": ["cpu"], "active_runs": []})
        assert self.recv()["type"] == "welcome"

    def send(self, message: dict) -> None:
        self.ws.send(json.dumps(message))

    def recv(self, timeout: float = 30) -> dict:
        return json.loads(self.ws.recv(timeout=timeout))

    def claim(self) -> int:
        self.send({"type": "claim", "v": 1, "gpu": 0})
        reply = self.recv()
        assert reply["type"] == "assign", reply
        return reply["run"]["id"]

    def replies_for(self, count: int, timeout: float = 60) -> list[dict]:
        """The next `count` acks/nacks (directives and errors in between are skipped)."""
        replies = []
        while len(replies) < count:
            message = self.recv(timeout)
            if message["type"] in ("ack", "nack"):
                replies.append(message)
        return replies

    def close(self) -> None:
        self._connection.__exit__(None, None, None)
