"""Attribution on constructed run histories; every expected figure is worked out by hand in the comments."""

import math

import pytest

from questionbank.effectiveness import (
    ASKED,
    PENDING,
    VETOED,
    Measurement,
    QuestionEvent,
    RunHistory,
    aggregate,
    attribute_run,
    attribute_runs,
    effectiveness,
    geometric_mean,
    selection_stats,
    veto_counts,
)


def q(qid, position, key, category, outcome=ASKED, source="self", point="plateau"):
    return QuestionEvent(
        question_id=qid,
        position=position,
        key=key,
        category=category,
        source=source,
        decision_point=point,
        outcome=outcome,
    )


def m(position, speedup, interval="exact"):
    """A verified measurement; measured exactly unless told (its interval the point itself), so that these
    tests read the point figures alone: the noise has its own tests (test_effectiveness_noise.py)."""
    return Measurement(
        position=position, speedup=speedup, interval=(speedup, speedup) if interval == "exact" else interval
    )


# Run A: the starting kernel is measured first (x1.0), and it is the run's reference.
RUN_A = RunHistory(
    run_id="A",
    reference=1.0,
    reference_interval=(1.0, 1.0),
    measurements=[m(1, 1.0), m(3, 1.5), m(4, 1.2), m(6, 2.4), m(8, 2.0), m(10, 3.0)],
    questions=[
        q(1, 2, "layer-x", "layer", point="start"),
        q(2, 5, "limit-y", "limit", outcome=VETOED),  # vetoed: not asked, does not end Q1's window
        q(3, 7, "limit-y", "limit", source="bank"),
        q(4, 9, "information-z", "information"),
    ],
)
# Run B: no reference; the first question comes before anything is verified.
RUN_B = RunHistory(
    run_id="B",
    measurements=[m(2, 0.8), m(4, 0.9), m(6, 1.8), m(8, 2.7)],
    questions=[
        q(5, 1, "layer-x", "layer", point="start"),
        q(6, 3, "limit-y", "limit"),
        q(7, 5, "limit-y", "limit", outcome=PENDING),  # still waiting for a reviewer: not asked yet
        q(8, 7, None, "", source="human"),  # a reviewer's own question: ends Q6's window, has no key
    ],
)


def by_id(attributions):
    return {a.question_id: a for a in attributions}


def test_each_asked_question_gets_the_best_before_and_the_best_at_the_end_of_its_window():
    a = by_id(attribute_run(RUN_A, large_gain_ratio=1.2))
    assert set(a) == {1, 3, 4}  # the vetoed question gets nothing
    # Q1 at 2: before = max(ref 1.0, 1.0 at 1) = 1.0; window (2, 7] holds 1.5, 1.2, 2.4 -> after 2.4, gain 2.4.
    assert (a[1].before, a[1].after, a[1].window_evaluations) == (1.0, 2.4, 3)
    assert a[1].gain == pytest.approx(2.4) and a[1].large_gain is True
    # Q3 at 7: before = 2.4; window (7, 9] holds 2.0, slower: the best stays 2.4 -> gain 1.0, not large.
    assert (a[3].before, a[3].after, a[3].gain, a[3].large_gain) == (2.4, 2.4, 1.0, False)
    # Q4 at 9: before = 2.4; window (9, end] holds 3.0 -> gain 3.0 / 2.4 = 1.25 >= 1.2, large.
    assert a[4].gain == pytest.approx(1.25) and a[4].large_gain is True
    assert (a[4].key, a[4].category, a[4].source, a[3].source) == ("information-z", "information", "self", "bank")


def test_a_question_asked_before_anything_was_verified_has_no_gain():
    b = by_id(attribute_run(RUN_B, large_gain_ratio=1.2))
    # Q5 at 1: nothing verified before and no reference -> gain None; after = 0.8 (the only one in (1, 3]).
    assert (b[5].before, b[5].after, b[5].gain, b[5].large_gain) == (None, 0.8, None, None)


def test_a_pending_question_does_not_end_the_window_of_the_one_before():
    b = by_id(attribute_run(RUN_B, large_gain_ratio=1.2))
    assert 7 not in b
    # Q6 at 3: before 0.8; window (3, 7] holds 0.9 and 1.8 (Q7 is pending) -> gain 1.8 / 0.8 = 2.25.
    assert b[6].after == 1.8 and b[6].gain == pytest.approx(2.25) and b[6].window_evaluations == 2
    # Q8, a human's, at 7: before 1.8; window (7, end] holds 2.7 -> gain 1.5.
    assert b[8].key is None and b[8].gain == pytest.approx(1.5) and b[8].large_gain is True


def test_the_reference_counts_as_before_even_when_nothing_else_was_verified():
    history = RunHistory(run_id="C", reference=0.5, measurements=[m(3, 0.75)], questions=[q(1, 2, "layer-x", "layer")])
    (only,) = attribute_run(history)
    assert (only.before, only.after, only.gain) == (0.5, 0.75, 1.5)


def test_a_measurement_at_the_questions_own_position_counts_before_it():
    history = RunHistory(run_id="D", measurements=[m(5, 1.0), m(6, 1.1)], questions=[q(1, 5, "layer-x", "layer")])
    (only,) = attribute_run(history)
    assert only.before == 1.0 and only.gain == pytest.approx(1.1)


def test_events_are_ordered_by_position_not_by_list_order():
    history = RunHistory(
        run_id="E",
        measurements=[m(9, 2.0), m(1, 1.0)],
        questions=[q(2, 5, "limit-y", "limit"), q(1, 2, "layer-x", "layer")],
    )
    a = by_id(attribute_run(history))
    # Q1 at 2: before 1.0; window (2, 5] is empty -> gain 1.0. Q2 at 5: before 1.0; window (5, end] -> 2.0.
    assert a[1].gain == 1.0 and a[1].window_evaluations == 0 and a[2].gain == 2.0


def test_the_large_gain_threshold_is_inclusive_and_configurable():
    a = by_id(attribute_run(RUN_A, large_gain_ratio=1.25))
    assert a[4].large_gain is True  # gain exactly 1.25
    a = by_id(attribute_run(RUN_A, large_gain_ratio=3.0))
    assert [a[i].large_gain for i in (1, 3, 4)] == [False, False, False]


@pytest.mark.parametrize("ratio", [0.9, float("nan"), float("inf")])
def test_a_large_gain_ratio_below_one_or_not_finite_is_refused(ratio):
    with pytest.raises(ValueError, match="large-gain ratio"):
        attribute_run(RUN_A, large_gain_ratio=ratio)


def test_a_negative_or_missing_speedup_is_refused_naming_the_run():
    with pytest.raises(ValueError, match="run Z: a verified speedup"):
        attribute_run(RunHistory(run_id="Z", measurements=[m(1, -1.0)], questions=[q(1, 0, "layer-x", "layer")]))


def test_an_unknown_outcome_is_refused():
    with pytest.raises(ValueError, match="unknown question outcome 'maybe'"):
        QuestionEvent(question_id=1, position=0, outcome="maybe")


def test_figures_per_key_across_runs():
    per_key = effectiveness([RUN_A, RUN_B], by="key", large_gain_ratio=1.2)
    assert list(per_key) == ["information-z", "layer-x", "limit-y"]  # the human question has no key
    layer = per_key["layer-x"]
    # Asked as Q1 (gain 2.4) and Q5 (no gain): one attributed, mean 2.4, its one gain large.
    assert (layer.asked, layer.attributed, layer.large_gains, layer.runs, layer.vetoed) == (2, 1, 1, 2, 0)
    assert layer.mean_gain == pytest.approx(2.4) and layer.large_gain_rate == 1.0
    limit = per_key["limit-y"]
    # Q3 (gain 1.0) and Q6 (gain 2.25): geometric mean sqrt(1.0 * 2.25) = 1.5; one of two large; Q2 vetoed.
    assert (limit.asked, limit.attributed, limit.large_gains, limit.runs, limit.vetoed) == (2, 2, 1, 2, 1)
    assert limit.mean_gain == pytest.approx(1.5) and limit.large_gain_rate == 0.5
    info = per_key["information-z"]
    assert (info.asked, info.mean_gain, info.large_gain_rate) == (1, pytest.approx(1.25), 1.0)


def test_figures_per_category_and_per_source():
    per_category = effectiveness([RUN_A, RUN_B], by="category", large_gain_ratio=1.2)
    assert set(per_category) == {"layer", "limit", "information"}
    assert per_category["limit"].mean_gain == pytest.approx(1.5) and per_category["limit"].vetoed == 1
    per_source = effectiveness([RUN_A, RUN_B], by="source", large_gain_ratio=1.2)
    # self: Q1 2.4, Q4 1.25, Q5 none, Q6 2.25 -> geomean (2.4 * 1.25 * 2.25) ** (1/3) = 6.75 ** (1/3).
    assert per_source["self"].asked == 4 and per_source["self"].attributed == 3
    assert per_source["self"].mean_gain == pytest.approx(6.75 ** (1 / 3))
    assert per_source["human"].mean_gain == pytest.approx(1.5) and per_source["bank"].mean_gain == 1.0


def test_a_question_only_ever_vetoed_appears_with_no_asks():
    history = RunHistory(run_id="V", questions=[q(1, 1, "limit-never", "limit", outcome=VETOED)])
    figures = aggregate(attribute_runs([history]), by="key", vetoed=veto_counts([history], by="key"))
    assert figures["limit-never"].asked == 0 and figures["limit-never"].vetoed == 1
    assert figures["limit-never"].mean_gain is None and figures["limit-never"].large_gain_rate is None


def test_selection_stats_have_the_shape_the_prompt_reads():
    stats = selection_stats(effectiveness([RUN_A, RUN_B], by="key", large_gain_ratio=1.2))
    assert stats["limit-y"] == {"asked": 2, "mean_gain": pytest.approx(1.5), "large_gain_rate": 0.5}


def test_aggregating_by_an_unknown_field_is_refused():
    with pytest.raises(ValueError, match="cannot aggregate by 'colour'"):
        aggregate([], by="colour")


def test_geometric_mean_by_hand():
    assert geometric_mean([]) is None
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert math.isclose(geometric_mean([1.5]), 1.5)
