"""Where an evaluation's time goes: `with watch("part"):` adds the block's wall time to watch.seconds["part"].

Used by the judge (EvalResult.phases), by the task's judging (its parts) and by the child (its own word, sent
to the parent as diagnostics).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any


class Stopwatch:
    def __init__(self, seconds: dict[str, Any] | None = None, settle: Callable[[], None] | None = None) -> None:
        self.seconds = {} if seconds is None else seconds  # part -> seconds; may be a dict the caller keeps
        self._settle = settle  # run before the clock stops: e.g. wait for the GPU work the block queued

    @contextlib.contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self._settle is not None:
                self._settle()
            self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - t0
