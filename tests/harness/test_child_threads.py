"""The child's baseline threads and the SDPA backend lock: CPU tests of the concurrency rules."""

import threading
import time

import pytest

from gpu_harness.baseline_threads import BaselineThreads


def test_each_scenario_is_called_on_its_own_owner_thread():
    pool = BaselineThreads(3)
    try:
        names = {sid: pool.call(sid, lambda: threading.current_thread().name) for sid in "abcdef"}
        assert len(set(names.values())) == 3
        assert all(pool.call(sid, lambda: threading.current_thread().name) == names[sid] for sid in "abcdef")
        assert names["a"] == names["d"]  # round robin in the order scenarios came
        with pytest.raises(ZeroDivisionError):  # a baseline's exception reaches the caller
            pool.call("a", lambda: 1 / 0)
    finally:
        pool.close()


def test_warm_ups_run_on_the_owner_and_finish_before_timing():
    pool = BaselineThreads(2)
    seen = []
    try:
        pool.warm("a", lambda: (time.sleep(0.2), seen.append(threading.current_thread().name)))
        pool.warm("b", lambda: 1 / 0)  # dropped: timing reports it later
        pool.finish_warming()
        assert seen == [pool.call("a", lambda: threading.current_thread().name)]
    finally:
        pool.close()


def test_without_threads_calls_run_on_the_main_thread():
    pool = BaselineThreads(0)
    assert pool.call("a", lambda: threading.current_thread()) is threading.main_thread()
    ran = []
    pool.warm("a", lambda: ran.append(1))
    pool.finish_warming()
    assert ran == [1]


def test_sdpa_lock_shares_one_backend_and_excludes_another():
    torch = pytest.importorskip("torch")
    from gpu_harness.tasks.attention_fwd import reference_module

    attention = reference_module()  # tasks/attention_fwd/reference.py
    SdpaBackendLock, _sdpa_flags = attention.SdpaBackendLock, attention.sdpa_flags
    lock = SdpaBackendLock()
    before = _sdpa_flags()
    inside, log = [], []

    def hold(backend, seconds):
        with lock.hold(backend):
            inside.append(backend)
            log.append((backend, dict(_sdpa_flags()), list(inside)))
            time.sleep(seconds)
            inside.remove(backend)

    threads = [threading.Thread(target=hold, args=("cudnn", 0.3)), threading.Thread(target=hold, args=("cudnn", 0.3))]
    for t in threads:
        t.start()
    time.sleep(0.1)
    late = threading.Thread(target=hold, args=("flash", 0.05))
    late.start()
    for t in threads + [late]:
        t.join()
    assert [b for b, _, _ in log] == ["cudnn", "cudnn", "flash"]
    assert log[1][2] == ["cudnn", "cudnn"]  # the two cuDNN holders overlapped ...
    assert log[2][2] == ["flash"]  # ... and flash waited for both to leave
    for backend, flags, _ in log:
        assert flags == {
            "cudnn": backend == "cudnn",
            "flash": backend == "flash",
            "mem_efficient": False,
            "math": False,
        }
    assert _sdpa_flags() == before
    assert torch.backends.cuda.math_sdp_enabled() == before["math"]
