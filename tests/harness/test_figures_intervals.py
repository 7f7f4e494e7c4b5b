"""The uncertainty of a verdict's figures (gpu_harness.figures): an interval on each speed-up and on the geometric
mean from the intervals on the medians the harness timed, "no difference" where it holds 1.0, the goal cleared
only beyond the noise, a busy host named, and malformed fields ignored rather than trusted."""

import math

import pytest

from gpu_harness import figures
from gpu_harness.verdict import median_interval


def timed(sid, time_ms, time_ci, base_ms, base_ci, correct=True, **extra):
    """A scenario as the harness writes it, timed against one baseline, "naive"."""
    return {
        "id": sid,
        "correct": correct,
        "time_ms": time_ms,
        "time_ci_ms": time_ci,
        "speedup": {"naive": base_ms / time_ms},
        "baseline_ms": {"naive": base_ms},
        "baseline_ci_ms": {"naive": base_ci},
        **extra,
    }


def verdict_of(*scenarios, **extra):
    speedups = [s["speedup"]["naive"] for s in scenarios if s["correct"]]
    geomean = math.exp(sum(math.log(v) for v in speedups) / len(speedups))
    return {
        "status": "correct" if all(s["correct"] for s in scenarios) else "incorrect",
        "scenarios": list(scenarios),
        "geomean": {"naive": {"speedup": geomean, "count": len(speedups)}},
        **extra,
    }


def test_the_median_interval_takes_the_order_statistics_of_its_coverage():
    # 15 calls: x(4)..x(12) covers the median with 96.5%; one slow call moves neither bound.
    assert median_interval([*range(1, 15), 1000]) == (4, 12)
    # Below 6 calls no pair of order statistics reaches 95%: the whole range.
    assert median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert median_interval(list(range(1, 101))) == (40, 61)


def test_a_speedup_lies_between_the_baselines_low_over_the_candidates_high_and_the_other_way():
    s = timed("a", 2.0, [1.8, 2.5], 4.0, [3.6, 4.4])
    low, high = figures.scenario_interval(s, "naive")
    assert low == pytest.approx(3.6 / 2.5) and high == pytest.approx(4.4 / 1.8)
    assert not figures.no_difference((low, high))


def test_a_speedup_whose_interval_holds_one_is_no_difference():
    s = timed("a", 1.0, [0.9, 1.2], 1.05, [0.95, 1.3])
    interval = figures.scenario_interval(s, "naive")
    assert figures.no_difference(interval)
    assert figures.speedup_text(1.05, interval) == "no difference (0.792–1.44×)"
    assert figures.speedup_text(2.0, (1.5, 2.5)) == "2.000× (1.50–2.50×)"
    assert figures.speedup_text(2.0, None) == "2.000×"  # a verdict from before intervals: the point alone
    assert figures.speedup_text(None, None) == "—"


def test_the_geomean_interval_is_the_geomean_of_the_scenarios_bounds():
    a = timed("a", 1.0, [0.9, 1.1], 2.0, [1.9, 2.1])
    b = timed("b", 1.0, [0.8, 1.25], 1.0, [0.8, 1.25])
    low, high = figures.geomean_interval(verdict_of(a, b), "naive")
    assert low == pytest.approx(math.sqrt((1.9 / 1.1) * (0.8 / 1.25)))
    assert high == pytest.approx(math.sqrt((2.1 / 0.9) * (1.25 / 0.8)))
    assert figures.verdict_speedup_text(verdict_of(a, b), "naive") == "1.414× (1.05–1.91×)"


def test_the_geomean_has_no_interval_unless_every_scenario_it_covers_has_one():
    a = timed("a", 1.0, [0.9, 1.1], 2.0, [1.9, 2.1])
    old = {"id": "b", "correct": True, "time_ms": 1.0, "speedup": {"naive": 1.5}}  # before the harness timed one
    assert figures.geomean_interval(verdict_of(a, old), "naive") is None
    wrong = timed("w", 1.0, None, 9.0, None, correct=False)  # a wrong scenario is not covered: no matter
    assert figures.geomean_interval(verdict_of(a, wrong), "naive") is not None


@pytest.mark.parametrize(
    "field, value",
    [
        ("time_ci_ms", [1.1, 0.9]),  # not ordered
        ("time_ci_ms", [0.9, float("nan")]),
        ("time_ci_ms", [0.9, float("inf")]),
        ("time_ci_ms", [1.2, 1.5]),  # does not hold its own median
        ("time_ci_ms", [-1.0, 1.1]),
        ("time_ci_ms", "0.9-1.1"),
        ("time_ci_ms", [0.9, 1.0, 1.1]),
        ("time_ci_ms", [True, 1.1]),
        ("baseline_ci_ms", {"naive": [2.5, 3.0]}),
        ("baseline_ci_ms", ["naive"]),
        ("baseline_ms", {"naive": "2"}),
        ("speedup", {"naive": 99.0}),  # a speed-up its own medians do not give
    ],
)
def test_a_malformed_interval_from_a_worker_is_ignored(field, value):
    s = {**timed("a", 1.0, [0.9, 1.1], 2.0, [1.9, 2.1]), field: value}
    assert figures.scenario_interval(s, "naive") is None
    assert figures.geomean_interval(verdict_of(s), "naive") is None
    assert field not in figures.scenario_noise_fields(s) or field == "speedup"


def test_the_stored_noise_fields_keep_only_what_is_well_formed():
    s = timed("a", 1.0, [0.9, 1.1], 2.0, [1.9, 2.1], spread_ms=0.1)
    s["baseline_ms"]["numpy"] = float("nan")
    s["baseline_ci_ms"]["numpy"] = [1.0, 0.5]
    assert figures.scenario_noise_fields(s) == {
        "time_ci_ms": [0.9, 1.1],
        "spread_ms": 0.1,
        "baseline_ms": {"naive": 2.0},
        "baseline_ci_ms": {"naive": [1.9, 2.1]},
    }
    assert figures.scenario_noise_fields({"id": "old", "time_ms": 1.0}) == {}


def test_the_goal_is_cleared_only_by_the_low_end_of_the_interval():
    # 2.2x at its point, but the interval reaches down to 1.8x: not beyond the noise of a 2.0x goal.
    noisy = verdict_of(timed("a", 1.0, [0.9, 1.2], 2.2, [2.16, 2.3]))
    assert figures.meets_target(noisy, "naive", 2.0)
    assert not figures.clears_target(noisy, "naive", 2.0) and not figures.goal_met(noisy, "naive", 2.0, ["a"], [])
    steady = verdict_of(timed("a", 1.0, [0.99, 1.01], 2.2, [2.18, 2.22]))
    assert figures.clears_target(steady, "naive", 2.0) and figures.goal_met(steady, "naive", 2.0, ["a"], [])
    # A verdict from before intervals is held to its point figure, as it always was.
    old = {"status": "correct", "scenarios": [{"id": "a", "correct": True}], "geomean": {"naive": {"speedup": 2.0}}}
    assert figures.clears_target(old, "naive", 2.0) and figures.goal_met(old, "naive", 2.0, ["a"], [])


@pytest.mark.parametrize(
    "broken",
    [
        {"time_ci_ms": None},  # dropped where it was stored malformed
        {"time_ci_ms": [5.0, 9.0]},  # one that does not hold its own median
        {"baseline_ci_ms": {}},
        {"baseline_ci_ms": {"naive": "wide"}},
    ],
)
def test_a_verdict_with_an_interval_missing_among_others_clears_no_goal_and_says_its_noise_is_unknown(broken):
    # Wide intervals: no difference from 1.0, so the goal is not met; an interval missing on one scenario must not
    # turn the figure back into its point (a forged import did exactly that, and was shown "succeeded").
    wide = [timed("a", 1.0, [0.6, 1.5], 1.3, [0.9, 1.6]), timed("b", 1.0, [0.6, 1.5], 1.3, [0.9, 1.6])]
    assert figures.no_difference(figures.geomean_interval(verdict_of(*wide), "naive"))
    assert not figures.clears_target(verdict_of(*wide), "naive", 1.2)
    wide[0] |= broken
    one_broken = verdict_of(*wide)
    assert figures.geomean_interval(one_broken, "naive") is None and figures.noise_unknown(one_broken, "naive")
    assert figures.meets_target(one_broken, "naive", 1.2)
    assert not figures.clears_target(one_broken, "naive", 1.2)
    assert not figures.goal_met(one_broken, "naive", 1.2, ["a", "b"], [])
    assert figures.verdict_speedup_text(one_broken, "naive") == "1.300× (noise unknown)"
    # with no interval fields anywhere (a verdict from before them), the point stands, and says nothing more
    old = verdict_of(*({k: v for k, v in s.items() if not k.endswith("_ci_ms")} for s in wide))
    assert not figures.noise_unknown(old, "naive") and figures.clears_target(old, "naive", 1.2)
    assert figures.verdict_speedup_text(old, "naive") == "1.300×"


def test_a_host_loaded_beyond_half_its_cores_is_busy():
    quiet = timed("a", 1.0, [0.9, 1.1], 2.0, [1.9, 2.1], spread_ms=0.05)
    assert figures.host_busy(verdict_of(quiet, host_load={"load_1m": 1.9, "cores": 2})) is None
    assert figures.host_busy(verdict_of(quiet, host_load={"load_1m": 2.0, "cores": 2})) == (
        "load 2.00 on 2 cores while timing"
    )
    assert figures.host_busy(verdict_of(quiet, host_load={"load_1m": 8.0, "cores": 16})) is None
    assert figures.host_busy(verdict_of(quiet)) is None  # a verdict from before the harness recorded it


def test_timed_calls_spread_over_a_quarter_of_their_median_say_the_host_was_busy():
    noisy = timed("a", 1.0, [0.6, 1.6], 2.0, [1.9, 2.1], spread_ms=0.4)
    assert figures.host_busy(verdict_of(noisy)) == "timed calls spread 40% of their median"


@pytest.mark.parametrize(
    "load",
    [{"load_1m": float("nan"), "cores": 2}, {"load_1m": -1, "cores": 2}, {"load_1m": 5, "cores": 0}, "busy", []],
)
def test_a_malformed_host_load_is_ignored(load):
    assert figures.host_load({"host_load": load}) == {}
    assert figures.host_busy({"host_load": load, "scenarios": []}) is None


def test_two_timings_of_one_scenario_compare_with_an_interval():
    a = {"time_ms": 1.0, "time_ci_ms": [0.9, 1.1]}
    b = {"time_ms": 1.05, "time_ci_ms": [0.95, 1.2]}
    low, high = figures.time_ratio_interval(a, b)
    assert low == pytest.approx(0.95 / 1.1) and high == pytest.approx(1.2 / 0.9)
    assert figures.no_difference((low, high))
    assert figures.time_ratio_interval(a, {"time_ms": 1.0}) is None


def test_a_best_keeps_the_interval_of_the_verdict_that_set_it():
    first = verdict_of(timed("a", 1.0, [0.9, 1.1], 2.0, [1.9, 2.1]))  # 2.0x
    lower = verdict_of(timed("a", 1.0, [0.5, 2.0], 1.5, [1.0, 2.0]))  # 1.5x: not a best
    higher_without = verdict_of({"id": "a", "correct": True, "time_ms": 1.0, "speedup": {"naive": 3.0}})
    wrong = verdict_of(timed("a", 1.0, [0.9, 1.1], 9.0, [8.9, 9.1], correct=False), timed("b", 1.0, [1, 1], 1, [1, 1]))
    best, intervals = {}, {}
    steps = []
    for verdict in (first, lower, wrong, higher_without):
        intervals = figures.best_intervals_after(best, intervals, verdict)
        best = figures.best_per_baseline(best, verdict)
        steps.append((best.get("naive"), intervals.get("naive")))
    expected_first = [pytest.approx(1.9 / 1.1), pytest.approx(2.1 / 0.9)]
    assert steps[0] == (2.0, expected_first)
    assert steps[1] == (2.0, expected_first)  # a lower verdict leaves both
    assert steps[2] == (2.0, expected_first)  # a wrong one too
    assert steps[3] == (pytest.approx(3.0), None)  # a higher best without an interval takes the old one's away
    assert figures.interval_of([1.0, 2.0]) == (1.0, 2.0)
    assert figures.interval_of([2.0, 1.0]) is None and figures.interval_of("wide") is None


def test_a_host_wait_is_read_per_library_and_for_the_best_library_through_its_name():
    waits = "the host path outlasted the GPU's pre-call spin on 9 of 9 timed calls: ..."
    on_fa3 = {"details": {"fa3_host_wait": waits, figures.BEST_LIBRARY: "fa3"}}
    on_cudnn = {"details": {"fa3_host_wait": waits, figures.BEST_LIBRARY: "cudnn"}}
    clean = {"details": {figures.BEST_LIBRARY: "fa3"}}
    forged = {"details": {"fa3_host_wait": 7, figures.BEST_LIBRARY: ["fa3"]}}
    verdict = {"scenarios": [on_fa3, on_cudnn, clean, forged, "not a scenario"]}
    assert figures.scenario_host_wait(on_fa3, "fa3") == waits
    assert figures.scenario_host_wait(on_fa3, figures.BEST_LIBRARY) == waits
    assert figures.scenario_host_wait(on_cudnn, figures.BEST_LIBRARY) is None  # cuDNN was the best there
    assert figures.host_wait_count(verdict, "fa3") == 2
    assert figures.host_wait_count(verdict, figures.BEST_LIBRARY) == 1
    assert figures.host_wait_count({"scenarios": None}, "fa3") == 0
