"""Retrying a model call on passing failures (rate limits, overload, 5xx, dropped connections) with backoff."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

RETRY_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)


class RetryPolicy:
    def __init__(
        self,
        max_retries: int = 8,
        base_s: float = 1.0,
        cap_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_retries = max_retries
        self.base_s = base_s
        self.cap_s = cap_s
        self.sleep = sleep

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cap_s)
        backoff = min(self.cap_s, self.base_s * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2)  # jitter: workers that failed together do not retry together

    def run(
        self,
        call: Callable[[], T],
        classify: Callable[[Exception], tuple[bool, float | None, str]],
        notify: Callable[[str], None] | None = None,
        deadline: float | None = None,
    ) -> T:
        """Call `call`; on an exception that `classify` calls retryable, wait and call again, up to max_retries,
        and never past `deadline` (time.monotonic(): the run's wall budget), where the failure is raised as it is.
        `classify(exc)` -> (retryable, retry_after_s or None, short description)."""
        attempt = 0
        while True:
            try:
                return call()
            except Exception as exc:
                retryable, retry_after, what = classify(exc)
                if not retryable or attempt >= self.max_retries:
                    raise
                wait = self.delay(attempt, retry_after)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise
                if notify:
                    notify(f"model call failed ({what}); retry {attempt + 1} of {self.max_retries} in {wait:.1f} s")
                self.sleep(wait)
                attempt += 1


class ChargedAttempts:
    """A backend's `classify` that also counts the failed attempts of one call whose reply had begun (`began(exc)`):
    the server may have charged them, and their usage, which comes at a reply's end, was never read."""

    def __init__(
        self,
        classify: Callable[[Exception], tuple[bool, float | None, str]],
        began: Callable[[Exception], bool],
    ) -> None:
        self.classify, self.began, self.count = classify, began, 0

    def __call__(self, exc: Exception) -> tuple[bool, float | None, str]:
        self.count += self.began(exc)
        return self.classify(exc)


def attempt_timeout(timeout_s: float, deadline: float | None) -> float:
    """How long one attempt may wait for the server: the backend's timeout, cut to what is left before `deadline`
    (at least a second, so that a call just before it still gets its answer's first bytes)."""
    if deadline is None:
        return timeout_s
    return max(1.0, min(timeout_s, deadline - time.monotonic()))


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None
