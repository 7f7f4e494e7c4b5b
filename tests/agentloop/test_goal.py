"""agentloop.goal: the run's Goal applied through gpu_harness.figures, under the names the loop calls."""

from agentloop.config import Goal
from agentloop.goal import covers, goal_met, meets_target, speedup_over, verified_speedup


def verdict(speedup, correct=True):
    return {
        "status": "correct" if correct else "incorrect",
        "scenarios": [{"id": "a", "correct": correct}, {"id": "b", "correct": correct}],
        "geomean": {"naive": {"speedup": speedup, "count": 2}},
    }


def test_the_goal_is_met_exactly_at_its_target_on_the_full_set():
    goal = Goal(baseline="naive", speedup=2.0)
    assert meets_target(verdict(2.0), goal) and goal_met(verdict(2.0), goal, ["a", "b"])
    assert not goal_met(verdict(2.0), goal, ["a", "b", "c"]) and covers(verdict(2.0), ["a"])
    assert not meets_target(verdict(1.99), goal)


def test_only_a_verdict_correct_on_everything_gives_a_verified_speedup():
    goal = Goal(baseline="naive", speedup=2.0)
    assert verified_speedup(verdict(1.5), goal) == 1.5 == speedup_over(verdict(1.5), "naive")
    assert verified_speedup(verdict(1.5, correct=False), goal) is None
    assert speedup_over(verdict(1.5, correct=False), "naive") == 1.5  # measured, not verified
