"""When events go on the wire: adaptive batching, as in group commit or Nagle's algorithm.

An event offered while fewer than `max_frames` frames await their answer goes out at once, alone: an idle worker
adds no delay. Events offered while the window is full wait, and when a frame is answered everything that waited
goes out in one `events` message (up to `max_events` and `max_bytes`). Under load the frames fill by themselves,
so the server handles fewer frames per event (its event loop spends most of its time per frame, not per event:
docs/benchmarks.md), while the added latency stays below one round trip.

Pure Python, no I/O and no lock: the worker client (`client.py`) and the benchmark's simulated workers
(`bench/event_fanout.py`) both drive it, so the benchmark measures the policy the product uses. The caller sends
the frames it is handed, in order, and reports every answer (`settle`). What is sent is still kept in the spool
until acknowledged: the window only decides when, and forgets everything on `reset` (a new connection).

No frame is ever over the server's message limit (`Limits`, from its welcome): an event whose `event` message
would be over it is not sent at all; the window lists it in `take_refused()`, and the caller drops it for good
(the server could only drop the connection, and the event would be sent again forever, holding back the rest).
Nor is an event that nests deeper than every reader takes (`EVENT_MAX_DEPTH`): the server would refuse it for good,
and one past what its JSON reader reads (about 950 levels) it could only answer with `error`, so that the event
was offered again forever.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from agentloop.json_safe import nests_deeper
from agentloop.protocol import EVENT_MAX_DEPTH, PROTOCOL_VERSION

# A frame of events holds at most this much (or the server's message limit, when that is smaller): a batch never
# meets the limit; an event bigger than `max_bytes` travels alone as an `event` message, where the server's answer
# to an event over its event limit is a final nack (docs/protocol.md 2.4), not an error for the whole frame.
MAX_EVENTS = 256
MAX_BYTES = 256 * 1024
# What a server whose welcome has no `limits` accepts (daphne's default frame and message limit).
OLD_SERVER_MESSAGE_BYTES = 2**20
_EVENTS_OVERHEAD = len(f'{{"type":"events","v":{PROTOCOL_VERSION},"events":[]}}')
# One frame in flight (stop and wait): fuller frames, and at 2,000 events/s a lower p99 than with two frames in
# flight (79 and 87 ms against 102 and 113 ms, docs/benchmarks.md "Events"). An idle link still sends at once.
MAX_FRAMES = 1


@dataclass(frozen=True)
class Limits:
    """The server's size limits (docs/protocol.md 2.3, `welcome`): `message_bytes`, the largest websocket message
    it reads (a bigger one drops the connection); `event_bytes`, the largest event it stores (a bigger one within
    `message_bytes` gets a final nack)."""

    message_bytes: int = OLD_SERVER_MESSAGE_BYTES
    event_bytes: int = OLD_SERVER_MESSAGE_BYTES

    @classmethod
    def from_welcome(cls, welcome: dict[str, Any]) -> tuple[Limits, str | None]:
        """The limits a welcome announces, and what was wrong with them if anything (then the old server's 1 MiB
        holds: the smallest limit a version-1 server has had)."""
        if "limits" not in welcome:
            return cls(), None
        limits = welcome["limits"]
        sizes = [limits.get(name) if isinstance(limits, dict) else None for name in ("message_bytes", "event_bytes")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes):
            return cls(), f"the welcome's limits are not two positive byte counts: {limits!r:.200}"
        message, event = cast("list[int]", sizes)  # checked just above
        return cls(message, min(event, message)), None


def event_key(event: dict[str, Any]) -> tuple[str, int]:
    return (str(event["run_id"]), int(event["seq"]))


@dataclass
class Frame:
    """One websocket message: a plain `event` when `single`, else an `events` message listing the events."""

    encoded: list[str]  # each event's envelope as JSON, without `type` and `v`
    keys: list[tuple[str, int]]
    single: bool
    sent_at: float = 0.0
    unsettled: set[Any] = field(default_factory=set)

    def text(self, version: int = PROTOCOL_VERSION) -> str:
        if self.single:  # the envelope is a non-empty object: put type and v in front of its fields
            return f'{{"type":"event","v":{version},{self.encoded[0][1:]}'
        return f'{{"type":"events","v":{version},"events":[{",".join(self.encoded)}]}}'


class SenderWindow:
    """Decides which events to send now. `batching=False` (a server that did not offer `events` in its welcome)
    sends every event at once in its own `event` message, as workers did before batching."""

    def __init__(
        self,
        *,
        batching: bool = True,
        max_frames: int = MAX_FRAMES,
        max_events: int = MAX_EVENTS,
        max_bytes: int = MAX_BYTES,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_frames < 1 or max_events < 1:
            raise ValueError("a window needs room for one frame of one event")
        self.batching = batching
        self.max_frames = max_frames
        self.max_events = max_events
        self.limits = limits or Limits()
        # The events of one `events` message, so that the message with its envelope stays within the limit.
        self.max_bytes = min(max_bytes, self.limits.message_bytes - _EVENTS_OVERHEAD)
        self.clock = clock
        self._waiting: dict[tuple[str, int], str] = {}  # key -> encoded event, in offer order
        self._in_flight: dict[int, Frame] = {}  # id(frame) -> frame, oldest first
        self._frame_of: dict[tuple[str, int], Frame] = {}
        self._refused: list[tuple[tuple[str, int], str]] = []

    # ------------------------------------------------------------------------------------------ state
    @property
    def frames_in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def unsettled(self) -> int:
        """Events offered and not yet answered (waiting or in flight)."""
        return len(self._waiting) + len(self._frame_of)

    def holds(self, key: tuple[str, int]) -> bool:
        return key in self._waiting or key in self._frame_of

    def take_refused(self) -> list[tuple[tuple[str, int], str]]:
        """The events offered since the last call that no message may carry: (key, why not). They were not
        queued; the caller refuses them for good."""
        refused, self._refused = self._refused, []
        return refused

    # ------------------------------------------------------------------------------------------ input
    def offer(self, *events: dict[str, Any]) -> list[Frame]:
        """Queue events (an event already waiting or in flight is not queued twice, one no message may carry is
        not queued but refused: `take_refused`); return the frames to send now, in order."""
        for event in events:
            key = event_key(event)
            if self.holds(key):
                continue
            if nests_deeper(event, EVENT_MAX_DEPTH):  # first: json.dumps recurses, and gives up near 1,000 levels
                self._refused.append(
                    (key, f"not sent: it nests deeper than the {EVENT_MAX_DEPTH} levels every reader takes")
                )
                continue
            # ASCII (json.dumps escapes the rest), so its length is its size in bytes on the wire.
            text = json.dumps(event, separators=(",", ":"), default=str)
            size = len(Frame([text], [key], True).text())
            if size > self.limits.message_bytes:
                limit = self.limits.message_bytes
                why = f"not sent: its event message of {size} bytes is over the server's message limit of {limit} bytes"
                self._refused.append((key, why))
            else:
                self._waiting[key] = text
        return self._fill()

    def settle(self, run_id: object, seq: int) -> list[Frame]:
        """The server answered this event (ack, or nack of either kind): return the frames that may go now. An
        answer for an event the window does not hold (a duplicate, a frame already expired) changes nothing
        but dropping that event if it waits to be sent again."""
        key = (str(run_id), int(seq))
        self._waiting.pop(key, None)
        frame = self._frame_of.pop(key, None)
        if frame is None:
            return []
        frame.unsettled.discard(key)
        if frame.unsettled:
            return []
        del self._in_flight[id(frame)]
        return self._fill()

    def expire(self, after_s: float) -> list[Frame]:
        """Forget frames unanswered for `after_s` seconds (an `error` reply, a lost message): their events stay in
        the spool, whose re-send timer offers them again. Returns the frames that may go now."""
        now = self.clock()
        stale = [f for f in self._in_flight.values() if now - f.sent_at > after_s]
        if not stale:
            return []
        for frame in stale:
            del self._in_flight[id(frame)]
            for key in frame.unsettled:
                self._frame_of.pop(key, None)
        return self._fill()

    def reset(self) -> None:
        """A new connection: nothing is in flight any more, and nothing waits (the spool is offered again)."""
        self._waiting.clear()
        self._in_flight.clear()
        self._frame_of.clear()
        self._refused.clear()

    # ------------------------------------------------------------------------------------------ output
    def _fill(self) -> list[Frame]:
        frames = []
        while self._waiting and (not self.batching or len(self._in_flight) < self.max_frames):
            frame = self._next_frame()
            frame.sent_at = self.clock()
            frame.unsettled = set(frame.keys)
            self._in_flight[id(frame)] = frame
            for key in frame.keys:
                self._frame_of[key] = frame
            frames.append(frame)
        return frames

    def _next_frame(self) -> Frame:
        keys: list[tuple[str, int]] = []
        encoded: list[str] = []
        size = 0
        for key, text in self._waiting.items():
            alone = not self.batching or len(text) > self.max_bytes
            if alone and keys:
                break  # it goes in the next frame, by itself
            if keys and (len(keys) == self.max_events or size + len(text) + 1 > self.max_bytes):
                break
            keys.append(key)
            encoded.append(text)
            size += len(text) + 1
            if alone:
                break
        for key in keys:
            del self._waiting[key]
        single = not self.batching or len(encoded[0]) > self.max_bytes
        return Frame(encoded, keys, single)
