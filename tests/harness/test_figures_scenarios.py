"""The per-scenario figures of gpu_harness.figures that the evidence view reads: outcomes, the spread of the
speed-ups, rates, shares of the peak and 3-significant-digit text."""

import math

import pytest

from gpu_harness import figures
from gpu_harness.verdict import geomean_speedups


def scenario(sid, correct=True, reason=None, **speedup):
    return {"id": sid, "correct": correct, "reason": reason, "speedup": speedup}


def test_a_scenario_never_run_is_not_wrong():
    assert figures.scenario_outcome(scenario("a", False, "not run: no GPU on this host")) == "not_run"
    assert figures.scenario_outcome(scenario("b", False, "max error 0.4 above 0.02")) == "wrong"
    assert figures.scenario_outcome(scenario("c", False, None)) == "wrong"
    assert figures.scenario_outcome(scenario("d", True, "timing suspect")) == "correct"


def test_the_spread_counts_the_correct_scenarios_the_geomean_covers():
    scenarios = [
        scenario("a", x=0.5),
        scenario("b", x=2.0),
        scenario("c", x=4.0),
        scenario("d", x=0.9),
        scenario("e", False, "wrong", x=100.0),  # a wrong scenario's speed-up counts for nothing
        scenario("f", x=None),
    ]
    verdict = {
        "scenarios": scenarios,
        "geomean": geomean_speedups([s["speedup"] for s in scenarios if s["correct"]], ["x"]),
    }
    spread = figures.speedup_spread(verdict, "x")
    assert spread["count"] == 4 == verdict["geomean"]["x"]["count"]
    assert spread["min"] == 0.5 and spread["median"] == pytest.approx((0.9 + 2.0) / 2)
    assert spread["below_one"] == 2
    assert spread["geomean"] == pytest.approx(math.prod([0.5, 2.0, 4.0, 0.9]) ** 0.25)


def test_the_spread_of_an_unmeasured_baseline_is_empty():
    spread = figures.speedup_spread({"scenarios": [scenario("a", x=1.5)], "geomean": {}}, "y")
    assert spread == {"count": 0, "min": None, "median": None, "geomean": None, "below_one": 0}


def test_rates_and_shares_of_the_peak():
    assert figures.tflops(2e12, 1000.0) == pytest.approx(2.0)
    assert figures.gbps(4e9, 2.0) == pytest.approx(2000.0)
    assert figures.peak_share(900.0, 1000.0) == pytest.approx(0.9)
    assert (
        figures.peak_share(900.0, None) is None and figures.gbps(None, 1.0) is None and figures.tflops(1.0, 0) is None
    )


@pytest.mark.parametrize(
    "value, text",
    [
        (0.002201252665921785, "0.00220"),
        (1.234567, "1.23"),
        (1234.5, "1230"),
        (0.5, "0.500"),
        (9.996, "10.0"),
        (None, "—"),
    ],
)
def test_numbers_are_written_to_three_significant_digits(value, text):
    assert figures.format_significant(value) == text
