"""The per-CTA timeline's summary (lab/attention_fwd_sm90/tools/timeline.py), on rows made up here: the GPU
side writes {start ns, end ns, SM, key blocks} per CTA, and the summary is what the kernel README's figures
for causal shapes come from (how busy the SMs were, how long they sat idle after their last CTA)."""

import pytest

from .conftest import load_kernel_tool


def _tool():
    return load_kernel_tool("timeline")


def test_summary_of_two_sms():
    # SM 0 runs two CTAs (1000..2000, then 2100..2600), SM 1 one (1000..3000); the zero row is a CTA that never
    # ran (a row past the grid, or the persistent kernel) and must not count
    rows = [(1000, 2000, 0, 10), (2100, 2600, 0, 5), (1000, 3000, 1, 20), (0, 0, 0, 0)]
    s = _tool().summarize(rows, sms=2)
    assert s["ctas"] == 3 and s["sms_used"] == 2
    assert s["span_us"] == pytest.approx(2.0)
    assert s["busy"] == pytest.approx((1000 + 500 + 2000) / (2 * 2000))
    # SM 0 ends 400 ns before the launch does, SM 1 with it
    assert s["tail_idle_mean"] == pytest.approx(0.1) and s["tail_idle_max"] == pytest.approx(0.2)
    assert s["gap_median_ns"] == 100
    # the first wave is the first two CTAs to start: 100 ns a block each; the later one 100 ns a block too
    assert s["ns_per_block_first_wave"] == pytest.approx(100.0)
    assert s["ns_per_block_later"] == pytest.approx(100.0)


def test_a_late_long_cta_shows_as_idle_time_on_the_other_sms():
    # four SMs; three finish 1000 ns after the launch starts, one started a long CTA late and ends at 4000 ns (a
    # start of 0 means the CTA never ran: %globaltimer is never 0)
    t = 10_000
    rows = [(t, t + 1000, i, 10) for i in range(3)] + [(t, t + 500, 3, 5), (t + 600, t + 4000, 3, 34)]
    s = _tool().summarize(rows, sms=4)
    assert s["tail_idle_max"] == pytest.approx(3000 / 4000)
    assert s["busy"] == pytest.approx((3 * 1000 + 500 + 3400) / (4 * 4000))
    assert s["ns_per_block_later"] == pytest.approx(100.0)


def test_no_rows_is_reported_as_no_ctas():
    assert _tool().summarize([(0, 0, 0, 0)] * 4, sms=132) == {"ctas": 0}


def _sim():
    return load_kernel_tool("schedule_sim")


def test_the_scheduler_model_deals_each_cta_to_the_first_free_sm():
    sim = _sim()
    # two SMs: 4 and 1 first, then 1, 1, 1 all go to the SM that freed first: both end at 4 (no gap)
    assert sim.busy_fraction([4, 1, 1, 1, 1], sms=2, gap_ns=0) == pytest.approx(8 / (2 * 4))
    # the long CTA last: the SMs share the short ones, then one runs the long one alone
    assert sim.busy_fraction([1, 1, 1, 1, 4], sms=2, gap_ns=0) == pytest.approx(8 / (2 * 6))


def test_section_order_takes_the_longest_tiles_first_within_each_section():
    sim = _sim()
    # 3 query blocks, 3 (batch, head) pairs, sections of 2: pairs 0 and 1 longest first, then pair 2
    assert sim.section_order(3, 3, 2) == [(2, 0), (2, 1), (1, 0), (1, 1), (0, 0), (0, 1), (2, 2), (1, 2), (0, 2)]
    # sections of one pair are the grid's own head-by-head order
    assert sim.section_order(2, 2, 1) == [(1, 0), (0, 0), (1, 1), (0, 1)]


def test_fit_recovers_a_fixed_cost_and_a_cost_per_block():
    sim = _sim()
    rows = [(1000, 1000 + 500 + 100 * n, 0, n) for n in (1, 5, 9)] + [(0, 0, 0, 0)]
    fixed, per_block = sim.fit(rows)
    assert fixed == pytest.approx(500) and per_block == pytest.approx(100)
    with pytest.raises(ValueError, match="same number of key blocks"):
        sim.fit([(1000, 2000, 0, 4), (1000, 2100, 1, 4)])
