"""The child's baseline calls, on a few threads that each own some scenarios (child side only).

A library's first call of a shape is slow: torch's cuDNN path builds and compiles a plan (0.1 to 0.2 s a
shape on an H200 host), and keeps it per thread. So each scenario is given to one owner thread, which builds
its plans during the correctness phase while the parent judges, and later makes that scenario's timed
baseline calls. The main thread hands a call over and waits for it, between its own CUDA events on the legacy
default stream, which every thread's torch work is queued on, so the events bracket the baseline's work as if
the main thread had launched it. The pre-spin before each timed call (`flush_cache`) keeps the GPU busy while
the call is handed over, as it does for a launch.

With `threads=0` (the CPU task, whose timer is the host clock around the call) calls run on the main thread.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class BaselineThreads:
    def __init__(self, threads: int) -> None:
        self._pools = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"kseek-baseline-{i}") for i in range(threads)
        ]
        self._owner: dict[str, int] = {}
        self._warming: list[Future[None]] = []

    def _pool(self, scenario_id: str) -> ThreadPoolExecutor | None:
        if not self._pools:
            return None
        if scenario_id not in self._owner:  # round robin, in the order scenarios come
            self._owner[scenario_id] = len(self._owner) % len(self._pools)
        return self._pools[self._owner[scenario_id]]

    def warm(self, scenario_id: str, work: Callable[[], object]) -> None:
        """Run `work` (calls of this scenario's baselines) on its owner thread, without waiting.
        Exceptions are dropped: the timing phase calls the baselines again and records why one is n/a."""
        pool = self._pool(scenario_id)
        if pool is None:
            _quietly(work)
        else:
            self._warming.append(pool.submit(_quietly, work))

    def finish_warming(self) -> None:
        """Wait for every warm-up: none may still run on the GPU once timing starts."""
        for f in self._warming:
            f.result()
        self._warming.clear()

    def call(self, scenario_id: str, fn: Callable[[], T]) -> T:
        """fn() on the scenario's owner thread; returns its result or raises its exception."""
        pool = self._pool(scenario_id)
        return fn() if pool is None else pool.submit(fn).result()

    def close(self) -> None:
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)


def _quietly(work: Callable[[], object]) -> None:
    try:
        work()
    except Exception:
        pass
