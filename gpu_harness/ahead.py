"""Work done ahead of the judge (parent side only).

The judge knows before the child sends a single output which (scenario, seed) pairs it will judge and in
which order: everything that does not depend on the candidate's outputs (the reference, cuDNN's output on
the same inputs) can be computed while it waits for the child. `Ahead` runs `work(payload)` for each item of
that list on background threads, in order and at most `depth` items ahead of the consumer, which `take`s
the results in the same order.

Items the consumer never asks for (the candidate refused that scenario) are dropped when a later one is
taken, so they never block the items after them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from typing import Any


class Ahead:
    def __init__(
        self,
        items: list[tuple[str, object]],
        work: Callable[[Any], object],  # of an item's payload
        *,
        depth: int,
        threads: int,
        name: str,
        thread_context: Callable[[], ContextManager[object]] | None = None,
    ) -> None:
        """`items`: (key, payload) in the order they will be taken. `work(payload)` returns the result;
        an exception makes the result None (the consumer then does the work itself, and sees the error).
        `thread_context`: entered once by each thread around all its work (e.g. a CUDA stream of its own)."""
        self._items, self._work, self._depth = items, work, depth
        self._order = {key: i for i, (key, _) in enumerate(items)}
        self._ready: dict[str, object] = {}
        self._next = 0  # the next item a thread takes
        self._busy = 0  # items being computed now
        self._cv = threading.Condition()
        self._stopped = False
        self._context = thread_context
        self._threads = [
            threading.Thread(target=self._run, name=f"kseek-{name}-{i}", daemon=True) for i in range(threads)
        ]
        for t in self._threads:
            t.start()

    def _run(self) -> None:
        if self._context is None:
            self._loop()
            return
        with self._context():
            self._loop()

    def _loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._stopped or len(self._ready) + self._busy < self._depth)
                if self._stopped or self._next >= len(self._items):
                    return
                key, payload = self._items[self._next]
                self._next += 1
                self._busy += 1
            try:
                out = self._work(payload)
            except Exception:
                out = None
            with self._cv:
                self._busy -= 1
                if not self._stopped:
                    self._ready[key] = out
                self._cv.notify_all()

    def has(self, key: str) -> bool:
        return key in self._order

    def take(self, key: str, timeout_s: float = 300.0) -> Any:
        """The result for `key` (waiting for it); None when its work failed or did not finish in time."""

        def arrived() -> bool:
            # items before this one that were never taken make room
            for skipped in [k for k in self._ready if self._order[k] < self._order[key]]:
                del self._ready[skipped]
                self._cv.notify_all()
            return key in self._ready

        with self._cv:
            if not self._cv.wait_for(arrived, timeout=timeout_s):
                return None
            out = self._ready.pop(key)
            self._cv.notify_all()
            return out

    def stop(self) -> None:
        """No new work; waits for the items in progress (none may still use the GPU when timing starts)."""
        with self._cv:
            self._stopped = True
            self._ready.clear()
            self._cv.notify_all()
        for t in self._threads:
            t.join(timeout=60)
