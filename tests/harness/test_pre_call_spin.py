"""The spin before each timed call (docs/harness.md, "How one evaluation runs", step 4): made to outlast the call's
host path, so the GPU does not wait on the host inside the timed span. CPU tests of the rule and of the child's
bookkeeping; tests/harness/test_data_cuda_gpu.py checks on a GPU that a spin so made is outlasted no more."""

from types import SimpleNamespace

import pytest

from gpu_harness import child
from gpu_harness.tasks.cuda_device import MAX_CYCLES_PER_MS, SLEEP_CYCLES, SPIN_COVERS_MS, spin_cycles


@pytest.mark.parametrize(
    "host_ms, cycles",
    [
        (0.0, SLEEP_CYCLES),  # the candidate's ctypes call, a fast library: the usual ~0.5 ms
        (0.1, SLEEP_CYCLES),
        (-1.0, SLEEP_CYCLES),
        (0.4, 2 * 0.4 * MAX_CYCLES_PER_MS),  # twice the path at the fastest clock
        (2.5, 2 * 2.5 * MAX_CYCLES_PER_MS),
        (500.0, 2 * SPIN_COVERS_MS * MAX_CYCLES_PER_MS),  # a synchronizing call: the spin stops growing
    ],
)
def test_the_spin_outlasts_twice_the_expected_host_path_within_a_bound(host_ms, cycles):
    assert spin_cycles(host_ms) == int(cycles)


class FakeSide:
    """The child's side, scripted: each timed call's host path after its flush, and every flush's host_ms."""

    def __init__(self, paths_ms):
        self.paths_ms, self.flushes, self.last_ms = list(paths_ms), [], 0.0

    def flush_cache(self, host_ms=0.0):
        self.flushes.append(host_ms)

    def time_call(self, thunk):
        thunk()
        self.last_ms = self.paths_ms.pop(0)
        return 1.0

    def host_ms_after_flush(self):
        return self.last_ms

    def host_outran_flush(self):
        return self.last_ms > 1.0

    def sync_error(self):
        return None


def fake_bench(side):
    task = SimpleNamespace(baseline_callables=lambda names, *_: {n: (lambda: None) for n in names})
    return SimpleNamespace(
        side=side,
        task=task,
        base_libs={},
        fresh_io=lambda params, seed: ({}, {}),
        derive_seed=lambda *parts: 0,
        ch=SimpleNamespace(send=lambda **_: None, wait_freed=lambda slot: None),
        baselines=SimpleNamespace(call=lambda sid, fn: fn()),
        time_candidate=lambda *_: side.time_call(lambda: None),
        fail_on_device_error=lambda *_: None,
        export=lambda outputs: 0,
    )


def test_each_baseline_call_is_flushed_with_a_spin_for_its_own_host_path():
    # the warm-up call took 0.3 ms; the timed calls of "lib" take 0.8, 2.0, 0.6; the candidate's 0.01
    side = FakeSide([0.3, 0.01, 0.8, 2.0, 0.01, 0.01, 0.6])
    bench = fake_bench(side)
    sc = {"id": "s", "params": {}, "seed_a": 1}
    cmd = {"budget_ms": 1.0, "min_reps": 3, "max_reps": 3}
    problem = child._baseline_problem(bench, "s", lambda: None)
    assert problem is None and side.host_ms_after_flush() == 0.3
    cand_ms, base_ms, host = child._timed_calls(bench, sc, cmd, 1.0, {"lib": 0.3})
    # rep 0: candidate, lib; rep 1: lib, candidate (B/A); rep 2: candidate, lib
    assert side.flushes == [0.0, 0.0, 0.3, 0.8, 0.0, 0.0, pytest.approx(1.4)]  # the median of 0.8 and 2.0
    assert len(cand_ms) == 3 and base_ms == {"lib": [1.0] * 3}
    assert host == {"lib": [(False, 0.8), (True, 2.0), (False, 0.6)]}
