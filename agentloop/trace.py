"""The local trace: a JSONL file, one event a line, appended and fsynced as each event is emitted.

The trace is the run's first sink: an event is durable in it before any other sink (the worker's spool, which
sends it to the server) receives it, so after a machine crash the trace holds every event the spool or the server
holds, and a resumed run never writes another event under a seq already sent. Reading tolerates a last line cut
short by a crash.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class TraceWriter:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        self._repair_tail()
        self._file = open(self.path, "a", encoding="utf-8")
        if created:  # the new file's name must survive a power loss as well as its lines
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def _repair_tail(self) -> None:
        # A crash mid-write leaves a partial last line; appending after it would glue two events together.
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1
            f.truncate(cut)

    def write(self, event: dict[str, Any]) -> None:
        # Strict JSON, one line of UTF-8: the emitter made the event so (agentloop/events.py, json_safe), and a
        # value that is not would fail here rather than write a line no other reader takes.
        self._file.write(json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n")
        self.sync()  # durable before the next sink sees the event (docs/protocol.md 1.3)

    def sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.sync()
            self._file.close()


class TraceError(ValueError):
    pass


def read_trace(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The events of a trace file, in order. A last line cut short by a crash is dropped; any other bad line
    is an error naming its line number."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise TraceError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    events = []
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if number == last:  # the unfinished last line of a crashed writer
                break
            raise TraceError(f"{path}, line {number + 1}: not JSON") from None
        if not isinstance(event, dict) or not {"seq", "kind", "payload"} <= set(event):
            raise TraceError(f"{path}, line {number + 1}: not an event")
        events.append(event)
    for expected, event in enumerate(events):
        if event["seq"] != expected:
            raise TraceError(f"{path}: event {expected} has seq {event['seq']}: the trace has a gap or a repeat")
    return events
