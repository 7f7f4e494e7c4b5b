"""The GEMM lab's phase log summary (lab/gemm_bias_gelu/tools/phases.py), on rows made up here: the GPU side writes
per CTA its start, each consumer's end (globaltimer ns) and each consumer's cycles in four phases and its tiles;
the summary is what the lab README's phase figures come from (where the epilogue's 8 us were found)."""

import pytest

from .conftest import load_kernel_tool


def _tool():
    return load_kernel_tool("phases", lab="gemm_bias_gelu")


def _row(start, ends, consumers):
    """A log row: start ns, consumer 0 and 1 end ns, then (turn, first, main, epilogue, tiles) per consumer."""
    return [start, *ends, *consumers[0], *consumers[1]]


def test_a_cooperative_log_gives_the_phases_the_clock_and_the_main_loops_rate():
    # CTAs of 1000 and 800 ns (a CTA's span ends with its later consumer); each consumer's 2000 cycles are 100
    # first, 1400 main, 500 epilogue
    rows = [
        _row(5000, (6000, 5900), [(0, 100, 1400, 500, 1), (0, 100, 1400, 500, 1)]),
        _row(5200, (5900, 6000), [(0, 100, 1400, 500, 1), (0, 100, 1400, 500, 1)]),
    ]
    f = _tool().summarize(rows, 256, 128, 64)
    assert f["ctas"] == 2 and f["kernel_us"] == pytest.approx(1.0) and f["start_spread_us"] == pytest.approx(0.2)
    assert f["ghz"] == pytest.approx(8000 / (2 * 1800))  # 8,000 cycles, two consumers over 1,800 ns of spans
    assert f["span_median_us"] == pytest.approx(0.9) and f["span_max_us"] == pytest.approx(1.0)
    us = f["consumers"][1]["us"]
    assert us["main"] == pytest.approx(1400 / f["ghz"] / 1e3) and us["turn"] == 0
    assert f["consumers"][0]["tiles"] == 1
    flop = 2.0 * 256 * 128 * 64
    assert f["flop_per_cycle_max"] == pytest.approx(flop / 2800)  # the main loops ran together: 1,400 a CTA
    assert f["flop_per_cycle_sum"] == pytest.approx(flop / 5600)  # in turns: 2,800 a CTA


def test_ping_pong_turns_count_apart_from_the_main_loops():
    rows = [_row(0, (1000, 900), [(300, 10, 500, 190, 2), (0, 400, 300, 100, 1)])]
    f = _tool().summarize(rows, 128, 128, 128)
    c0, c1 = f["consumers"]
    assert (c0["tiles"], c1["tiles"]) == (2, 1)
    assert c0["us"]["turn"] / c0["us"]["main"] == pytest.approx(300 / 500)
    assert c1["us"]["first"] / c1["us"]["epilogue"] == pytest.approx(4.0)
    assert f["flop_per_cycle_sum"] == pytest.approx(2.0 * 128**3 / 800)
