"""The lock that lets a test marked `alone` run with no other test of the session beside it under pytest-xdist
(tests/parallel.py): it waits for the tests running, and tests asking after it wait until it is done.

flock locks belong to an open file, so threads of one process holding their own opens stand in for the workers."""

import fcntl
import threading
import time

from tests.parallel import SessionLock


def gate_closed(lock: SessionLock) -> bool:
    with open(lock.gate, "a") as gate:
        try:
            fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(gate, fcntl.LOCK_UN)
        return False


def until(condition, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def hold(lock_context, happened: list, name: str, release: threading.Event) -> threading.Thread:
    def run():
        with lock_context():
            happened.append(f"{name} runs")
            release.wait(timeout=30)
            happened.append(f"{name} ends")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_alone_test_waits_for_the_running_one_and_a_test_asking_after_it_waits_for_it(tmp_path):
    lock = SessionLock(tmp_path)
    happened: list[str] = []
    releases = {name: threading.Event() for name in ("running", "alone", "next")}

    running = hold(lock.shared, happened, "running", releases["running"])
    until(lambda: happened == ["running runs"], "the running test took the lock")
    alone = hold(lock.exclusive, happened, "alone", releases["alone"])
    until(lambda: gate_closed(lock), "the alone test asked for the lock")
    following = hold(lock.shared, happened, "next", releases["next"])

    releases["running"].set()
    running.join(timeout=30)
    until(lambda: "alone runs" in happened, "the alone test ran")
    releases["alone"].set()
    alone.join(timeout=30)
    releases["next"].set()
    following.join(timeout=30)

    assert happened == ["running runs", "running ends", "alone runs", "alone ends", "next runs", "next ends"]


def test_tests_that_are_not_alone_run_side_by_side(tmp_path):
    lock = SessionLock(tmp_path)
    happened: list[str] = []
    release = threading.Event()
    first = hold(lock.shared, happened, "first", release)
    second = hold(lock.shared, happened, "second", release)
    until(lambda: len(happened) == 2, "both tests took the lock")
    assert sorted(happened) == ["first runs", "second runs"]  # both hold it before either ends
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
