"""A scenario's error and tolerance come from one judged run (issue: a scenario that passed both seeds read
"error 8.89e-04 / tolerance 6.2e-04" on an H100, the largest error of one seed beside the other's bound)."""

import math

from gpu_harness.verdict import nearer_bound


def test_each_run_bounded_by_its_own_baseline_shows_one_runs_pair():
    first = (8.89e-4, 1.5e-3)  # seed a: its baseline's error was large
    second = (5.0e-4, 6.2e-4)  # seed b: a smaller bound, nearer it
    kept = nearer_bound(nearer_bound((None, None), first), second)
    assert kept == second
    assert kept[0] <= kept[1]
    # the other order keeps the same pair: nearness, not arrival, decides
    assert nearer_bound(nearer_bound((None, None), second), first) == second


def test_a_run_past_its_bound_is_the_one_shown():
    passed, failed = (1e-3, 2e-3), (3e-3, 2.5e-3)
    assert nearer_bound(passed, failed) == failed
    assert nearer_bound(failed, passed) == failed


def test_unmeasured_zero_and_nan():
    assert nearer_bound((None, None), (None, 1e-3)) == (None, 1e-3)  # a wrong-shaped output: its bound still shows
    assert nearer_bound((1e-4, 1e-3), (None, 1e-3)) == (1e-4, 1e-3)  # a later unmeasured run hides nothing
    assert nearer_bound((1e-4, 1e-3), (1e-9, 0.0)) == (1e-9, 0.0)  # any error over a zero bound is past it
    assert nearer_bound((0.0, 0.0), (1e-4, 1e-3)) == (1e-4, 1e-3)  # exact and equal: 0 along its bound
    nan_pair = (math.nan, 1e-3)
    assert nearer_bound((1e-4, 1e-3), nan_pair) is nan_pair
