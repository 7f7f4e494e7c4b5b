"""The spool: events written to local disk before they are sent, forgotten only when the server acknowledges them.

An append-only JSONL file of `{"event": ...}` and `{"ack": [run_id, seq]}` lines, compacted on open. A worker
that dies keeps its unacknowledged events here and re-sends them when it starts again.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path


def _key(run_id, seq) -> tuple[str, int]:
    return (str(run_id), int(seq))


class Spool:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int], dict] = {}
        # Highest seq ever spooled per run, kept through compaction: on a restart, the trace's events above it
        # were written to the trace but never spooled (the worker died in between) and must be spooled now.
        self.marks: dict[str, int] = {}
        self._load()
        self._compact()
        self._file = open(self.path, "a", encoding="utf-8")

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
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for run_id, seq in sorted(self.marks.items()):
                f.write(json.dumps({"mark": [run_id, seq]}) + "\n")
            for e in self.pending():
                f.write(json.dumps({"event": e}, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def _append(self, record: dict) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def _mark(self, run_id, seq) -> None:
        run_id = str(run_id)
        self.marks[run_id] = max(self.marks.get(run_id, -1), int(seq))

    def add(self, event: dict) -> None:
        with self._lock:
            self._pending[_key(event["run_id"], event["seq"])] = event
            self._mark(event["run_id"], event["seq"])
            self._append({"event": event})

    def add_missing(self, events: list[dict]) -> int:
        """Spool the events of a run's trace that were never spooled. Returns how many."""
        added = 0
        for event in events:
            if int(event["seq"]) > self.marks.get(str(event["run_id"]), -1):
                self.add(event)
                added += 1
        return added

    def ack(self, run_id, seq) -> bool:
        return self.ack_many([(run_id, seq)]) == 1

    def ack_many(self, keys) -> int:
        """Forget these (run_id, seq), with one write and one fsync for all; returns how many were pending."""
        with self._lock:
            lines = [json.dumps({"ack": [run_id, seq]}, separators=(",", ":")) + "\n"
                     for run_id, seq in keys if self._pending.pop(_key(run_id, seq), None) is not None]
            if lines:
                self._file.write("".join(lines))
                self._file.flush()
                os.fsync(self._file.fileno())
            return len(lines)

    def pending(self) -> list[dict]:
        """Unacknowledged events in (run, seq) order."""
        return [self._pending[k] for k in sorted(self._pending)]

    def __len__(self) -> int:
        return len(self._pending)

    def close(self) -> None:
        self._file.close()
