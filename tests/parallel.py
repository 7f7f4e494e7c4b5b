"""The suite in parallel (`make test` runs pytest-xdist's `-n 2`, docs/testing.md "CI time"): what keeps the
workers of one session apart, and how a test that measures time runs with no other test beside it.

- Each worker has a test database of its own (pytest-django names it after the worker), so both number their runs
  from 1. On a Redis channel layer (CI's second pass) group names such as `run.1` would then reach the other
  worker's consumers: each worker's channel prefix gets its worker id.
- A test marked `alone` (a kernel timed against itself must see no load of ours) waits until the other workers'
  tests have finished, runs, and only then lets them take their next test. Every other test holds a shared lock
  while it runs (setup to teardown), the `alone` one holds it exclusively; the lock files are in the session's
  temporary folder, which the workers share and no other session does.
Without xdist (one process, `pytest tests/x.py`) none of this does anything.
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

import pytest


class SessionLock:
    """A readers-writer lock over two files, fair to the writer: a writer first closes a gate, so that no reader
    starts after it asked, then waits for the readers that hold the lock to finish (flock alone would let readers
    keep taking it ahead of a waiting writer)."""

    def __init__(self, folder: Path):
        self.gate = folder / "kseek-alone-gate.lock"
        self.lock = folder / "kseek-alone.lock"

    @contextlib.contextmanager
    def shared(self):
        with open(self.gate, "a") as gate:
            fcntl.flock(gate, fcntl.LOCK_EX)  # passes at once unless an `alone` test waits or runs
            fcntl.flock(gate, fcntl.LOCK_UN)
        with open(self.lock, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            yield

    @contextlib.contextmanager
    def exclusive(self):
        with open(self.gate, "a") as gate, open(self.lock, "a") as lock:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield


_lock_key = pytest.StashKey[SessionLock]()


def pytest_configure(config):
    worker_input = getattr(config, "workerinput", None)  # set on an xdist worker only
    if worker_input is None:
        return
    # xdist gives each worker the basetemp <the session's folder>/popen-gwN; that folder is the session's own.
    config.stash[_lock_key] = SessionLock(Path(config.option.basetemp).parent)
    _channel_prefix_per_worker(worker_input["workerid"])


def _channel_prefix_per_worker(worker: str) -> None:
    try:
        from django.conf import settings
    except ImportError:  # a GPU host runs `pytest -m gpu tests/harness` without Django installed
        return
    if not settings.configured:
        return
    layer = settings.CHANNEL_LAYERS["default"]
    if "prefix" in layer.get("CONFIG", {}):
        layer["CONFIG"]["prefix"] = f"{layer['CONFIG']['prefix']}{worker}."


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    lock = item.config.stash.get(_lock_key, None)
    if lock is None:
        return (yield)
    with lock.exclusive() if item.get_closest_marker("alone") else lock.shared():
        return (yield)


@pytest.hookimpl(trylast=True)  # after pytest-django's order, which it keeps
def pytest_collection_modifyitems(config, items):
    """On xdist workers, the tests of tests/reliability that do not use the test database first: they are the
    suite's longest (live sites with databases of their own, real workers playing demo runs, 5-45 s each), and with
    the longest started first the short ones fill in at the end instead of one worker finishing a long test alone.
    Tests that use the test database keep pytest-django's order (as Django's: a transactional test empties the
    tables, the data migrations' rows too, so it comes after the others). Each worker sorts its collection alike,
    as xdist requires."""
    if getattr(config, "workerinput", None) is None:
        return
    items.sort(key=lambda item: not (item.nodeid.startswith("tests/reliability/") and not _uses_test_database(item)))


def _uses_test_database(item) -> bool:
    if getattr(item, "cls", None) is not None:  # a unittest class (Django's TestCase among them): assume it does
        return True
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(
        fixtures & {"db", "transactional_db", "live_server"}
    )
