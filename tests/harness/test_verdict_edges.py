"""The verdict's edges, pinned: each test here kills a change to gpu_harness/verdict.py that the rest of the suite
let through (a mutation run, docs/testing.md), and each is a way a careless edit would let a wrong kernel pass or a
bogus time count."""

import math

import numpy as np
import pytest

from gpu_harness.verdict import (
    Comparison,
    TimingLimits,
    adaptive_repeats,
    compare_numpy,
    geomean_speedups,
    geometric_mean,
    judge_outputs,
    median_and_spread,
    median_settled,
    timing_suspicion,
)


def test_an_all_zero_reference_fails_any_candidate_that_is_not_zero_too():
    ref = np.zeros(64)
    garbage = compare_numpy("o", np.full(64, 1e-3), ref)
    assert garbage.rel_error == math.inf
    assert not judge_outputs([garbage], {"o": 1e6})[0]
    exact = compare_numpy("o", np.zeros(64), ref)
    assert exact.rel_error == 0.0 and judge_outputs([exact], {"o": 0.0}) == (True, None)


def test_an_error_equal_to_the_tolerance_passes_and_the_next_float_above_fails():
    at = Comparison("o", 1e-3, 0, 0, 10)
    above = Comparison("o", math.nextafter(1e-3, 1.0), 0, 0, 10)
    assert judge_outputs([at], {"o": 1e-3}) == (True, None)
    assert not judge_outputs([above], {"o": 1e-3})[0]


def test_a_nan_error_never_passes():
    assert not judge_outputs([Comparison("o", math.nan, 0, 0, 10)], {"o": math.inf})[0]


def test_every_output_is_judged_not_only_the_first():
    good, bad = Comparison("o", 0.0, 0, 0, 4), Comparison("lse", 0.5, 0, 0, 4)
    ok, reason = judge_outputs([good, bad], {"o": 1e-3, "lse": 1e-3})
    assert not ok and reason.startswith("lse:")


def test_a_mismatch_where_the_reference_is_special_is_counted_per_element():
    ref = np.array([-np.inf, -np.inf, np.nan, 1.0])
    cand = np.array([-np.inf, 0.0, np.nan, 1.0])  # NaN where the reference is NaN matches
    c = compare_numpy("lse", cand, ref)
    assert (c.mismatched_special, c.bad_nonfinite, c.count) == (1, 0, 4)
    ok, reason = judge_outputs([c], {"lse": 1.0})
    assert not ok and reason == "lse: 1 elements differ where the reference is -inf/inf/NaN"


SPECIAL = {"-inf": -np.inf, "+inf": np.inf, "nan": np.nan}
CANDIDATES = {**SPECIAL, "0": 0.0, "-1e308": -1e308, "1e308": 1e308}


def _compare_torch(name, cand, ref):
    torch = pytest.importorskip("torch")
    from gpu_harness.tasks.cuda_device import compare_torch

    return compare_torch(name, torch.from_numpy(cand), torch.from_numpy(ref))


@pytest.mark.parametrize("compare", [compare_numpy, _compare_torch], ids=["numpy", "torch"])
@pytest.mark.parametrize("want", SPECIAL)
@pytest.mark.parametrize("got", CANDIDATES)
def test_where_the_reference_is_special_only_the_same_value_matches(compare, want, got):
    # +inf where the reference is -inf (an LSE of a fully masked row) is as wrong as any other value there;
    # NaN matches NaN, nothing else does
    ref, cand = np.array([1.0, SPECIAL[want]]), np.array([1.0, CANDIDATES[got]])
    c = compare("lse", cand, ref)
    same = got == want
    assert (c.mismatched_special, c.bad_nonfinite, c.rel_error) == (0 if same else 1, 0, 0.0)
    ok, reason = judge_outputs([c], {"lse": 1.0})
    assert ok is same and reason == (None if same else "lse: 1 elements differ where the reference is -inf/inf/NaN")


def test_an_infinite_candidate_where_the_reference_is_finite_is_unwritten_output():
    c = compare_numpy("o", np.array([1.0, np.inf, -np.inf]), np.ones(3))
    assert c.bad_nonfinite == 2
    assert judge_outputs([c], {"o": 1.0}) == (
        False,
        "o: 2 of 3 elements are NaN/Inf where the reference is finite (unwritten output keeps the NaN poison)",
    )


def test_the_relative_error_is_the_norm_of_the_difference_over_the_norm_of_the_reference():
    c = compare_numpy("o", np.array([3.0, 4.0 + 0.5]), np.array([3.0, 4.0]))
    assert c.rel_error == pytest.approx(0.5 / 5.0)


def test_shapes_must_agree():
    with pytest.raises(ValueError, match=r"o: shape \(3,\) != reference \(4,\)"):
        compare_numpy("o", np.zeros(3), np.zeros(4))


@pytest.mark.parametrize("time_ms", [0.0, -1.0, math.inf, -math.inf, math.nan])
def test_a_zero_negative_or_non_finite_time_is_suspect(time_ms):
    why = timing_suspicion(time_ms, None, 0, 0, TimingLimits())
    assert why and "non-positive or non-finite time" in why


def test_the_host_clock_bound_is_ratio_times_time_plus_overhead_exactly():
    limits = TimingLimits(host_ratio=1.3, host_overhead_ms=0.05)
    bound = 1.3 * 2.0 + 0.05
    assert timing_suspicion(2.0, bound, 0, 0, limits) is None
    assert timing_suspicion(2.0, math.nextafter(bound, 10.0), 0, 0, limits)


def test_the_peak_bounds_allow_the_slack_and_nothing_more():
    limits = TimingLimits(peak_tflops=100.0, peak_gbps=1000.0, slack=1.15)
    # 1e12 flops in 8.7 ms = 114.9 TFLOP/s: within 1.15 x 100; in 8.6 ms = 116.3: above
    assert timing_suspicion(8.7, None, 1e12, 0, limits) is None
    assert "TFLOP/s" in timing_suspicion(8.6, None, 1e12, 0, limits)
    # 1e9 bytes in 0.87 ms = 1149 GB/s: within 1.15 x 1000; in 0.86 ms = 1163 GB/s: above
    assert timing_suspicion(0.87, None, 0, 1e9, limits) is None
    assert "GB/s" in timing_suspicion(0.86, None, 0, 1e9, limits)


def test_no_peak_measured_means_no_rate_check():
    assert timing_suspicion(1e-9, None, 1e15, 1e15, TimingLimits()) is None


@pytest.mark.parametrize("estimate", [0.0, -3.0, math.nan])
def test_an_estimate_that_says_nothing_gets_the_most_repeats(estimate):
    assert adaptive_repeats(estimate, 120.0, 3, 25) == 25


def test_repeats_fill_the_budget_between_the_bounds():
    assert adaptive_repeats(40.0, 120.0, 1, 25) == 3
    assert adaptive_repeats(41.0, 120.0, 1, 25) == 2  # rounded down: never over the budget


def test_median_and_spread_of_few_samples_is_their_range():
    assert median_and_spread([3.0, 1.0, 2.0]) == (2.0, 2.0)
    assert median_and_spread([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError, match="no samples"):
        median_and_spread([])


def test_median_and_spread_of_four_or_more_is_the_interquartile_range():
    med, iqr = median_and_spread([1.0, 2.0, 3.0, 4.0, 100.0])
    assert med == 3.0 and iqr == pytest.approx(2.0)


def test_a_median_settles_at_the_bound_and_not_before():
    samples = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.02, 0.98]  # median 1, IQR 0 except the tails
    assert median_settled(samples, 4, 0.0)  # an IQR of 0 is settled even with no tolerance
    assert not median_settled([0.0] * 10, 4, 0.5)  # a zero median never settles


def test_median_settled_needs_min_n_samples_and_never_fewer_than_four():
    tight = [1.0] * 3
    assert not median_settled(tight, 1, 1.0)
    assert median_settled(tight + [1.0], 1, 1.0)
    assert not median_settled([1.0] * 6, 7, 1.0)


def test_the_geometric_mean_ignores_missing_zero_negative_and_non_finite_values():
    assert geometric_mean([2.0, 8.0, None, 0.0, -1.0, math.inf, math.nan]) == pytest.approx(4.0)
    assert geometric_mean([None, 0.0]) is None


def test_inputs_are_read_as_float64_so_a_missing_value_is_a_nan():
    c = compare_numpy("o", [1.0, None], [1.0, 2.0])  # an element never written, as numpy reads None
    assert c.bad_nonfinite == 1
    r = compare_numpy("o", [1.0, float("nan")], [1.0, None])  # a reference NaN matched by a NaN
    assert (r.mismatched_special, r.bad_nonfinite) == (0, 0)


def test_a_number_where_the_reference_is_nan_is_a_mismatch():
    c = compare_numpy("o", np.array([5.0, 1.0]), np.array([np.nan, 1.0]))
    assert c.mismatched_special == 1


def test_the_relative_error_is_taken_over_the_written_elements_only():
    c = compare_numpy("o", np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))
    assert c.bad_nonfinite == 1 and c.rel_error == 0.0


def test_speedups_at_or_below_one_count_in_the_geometric_mean_and_zero_does_not():
    assert geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    g = geomean_speedups([{"a": 0.0}, {"a": 0.5}, {"a": 2.0}], ["a"])
    assert g["a"] == {"speedup": pytest.approx(1.0), "count": 2}


def test_four_samples_have_an_interquartile_range_not_a_range():
    med, iqr = median_and_spread([1.0, 2.0, 3.0, 4.0])
    assert med == 2.5 and iqr == pytest.approx(1.5)


def test_no_samples_is_said_so():
    with pytest.raises(ValueError, match="^no samples$"):
        median_and_spread([])


def test_the_settling_bound_scales_with_the_median():
    samples = [9.75] * 4 + [10.0] * 8 + [10.25] * 4  # median 10, IQR 0.125: 1.57 * 0.125 / 4 = 0.049
    assert median_settled(samples, 4, 0.01)  # within 0.01 x 10 = 0.1
    assert not median_settled(samples, 4, 0.004)  # not within 0.04


def test_a_sub_millisecond_estimate_still_sizes_the_repeats():
    assert adaptive_repeats(0.5, 120.0, 3, 1000) == 240


def test_a_rate_exactly_at_the_slack_bound_is_not_suspect():
    limits = TimingLimits(peak_tflops=100.0, peak_gbps=1000.0, slack=1.0)
    assert timing_suspicion(10.0, None, 1e12, 0, limits) is None  # exactly 100 TFLOP/s
    assert timing_suspicion(1.0, None, 0, 1e9, limits) is None  # exactly 1000 GB/s


def test_any_positive_amount_of_work_is_held_to_the_peaks():
    limits = TimingLimits(peak_tflops=100.0, peak_gbps=1000.0)
    assert "TFLOP/s" in timing_suspicion(1e-12, None, 1.0, 0, limits)  # one flop in a femtosecond
    assert "GB/s" in timing_suspicion(1e-12, None, 0, 1.0, limits)
