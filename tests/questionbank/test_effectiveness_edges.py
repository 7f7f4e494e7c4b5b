"""The question bank's attribution edges, pinned: each test kills a change to questionbank/effectiveness.py that
the rest of the suite let through (a mutation run, docs/testing.md). These figures decide which bank questions the
agent is shown as having worked, so a wrong one misleads every later run."""

import math

import pytest

from questionbank.effectiveness import (
    Measurement,
    QuestionEvent,
    RunHistory,
    aggregate,
    attribute_run,
    attribute_runs,
    effectiveness,
    geometric_mean,
    veto_counts,
)


def M(position, speedup):
    """A verified measurement known exactly (its interval the point itself): these edges are the point figures'."""
    known = isinstance(speedup, (int, float)) and math.isfinite(speedup) and speedup > 0
    return Measurement(position, speedup, (speedup, speedup) if known else None)


def q(qid, position, key="k", outcome="asked", **fields):
    return QuestionEvent(qid, position, key=key, outcome=outcome, **fields)


def test_a_ratio_of_exactly_one_is_allowed_and_below_one_is_refused():
    history = RunHistory(1, [q(1, 1)], [M(0, 1.0), M(2, 1.0)])
    assert attribute_run(history, 1.0)[0].large_gain is True  # x1.0 >= a ratio of 1.0
    for bad in (0.99, math.inf, math.nan):
        with pytest.raises(ValueError, match="large-gain ratio"):
            attribute_run(history, bad)


def test_a_zero_speedup_is_a_measurement_and_a_negative_or_missing_one_is_refused():
    [a] = attribute_run(RunHistory(1, [q(1, 1)], [M(0, 0.0), M(2, 3.0)]))
    assert a.before == 0.0 and a.after == 3.0 and a.gain is None  # a rise from zero has no ratio
    for bad in (-0.5, None, math.inf):
        with pytest.raises(ValueError, match="non-negative number"):
            attribute_run(RunHistory(1, [q(1, 1)], [M(0, bad)]))


def test_a_measurement_at_a_questions_position_counts_before_it_and_at_the_next_ones_inside_the_window():
    history = RunHistory(1, [q(1, 5), q(2, 9)], [M(0, 1.0), M(5, 2.0), M(9, 4.0), M(10, 8.0)])
    first, second = attribute_run(history)
    assert (first.before, first.after, first.window_evaluations) == (2.0, 4.0, 1)  # 5 before it; 9 in its window
    assert (second.before, second.after, second.window_evaluations) == (4.0, 8.0, 1)


def test_a_gain_exactly_at_the_ratio_is_large_and_just_below_is_not():
    at = attribute_run(RunHistory(1, [q(1, 1)], [M(0, 1.0), M(2, 1.2)]))[0]
    below = attribute_run(RunHistory(1, [q(1, 1)], [M(0, 1.0), M(2, 1.19)]))[0]
    assert at.large_gain is True and below.large_gain is False


def test_the_ratio_given_is_the_ratio_used_everywhere():
    history = RunHistory(1, [q(1, 1)], [M(0, 1.0), M(2, 1.5)])
    assert attribute_runs([history], 2.0)[0].large_gain is False  # x1.5 is large at the default 1.2, not at 2.0
    assert effectiveness([history], large_gain_ratio=2.0)["k"].large_gains == 0
    assert effectiveness([history])["k"].large_gains == 1


def test_attributions_carry_their_questions_decision_point_and_groups_carry_their_name():
    history = RunHistory(1, [q(1, 1, decision_point="plateau", category="layer")], [M(0, 1.0), M(2, 2.0)])
    [a] = attribute_run(history)
    assert a.decision_point == "plateau"
    by_point = aggregate([a], by="decision_point")
    assert by_point["plateau"].group == "plateau"
    assert aggregate([a])["k"].group == "k"  # grouped by key unless told otherwise
    assert set(effectiveness([history])) == {"k"}


def test_grouping_by_an_unknown_field_is_refused():
    with pytest.raises(ValueError, match="cannot aggregate by 'KEY'"):
        aggregate([], by="KEY")


def test_vetoes_are_counted_per_group_each_one():
    history = RunHistory(1, [q(1, 1, outcome="vetoed"), q(2, 2, outcome="vetoed"), q(3, 3, key="j", outcome="vetoed")])
    assert veto_counts([history]) == {"k": 2, "j": 1}
    assert veto_counts([history], by="source") == {}  # no source given: nothing to group


def test_the_geometric_mean_of_gains_with_a_zero_is_zero():
    assert geometric_mean([0.0, 4.0]) == 0.0
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([]) is None


def test_an_unknown_outcome_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown question outcome 'maybe' \(known: asked, vetoed, pending\)"):
        q(1, 1, outcome="maybe")


def test_attributions_and_aggregates_read_as_plain_dicts():
    [a] = attribute_run(RunHistory(1, [q(1, 1)], [M(0, 1.0), M(2, 2.0)]))
    assert a.as_dict()["gain"] == 2.0 and a.as_dict()["question_id"] == 1
    assert aggregate([a])["k"].as_dict() == {
        "group": "k",
        "asked": 1,
        "attributed": 1,
        "mean_gain": 2.0,
        "mean_gain_low": 2.0,
        "mean_gain_high": 2.0,
        "large_gains": 1,
        "large_gain_unknown": 0,
        "large_gain_rate": 1.0,
        "runs": 1,
        "vetoed": 0,
    }
