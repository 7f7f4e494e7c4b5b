"""The verdict logic, on plain numbers."""

import math

import numpy as np
import pytest

from gpu_harness.verdict import (
    TimingLimits,
    adaptive_repeats,
    compare_numpy,
    geomean_speedups,
    judge_outputs,
    median_and_spread,
    median_settled,
    timing_suspicion,
    tolerance_from_vendor,
)


def test_unwritten_element_fails_even_when_error_is_tiny():
    ref = np.ones(1000)
    cand = ref.copy()
    cand[3] = np.nan
    ok, reason = judge_outputs([compare_numpy("o", cand, ref)], {"o": 1.0})
    assert not ok and "NaN/Inf" in reason and "1 of 1000" in reason


def test_infinite_reference_entries_must_match_exactly():
    ref = np.array([1.0, -np.inf, 2.0])
    assert judge_outputs([compare_numpy("lse", np.array([1.0, -np.inf, 2.0]), ref)], {"lse": 1e-6})[0]
    ok, reason = judge_outputs([compare_numpy("lse", np.array([1.0, -1e30, 2.0]), ref)], {"lse": 1.0})
    assert not ok and "-inf" in reason


def test_error_above_tolerance_fails_with_the_numbers():
    ref = np.ones(100)
    ok, reason = judge_outputs([compare_numpy("o", ref * 1.01, ref)], {"o": 1e-3})
    assert not ok and "1.000e-02" in reason


def test_error_within_tolerance_passes():
    ref = np.linspace(1, 2, 100)
    assert judge_outputs([compare_numpy("o", ref * (1 + 1e-5), ref)], {"o": 1e-4}) == (True, None)


def test_tolerance_is_twice_the_vendor_error_plus_floor():
    assert tolerance_from_vendor(2e-3, 9.0, 1e-4) == pytest.approx(4.1e-3)
    assert tolerance_from_vendor(None, 2e-3, 1e-4) == pytest.approx(4.1e-3)
    assert tolerance_from_vendor(float("nan"), 2e-3, 0.0) == pytest.approx(4e-3)


def test_median_and_spread_ignore_one_outlier():
    med, spread = median_and_spread([1.0, 1.0, 1.1, 0.9, 50.0])
    assert med == 1.0 and spread < 1.0


def test_slow_kernels_get_few_repeats_fast_ones_many():
    assert adaptive_repeats(500.0, 120.0, 3, 25) == 3
    assert adaptive_repeats(0.01, 120.0, 3, 25) == 25
    assert adaptive_repeats(10.0, 120.0, 3, 25) == 12


def test_timing_stops_early_only_when_the_median_is_pinned_down():
    tight = [1.000, 1.001, 0.999, 1.002, 1.000]
    assert median_settled(tight, 5, 0.005)
    assert not median_settled(tight[:4], 5, 0.005)  # too few calls yet
    noisy = [1.0, 1.05, 0.95, 1.1, 0.9, 1.02]
    assert not median_settled(noisy, 5, 0.005)
    # the same spread settles with enough calls (the interval narrows as 1/sqrt(n))
    assert median_settled(noisy * 200, 5, 0.005)


def test_host_clock_far_above_events_is_suspect():
    why = timing_suspicion(1.0, 3.0, 0, 0, TimingLimits())
    assert why and "host clock" in why


def test_host_clock_with_launch_overhead_is_not_suspect():
    assert timing_suspicion(0.010, 0.045, 0, 0, TimingLimits()) is None
    assert timing_suspicion(2.0, 2.2, 0, 0, TimingLimits()) is None


def test_rate_above_measured_peak_is_suspect():
    limits = TimingLimits(peak_tflops=800.0, peak_gbps=4300.0)
    why = timing_suspicion(1.0, 1.0, 1.0e12, 0, limits)  # 1000 TFLOP/s
    assert why and "above the measured peak" in why
    assert timing_suspicion(2.0, 2.0, 1.0e12, 0, limits) is None  # 500 TFLOP/s


def test_bandwidth_above_measured_peak_is_suspect():
    limits = TimingLimits(peak_tflops=None, peak_gbps=4000.0)
    why = timing_suspicion(0.1, 0.1, 0, 1e9, limits)  # 10 TB/s
    assert why and "bandwidth" in why


def test_geomean_counts_only_scenarios_a_baseline_ran():
    g = geomean_speedups([{"a": 2.0, "b": None}, {"a": 8.0, "b": 3.0}], ["a", "b", "c"])
    assert g["a"] == {"speedup": pytest.approx(4.0), "count": 2}
    assert g["b"] == {"speedup": pytest.approx(3.0), "count": 1}
    assert g["c"] == {"speedup": None, "count": 0}


def test_nan_speedup_is_not_counted():
    g = geomean_speedups([{"a": math.nan}, {"a": 2.0}], ["a"])
    assert g["a"]["speedup"] == pytest.approx(2.0)
