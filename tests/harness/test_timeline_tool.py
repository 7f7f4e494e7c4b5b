"""The per-CTA timeline's summary (kernels/attention_fwd_sm90/tools/timeline.py), on rows made up here: the GPU
side writes {start ns, end ns, SM, key blocks} per CTA, and the summary is what the kernel README's figures
for causal shapes come from (how busy the SMs were, how long they sat idle after their last CTA)."""

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "kernels" / "attention_fwd_sm90" / "tools" / "timeline.py"


def _tool():
    spec = importlib.util.spec_from_file_location("timeline", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
