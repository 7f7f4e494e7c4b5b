"""A large gain is a rise beyond the noise: the after-kernel's interval low end over the before-kernel's high end
reaches the large-gain ratio. Without an interval on either side the noise is unknown, and so is the large gain.
Every figure is worked out by hand in the comments."""

import pytest

from questionbank.effectiveness import (
    LARGE_GAIN,
    NO_GAIN,
    NOISE_UNKNOWN,
    NOT_LARGE_GAIN,
    Measurement,
    QuestionEvent,
    RunHistory,
    attribute_run,
    effectiveness,
    selection_stats,
)


def asked(qid, position, key="layer-x"):
    return QuestionEvent(question_id=qid, position=position, key=key, category="layer")


def one_question(before, after, ratio=1.2):
    """The attribution of a question asked between two measurements, each (speedup, interval)."""
    history = RunHistory(
        run_id="R",
        questions=[asked(1, 1)],
        measurements=[Measurement(0, before[0], before[1]), Measurement(2, after[0], after[1])],
    )
    [attribution] = attribute_run(history, large_gain_ratio=ratio)
    return attribution


def test_a_rise_of_1_25_whose_intervals_overlap_is_not_a_large_gain():
    # x1.00 in [0.90, 1.10] to x1.25 in [1.10, 1.40]: the point ratio 1.25 is over 1.2, but the after-kernel can be
    # as slow as 1.10 and the before-kernel as fast as 1.10: the low end 1.10 / 1.10 = 1.0.
    a = one_question((1.0, (0.9, 1.1)), (1.25, (1.1, 1.4)))
    assert a.gain == pytest.approx(1.25)
    assert (a.gain_low, a.gain_high) == (pytest.approx(1.0), pytest.approx(1.4 / 0.9))
    assert a.large_gain is False and a.large_gain_label == NOT_LARGE_GAIN


def test_a_rise_of_1_21_inside_the_noise_is_not_a_large_gain():
    a = one_question((1.0, (0.95, 1.05)), (1.21, (1.0, 1.45)))
    assert a.large_gain is False  # 1.0 / 1.05 < 1.2


def test_a_rise_clearly_beyond_the_noise_is_a_large_gain():
    # x1.00 in [0.98, 1.02] to x1.50 in [1.47, 1.53]: the low end 1.47 / 1.02 = 1.441 >= 1.2.
    a = one_question((1.0, (0.98, 1.02)), (1.5, (1.47, 1.53)))
    assert (a.before_low, a.before_high, a.after_low, a.after_high) == (0.98, 1.02, 1.47, 1.53)
    assert a.gain_low == pytest.approx(1.47 / 1.02) and a.gain_high == pytest.approx(1.53 / 0.98)
    assert a.large_gain is True and a.large_gain_label == LARGE_GAIN


def test_a_rise_beyond_the_noise_but_not_by_the_ratio_beyond_it_is_not_large():
    # The intervals do not overlap (1.05 < 1.20), but the rise beyond the noise is 1.20 / 1.05 = 1.143 < 1.2.
    a = one_question((1.0, (0.95, 1.05)), (1.25, (1.2, 1.3)))
    assert a.large_gain is False


def test_the_low_end_exactly_at_the_ratio_is_large_and_the_ratio_is_the_one_given():
    a = one_question((1.0, (0.9, 1.0)), (1.5, (1.2, 1.8)))  # 1.2 / 1.0 = 1.2 exactly
    assert a.large_gain is True
    assert one_question((1.0, (0.9, 1.0)), (1.5, (1.2, 1.8)), ratio=1.3).large_gain is False


@pytest.mark.parametrize(
    "before, after",
    [
        ((1.0, None), (2.0, (1.9, 2.1))),  # the before-kernel's verdict has no interval (from before they were kept)
        ((1.0, (0.99, 1.01)), (2.0, None)),  # the after-kernel's
        ((1.0, None), (2.0, None)),
        ((1.0, None), (1.05, None)),  # a point gain below the ratio: still unknown, not False (see the docstring)
    ],
)
def test_a_gain_whose_noise_is_unknown_is_neither_large_nor_not(before, after):
    a = one_question(before, after)
    assert a.gain == pytest.approx(after[0] / before[0])
    assert a.large_gain is None and a.large_gain_label == NOISE_UNKNOWN
    assert (a.gain_low, a.gain_high) == (None, None)


def test_no_gain_is_labelled_so_and_is_not_a_noise_question():
    history = RunHistory(run_id="R", questions=[asked(1, 1)], measurements=[Measurement(2, 1.5, (1.4, 1.6))])
    [a] = attribute_run(history)
    assert (a.gain, a.large_gain, a.large_gain_label) == (None, None, NO_GAIN)
    assert (a.after, a.after_low, a.after_high) == (1.5, 1.4, 1.6)


def test_the_references_interval_is_the_before_kernels_where_the_reference_is_the_best():
    history = RunHistory(
        run_id="R",
        reference=1.0,
        reference_interval=(0.98, 1.02),
        questions=[asked(1, 1)],
        measurements=[Measurement(0, 0.5, (0.49, 0.51)), Measurement(2, 1.5, (1.47, 1.53))],
    )
    [a] = attribute_run(history)
    assert (a.before, a.before_low, a.before_high) == (1.0, 0.98, 1.02) and a.large_gain is True
    unknown = RunHistory(
        run_id="R", reference=1.0, questions=[asked(1, 1)], measurements=[Measurement(2, 1.5, (1.47, 1.53))]
    )
    assert attribute_run(unknown)[0].large_gain is None  # a reference without its interval: noise unknown


def test_where_nothing_beat_the_best_its_own_interval_is_both_ends_and_no_gain_is_large():
    # The window's x1.0 ties the best: the first to reach it stays the best, so before and after are one
    # measurement, and its gain x1.0 lies in [0.9 / 1.1, 1.1 / 0.9], which holds 1.0: no difference.
    history = RunHistory(
        run_id="R",
        questions=[asked(1, 1)],
        measurements=[Measurement(0, 1.0, (0.9, 1.1)), Measurement(2, 1.0, None)],
    )
    [a] = attribute_run(history)
    assert (a.gain, a.after_low, a.after_high) == (1.0, 0.9, 1.1)
    assert a.gain_low == pytest.approx(0.9 / 1.1) and a.large_gain is False


@pytest.mark.parametrize("interval", [(1.2, 1.1), (0.0, 1.0), (1.0, float("inf")), ("1", 2.0), (1.0,)])
def test_a_malformed_interval_is_refused_naming_the_run(interval):
    history = RunHistory(run_id="Z", questions=[asked(1, 1)], measurements=[Measurement(0, 1.0, interval)])
    with pytest.raises(ValueError, match="run Z: an interval must be two positive numbers"):
        attribute_run(history)
    with pytest.raises(ValueError, match="run Z: the reference: an interval must be"):
        attribute_run(RunHistory(run_id="Z", reference=1.0, reference_interval=interval))


# ---- aggregates: the unknown ones counted apart, the rate over the known ones ----

RUNS = [
    # large beyond the noise: x1.0 [0.98, 1.02] to x1.5 [1.47, 1.53], gain 1.5
    RunHistory("A", [asked(1, 1)], [Measurement(0, 1.0, (0.98, 1.02)), Measurement(2, 1.5, (1.47, 1.53))]),
    # inside the noise: x1.0 [0.9, 1.1] to x1.25 [1.1, 1.4], gain 1.25, not large
    RunHistory("B", [asked(2, 1)], [Measurement(0, 1.0, (0.9, 1.1)), Measurement(2, 1.25, (1.1, 1.4))]),
    # noise unknown: x1.0 to x2.0 without intervals, gain 2.0
    RunHistory("C", [asked(3, 1)], [Measurement(0, 1.0), Measurement(2, 2.0)]),
]


def test_the_large_gain_rate_is_over_the_attributions_whose_large_gain_is_known():
    figures = effectiveness(RUNS)["layer-x"]
    assert (figures.asked, figures.attributed, figures.large_gains, figures.large_gain_unknown) == (3, 3, 1, 1)
    assert figures.large_gain_rate == 0.5  # one large of the two known; the unknown one is in neither count
    assert figures.mean_gain == pytest.approx((1.5 * 1.25 * 2.0) ** (1 / 3))
    assert selection_stats(effectiveness(RUNS))["layer-x"]["large_gain_rate"] == 0.5


def test_the_mean_gains_interval_is_the_geometric_mean_of_the_gains_intervals_and_unknown_with_one_unknown():
    figures = effectiveness(RUNS[:2])["layer-x"]
    # lows 1.47 / 1.02 and 1.1 / 1.1; highs 1.53 / 0.98 and 1.4 / 0.9
    assert figures.mean_gain_low == pytest.approx((1.47 / 1.02 * 1.0) ** 0.5)
    assert figures.mean_gain_high == pytest.approx((1.53 / 0.98 * 1.4 / 0.9) ** 0.5)
    assert (effectiveness(RUNS)["layer-x"].mean_gain_low, effectiveness(RUNS)["layer-x"].mean_gain_high) == (None, None)


def test_with_every_large_gain_unknown_the_rate_is_unknown_not_zero():
    figures = effectiveness(RUNS[2:])["layer-x"]
    assert (figures.attributed, figures.large_gains, figures.large_gain_unknown) == (1, 0, 1)
    assert figures.large_gain_rate is None
