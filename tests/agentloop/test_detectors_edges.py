"""The decision-point detectors' edges, pinned: each test kills a change to agentloop/detectors.py that the rest
of the suite let through (a mutation run, docs/testing.md). A detector that fires on every turn floods reviewers
with questions; one that never fires leaves the agent alone at the moments questions are for."""

import dataclasses

from agentloop.detectors import Turn, claimed_limit, detect, failure_streak, plateau, regression, stopped_short
from agentloop.events import make_event
from agentloop.policy import default_policy
from agentloop.state import RunState

SETTINGS = default_policy().detectors  # plateau_window 3, failure_streak 3, regression_ratio 0.9
PATTERNS = default_policy().limit_patterns
EVALUATED = Turn("", ended=False, new_evaluations=1)
NOT_EVALUATED = Turn("", ended=False, new_evaluations=0)


class Run:
    """A run's state fed the way the loop feeds it: evaluation events, and decision points when they fire."""

    def __init__(self):
        self.state, self.seq = RunState(), 0

    def evaluate(self, speedup, status="correct", full=False):
        result = {"status": status, "scenarios": [{"id": "a", "correct": status == "correct"}]}
        payload = {"purpose": "tool", "result": result, "speedup": speedup, "full": full}
        self.state.apply(make_event("r", self.seq, "evaluation", payload))
        self.seq += 1
        return self

    def fired(self, name):
        self.state.apply(make_event("r", self.seq, "decision_point", {"name": name, "detail": ""}))
        self.seq += 1
        return self


def test_failure_streak_needs_n_failures_in_a_row_not_one():
    run = Run().evaluate(1.0).evaluate(1.0).evaluate(None, "error")
    assert failure_streak(run.state, EVALUATED, SETTINGS) is None
    run.evaluate(None, "incorrect")
    assert failure_streak(run.state, EVALUATED, SETTINGS) is None
    run.evaluate(None, "error")
    assert failure_streak(run.state, EVALUATED, SETTINGS).evidence == {"statuses": ["error", "incorrect", "error"]}


def test_failure_streak_fires_only_on_a_turn_that_evaluated():
    run = Run().evaluate(None, "error").evaluate(None, "error").evaluate(None, "error")
    assert failure_streak(run.state, NOT_EVALUATED, SETTINGS) is None


def test_failure_streak_fires_again_only_after_n_more_failures():
    run = Run()
    for _ in range(3):
        run.evaluate(None, "error")
    run.fired("failure-streak")
    for count in (1, 2):
        run.evaluate(None, "error")
        assert failure_streak(run.state, EVALUATED, SETTINGS) is None, count
    run.evaluate(None, "error")
    assert failure_streak(run.state, EVALUATED, SETTINGS) is not None


def test_a_correct_status_with_a_wrong_scenario_counts_as_a_failure():
    run = Run()
    for _ in range(3):
        result = {"status": "correct", "scenarios": [{"id": "a", "correct": True}, {"id": "b", "correct": False}]}
        run.state.apply(make_event("r", run.seq, "evaluation", {"purpose": "tool", "result": result, "speedup": 2.0}))
        run.seq += 1
    assert failure_streak(run.state, EVALUATED, SETTINGS) is not None


def test_plateau_fires_again_after_exactly_k_more_evaluations_without_a_gain():
    run = Run().evaluate(2.0).evaluate(1.0).evaluate(1.0).evaluate(1.0)
    assert plateau(run.state, EVALUATED, SETTINGS) is not None
    run.fired("plateau")
    run.evaluate(1.0).evaluate(1.0)
    assert plateau(run.state, EVALUATED, SETTINGS) is None  # 2 since it fired
    run.evaluate(1.0)
    assert plateau(run.state, EVALUATED, SETTINGS).evidence == {"best_speedup": 2.0, "window": [1.0, 1.0, 1.0]}


def test_plateau_needs_a_full_window():
    run = Run().evaluate(1.0).evaluate(1.0)
    assert plateau(run.state, EVALUATED, SETTINGS) is None


def test_regression_does_not_fire_again_on_a_turn_without_an_evaluation():
    run = Run().evaluate(2.0).evaluate(1.5)
    assert regression(run.state, EVALUATED, SETTINGS) is not None
    assert regression(run.state, NOT_EVALUATED, SETTINGS) is None


def test_regression_is_measured_against_the_ratio_of_the_best():
    assert regression(Run().evaluate(2.0).evaluate(1.79).state, EVALUATED, SETTINGS) is not None
    assert regression(Run().evaluate(2.0).evaluate(1.8).state, EVALUATED, SETTINGS) is None  # exactly 0.9 x best


def test_regression_ignores_incorrect_kernels_and_unmeasured_ones():
    assert regression(Run().evaluate(2.0).evaluate(0.5, "incorrect").state, EVALUATED, SETTINGS) is None
    assert regression(Run().evaluate(2.0).evaluate(None).state, EVALUATED, SETTINGS) is None
    assert regression(Run().state, EVALUATED, SETTINGS) is None


def test_a_new_regression_after_a_recovery_fires_again():
    run = Run().evaluate(2.0).evaluate(1.5)
    assert regression(run.state, EVALUATED, SETTINGS) is not None
    run.evaluate(2.0).evaluate(1.5)  # back at the best, then down again: a new regression
    assert regression(run.state, EVALUATED, SETTINGS).evidence == {"speedup": 1.5, "best_speedup": 2.0}


def test_a_claimed_limit_after_the_goal_is_not_a_decision_point():
    state = RunState()
    state.goal_met = True
    assert claimed_limit(state, Turn("This is the hardware limit.", True, 0), SETTINGS, patterns=PATTERNS) is None


def test_a_claimed_limit_keeps_the_phrase_and_its_context():
    text = "x" * 200 + " This is the hardware limit. " + "y" * 200
    firing = claimed_limit(RunState(), Turn(text, True, 0), SETTINGS, patterns=PATTERNS)
    phrase = firing.evidence["phrase"]
    assert phrase in firing.detail and phrase in firing.evidence["context"]
    assert len(firing.evidence["context"]) == len(phrase) + 160


def test_stopping_short_says_the_best_so_far_and_calls_it_verified_only_from_the_full_set():
    assert "best: none yet" in stopped_short(RunState(), Turn("", True, 0), SETTINGS).detail
    state = Run().evaluate(1.234, full=True).state
    firing = stopped_short(state, Turn("", True, 0), SETTINGS)
    assert "best verified: 1.23x, full set" in firing.detail and firing.evidence == {"best_speedup": 1.234}


def test_stopping_short_after_quick_figures_only_never_calls_the_best_verified():
    # The audit's demo run: a quick-set 0.134x was called "best verified" while the header said quick.
    state = Run().evaluate(0.134).evaluate(0.1, full=True).state
    detail = stopped_short(state, Turn("", True, 0), SETTINGS).detail
    assert "verified" not in detail.replace("not verified", "")
    assert "best quick: 0.134x, quick set only, not verified" in detail


def test_a_detector_disabled_in_the_policy_never_fires():
    run = Run().evaluate(2.0).evaluate(1.0).evaluate(1.0).evaluate(1.0)
    turn = Turn("", ended=True, new_evaluations=1)
    everything = [f.name for f in detect(run.state, turn, SETTINGS, PATTERNS)]
    assert "plateau" in everything and "stopped-short" in everything
    without = dataclasses.replace(SETTINGS, enabled=tuple(n for n in SETTINGS.enabled if n != "plateau"))
    assert "plateau" not in [f.name for f in detect(run.state, turn, without, PATTERNS)]


def test_detectors_fire_in_the_policys_priority_order():
    run = Run().evaluate(2.0).evaluate(1.0).evaluate(1.0).evaluate(1.0)
    turn = Turn("", ended=True, new_evaluations=1)
    names = [f.name for f in detect(run.state, turn, SETTINGS, PATTERNS)]
    assert names == [n for n in SETTINGS.priority if n in names]
    reversed_order = dataclasses.replace(SETTINGS, priority=tuple(reversed(SETTINGS.priority)))
    assert [f.name for f in detect(run.state, turn, reversed_order, PATTERNS)] == list(reversed(names))


def test_each_firing_names_itself_and_says_what_it_saw():
    run = Run().evaluate(2.0).evaluate(2.0).evaluate(1.5)  # the latest regressed, the one before did not
    firing = regression(run.state, EVALUATED, SETTINGS)
    assert firing.name == "regression"
    assert firing.detail == "the latest correct kernel runs at 1.5x, below the best 2x"
    failing = Run().evaluate(None, "error").evaluate(None, "error").evaluate(None, "error")
    streak = failure_streak(failing.state, EVALUATED, SETTINGS)
    assert streak.detail == "the last 3 evaluations failed to compile, were incorrect or errored"
    flat = plateau(failing.state, EVALUATED, SETTINGS)  # three failures are three evaluations without a gain
    assert flat.name == "plateau" and flat.detail == "no gain in the run's best speedup over the last 3 evaluations"


def test_a_claim_at_the_start_of_the_text_keeps_its_context_from_the_start():
    text = "This is the hardware limit. More words follow here."
    firing = claimed_limit(RunState(), Turn(text, True, 0), SETTINGS, patterns=PATTERNS)
    assert firing.evidence["context"] == text


def test_detect_hands_the_limit_patterns_to_the_claim_detector():
    turn = Turn("It cannot go any faster.", ended=False, new_evaluations=0)
    assert [f.name for f in detect(RunState(), turn, SETTINGS, PATTERNS)] == ["claimed-limit"]
