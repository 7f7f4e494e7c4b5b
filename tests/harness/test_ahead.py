"""gpu_harness/ahead.py: work done ahead of the judge, taken in order (no GPU needed)."""

import threading
import time

import pytest

from gpu_harness.ahead import Ahead


def _recording_work(log, lock, delay=0.0):
    def work(payload):
        time.sleep(delay)
        with lock:
            log.append(payload)
        return payload * 10

    return work


def test_results_come_back_in_order_and_the_work_stays_within_depth():
    log, lock = [], threading.Lock()
    ahead = Ahead([(f"k{i}", i) for i in range(8)], _recording_work(log, lock), depth=2, threads=2, name="t")
    try:
        time.sleep(0.3)  # nobody takes anything: at most `depth` items are computed
        with lock:
            assert len(log) == 2
        assert [ahead.take(f"k{i}", timeout_s=10) for i in range(8)] == [i * 10 for i in range(8)]
    finally:
        ahead.stop()


def test_items_never_taken_do_not_stall_the_ones_after_them():
    """The candidate refused a scenario: the judge never asks for it, and the next one still arrives."""
    ahead = Ahead([(f"k{i}", i) for i in range(6)], lambda p: p, depth=2, threads=1, name="t")
    t0 = time.monotonic()
    try:
        assert ahead.take("k2", timeout_s=20) == 2  # k0 and k1 dropped
        assert ahead.take("k5", timeout_s=20) == 5  # k3 and k4 dropped
        assert time.monotonic() - t0 < 20
        assert ahead.has("k3") and not ahead.has("k9")
    finally:
        ahead.stop()


def test_failed_work_gives_none_and_the_rest_goes_on():
    def work(p):
        if p == 1:
            raise RuntimeError("cannot run this one")
        return p

    ahead = Ahead([(f"k{i}", i) for i in range(3)], work, depth=3, threads=1, name="t")
    try:
        assert [ahead.take(f"k{i}", timeout_s=10) for i in range(3)] == [0, None, 2]
    finally:
        ahead.stop()


def test_each_thread_runs_its_work_inside_its_own_context():
    import contextlib

    entered = []

    @contextlib.contextmanager
    def context():
        entered.append(threading.current_thread().name)
        yield

    seen = []
    ahead = Ahead(
        [(f"k{i}", i) for i in range(4)],
        lambda p: seen.append(threading.current_thread().name) or p,
        depth=4,
        threads=2,
        name="ctx",
        thread_context=context,
    )
    try:
        for i in range(4):
            ahead.take(f"k{i}", timeout_s=10)
    finally:
        ahead.stop()
    assert sorted(entered) == ["kseek-ctx-0", "kseek-ctx-1"]
    assert set(seen) <= set(entered)


def test_stop_waits_for_work_in_progress_and_takes_no_more():
    log, lock = [], threading.Lock()
    ahead = Ahead(
        [(f"k{i}", i) for i in range(10)], _recording_work(log, lock, delay=0.2), depth=10, threads=1, name="t"
    )
    time.sleep(0.05)
    ahead.stop()
    with lock:
        done = len(log)
    time.sleep(0.4)
    with lock:
        assert len(log) == done <= 1  # the item in progress finished; nothing started after stop
    assert ahead.take("k9", timeout_s=0.1) is None


@pytest.mark.parametrize("depth", [1, 3])
def test_a_slow_consumer_gets_every_result(depth):
    ahead = Ahead([(f"k{i}", i) for i in range(5)], lambda p: p, depth=depth, threads=3, name="t")
    try:
        got = []
        for i in range(5):
            time.sleep(0.02)
            got.append(ahead.take(f"k{i}", timeout_s=10))
        assert got == list(range(5))
    finally:
        ahead.stop()
