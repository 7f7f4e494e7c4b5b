"""What bounds a scenario (gpu_harness.figures, issue 36): its arithmetic intensity (the task's FLOP count over its
compulsory bytes) against the device's ridge point (its measured matrix peak over its measured bandwidth); a
memory-bound scenario leads with GB/s and its share of the bandwidth, the measured one and the maker's."""

import json
from pathlib import Path

import pytest

from gpu_harness import figures, get_task

VERDICT = (
    Path(__file__).resolve().parents[2] / "docs/device-runs/2026-12-04_libraries_attention_fwd_sm90_quick_fa3.json"
)
PEAKS = {"peak_tflops": 800.0, "peak_gbps": 4000.0}  # ridge point: 200 FLOP a byte


def test_the_ridge_point_is_the_matrix_peak_over_the_bandwidth():
    assert figures.ridge_point(PEAKS) == pytest.approx(200.0)
    assert figures.ridge_point({"peak_tflops": 800.0}) is None and figures.ridge_point({}) is None
    assert figures.ridge_point({"peak_tflops": 800.0, "peak_gbps": float("nan")}) is None
    assert figures.ridge_point(None) is None


def test_a_scenario_below_the_ridge_point_is_memory_bound_at_or_above_it_compute_bound():
    assert figures.arithmetic_intensity(1990.0, 10.0) == pytest.approx(199.0)
    assert figures.bound_by(1990.0, 10.0, PEAKS) == figures.MEMORY_BOUND
    assert figures.bound_by(2000.0, 10.0, PEAKS) == figures.COMPUTE_BOUND  # exactly at the ridge: compute
    assert figures.bound_by(0.0, 10.0, PEAKS) == figures.MEMORY_BOUND  # a copy does no arithmetic
    # a missing count or peak bounds nothing: TFLOP/s leads as before
    assert figures.bound_by(2000.0, None, PEAKS) is None and figures.bound_by(2000.0, 10.0, {}) is None
    assert figures.bound_by(None, 10.0, PEAKS) is None and figures.bound_by(2000.0, 0, PEAKS) is None


def test_the_rule_reads_the_tasks_own_counts_not_the_scenario_names():
    """Decode (Sq 1) moves its K and V for about 1 FLOP a byte; the FlashAttention grid's d128 S 2048 does
    hundreds: both read from the attention task's formulas, against an H200's measured peaks."""
    counts = {s.id: s for s in get_task("attention_fwd").scenarios()}
    peaks = json.loads(VERDICT.read_text())["peaks"]
    decode = counts["fp16_b8_sq1_sk4096_h16x16_d128_causal"]
    grid = counts["bf16_b8_sq2048_sk2048_h16x16_d128_full"]
    assert figures.arithmetic_intensity(decode.flops, decode.bytes) < 2
    assert figures.bound_by(decode.flops, decode.bytes, peaks) == figures.MEMORY_BOUND
    assert figures.bound_by(grid.flops, grid.bytes, peaks) == figures.COMPUTE_BOUND


def test_a_memory_bound_scenario_leads_with_gbps_and_its_share_of_the_measured_and_nominal_bandwidth():
    rates = figures.scenario_rates(1e9, 3.2e9, 1.0, PEAKS, "NVIDIA H200")  # 3.2 GB in 1 ms
    assert rates["bound"] == figures.MEMORY_BOUND
    assert rates["gbps"] == pytest.approx(3200.0) and rates["gbps_share"] == pytest.approx(0.8)
    assert rates["nominal_gbps"] == 4800.0 and rates["gbps_nominal_share"] == pytest.approx(3200.0 / 4800.0)
    assert figures.lead_rate(rates) == (pytest.approx(3200.0), "GB/s", pytest.approx(0.8))
    assert figures.other_rate(rates) == (pytest.approx(1.0), "TFLOP/s", pytest.approx(1.0 / 800.0))


def test_a_compute_bound_scenario_leads_with_tflops_and_an_unlisted_device_has_no_nominal_share():
    rates = figures.scenario_rates(6e11, 1e9, 1.0, PEAKS, "NVIDIA A40")  # 600 TFLOP/s, 1000 GB/s
    assert rates["bound"] == figures.COMPUTE_BOUND
    assert figures.lead_rate(rates) == (pytest.approx(600.0), "TFLOP/s", pytest.approx(0.75))
    assert figures.other_rate(rates) == (pytest.approx(1000.0), "GB/s", pytest.approx(0.25))
    assert rates["nominal_gbps"] is None and rates["gbps_nominal_share"] is None


def test_without_peaks_nothing_is_bound_and_tflops_leads():
    rates = figures.scenario_rates(1e9, 3.2e9, 1.0, {}, "NVIDIA H200")
    assert rates["bound"] is None and rates["tflops_share"] is None and rates["gbps_share"] is None
    assert figures.lead_rate(rates)[1] == "TFLOP/s"
    assert rates["gbps_nominal_share"] == pytest.approx(3200.0 / 4800.0)


def test_the_operations_a_verdicts_rate_and_time_imply():
    assert figures.implied_flops(3.5, 2.0) == pytest.approx(7e9)
    assert figures.implied_flops(None, 2.0) is None and figures.implied_flops(3.5, 0) is None
