"""The spool: events written to local disk before they are sent, forgotten only when the server acknowledges them.

An append-only JSONL file of `{"event": ...}` and `{"ack": [run_id, seq]}` lines, compacted on open and whenever
its acknowledged part grows past the pending part (by more than `COMPACT_SLACK` lines), so that a long-lived
worker's spool stays proportional to what is pending. A worker that dies keeps its unacknowledged events here and
re-sends them when it starts again.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

# Lines beyond twice the pending events (and the marks) before the file is rewritten: each compaction then writes
# at most the pending events after at least this many appended lines, so rewriting costs O(1) a line.
COMPACT_SLACK = 1000


def _key(run_id: object, seq: int) -> tuple[str, int]:
    return (str(run_id), int(seq))


class Spool:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()  # compaction reads `pending()` under it
        self._pending: dict[tuple[str, int], dict[str, Any]] = {}
        # Highest seq ever spooled per run, kept through compaction: on a restart, the trace's events above it
        # were written to the trace but never spooled (the worker died in between) and must be spooled now.
        self.marks: dict[str, int] = {}
        self._load()
        self._file: TextIO | None = None
        self._compact()

    def _load(self) -> None:
        if not self.path.exists():
            return
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the unfinished last line of a crash
            if "event" in record:
                e = record["event"]
                self._pending[_key(e["run_id"], e["seq"])] = e
                self._mark(e["run_id"], e["seq"])
            elif "mark" in record:
                self._mark(*record["mark"])
            elif "ack" in record:
                self._pending.pop(_key(*record["ack"]), None)

    def _compact(self) -> None:
        """Rewrite the file as the marks and the pending events. Crash-safe: the new file is complete and on disk
        before it replaces the old one in one rename, so a crash at any point leaves one of the two, whole."""
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for run_id, seq in sorted(self.marks.items()):
                f.write(json.dumps({"mark": [run_id, seq]}) + "\n")
            for e in self.pending():
                f.write(json.dumps({"event": e}, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if self._file is not None:
            self._file.close()
        os.replace(tmp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a power loss
        finally:
            os.close(directory)
        self._file = open(self.path, "a", encoding="utf-8")
        self._lines = len(self.marks) + len(self._pending)

    @property
    def _out(self) -> TextIO:
        """The spool file, open for appending (from __init__'s first compaction on)."""
        assert self._file is not None
        return self._file

    def _append(self, record: dict[str, Any]) -> None:
        self._out.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._out.flush()
        os.fsync(self._out.fileno())
        self._lines += 1

    def _mark(self, run_id: object, seq: int) -> None:
        key = str(run_id)
        self.marks[key] = max(self.marks.get(key, -1), int(seq))

    def add(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._pending[_key(event["run_id"], event["seq"])] = event
            self._mark(event["run_id"], event["seq"])
            self._append({"event": event})

    def add_missing(self, events: list[dict[str, Any]]) -> int:
        """Spool the events of a run's trace that were never spooled. Returns how many."""
        added = 0
        for event in events:
            if int(event["seq"]) > self.marks.get(str(event["run_id"]), -1):
                self.add(event)
                added += 1
        return added

    def ack(self, run_id: object, seq: int) -> bool:
        return self.ack_many([(run_id, seq)]) == 1

    def ack_many(self, keys: Iterable[tuple[object, int]]) -> int:
        """Forget these (run_id, seq), with one write and one fsync for all; returns how many were pending."""
        return len(self._forget(keys))

    def drop(self, run_id: object, seq: int) -> dict[str, Any] | None:
        """Forget an event refused for good; returns it (None when it was not pending)."""
        dropped = self._forget([(run_id, seq)])
        return dropped[0] if dropped else None

    def _forget(self, keys: Iterable[tuple[object, int]]) -> list[dict[str, Any]]:
        with self._lock:
            forgotten, lines = [], []
            for run_id, seq in keys:
                event = self._pending.pop(_key(run_id, seq), None)
                if event is not None:
                    forgotten.append(event)
                    lines.append(json.dumps({"ack": [run_id, seq]}, separators=(",", ":")) + "\n")
            if lines:
                self._out.write("".join(lines))
                self._out.flush()
                os.fsync(self._out.fileno())
                self._lines += len(lines)
                if self._lines > 2 * len(self._pending) + len(self.marks) + COMPACT_SLACK:
                    self._compact()
            return forgotten

    def pending(self) -> list[dict[str, Any]]:
        """Unacknowledged events in (run, seq) order."""
        with self._lock:  # run threads add while the socket's thread reads
            return [self._pending[k] for k in sorted(self._pending)]

    def holds(self, run_id: object, seq: int) -> bool:
        return _key(run_id, seq) in self._pending

    def __len__(self) -> int:
        return len(self._pending)

    def close(self) -> None:
        self._out.close()
