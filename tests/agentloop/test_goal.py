"""agentloop.goal: the run's Goal applied through gpu_harness.figures, under the names the loop calls."""

from agentloop.config import Goal
from agentloop.goal import covers, goal_met, meets_target, speedup_over, verified_speedup, worth_a_goal_check


def verdict(speedup, correct=True):
    return {
        "status": "correct" if correct else "incorrect",
        "scenarios": [{"id": "a", "correct": correct}, {"id": "b", "correct": correct}],
        "geomean": {"naive": {"speedup": speedup, "count": 2}},
    }


def test_the_goal_is_met_exactly_at_its_target_on_the_full_set():
    goal = Goal(baseline="naive", speedup=2.0)
    assert meets_target(verdict(2.0), goal) and goal_met(verdict(2.0), goal, ["a", "b"], [])
    assert not goal_met(verdict(2.0), goal, ["a", "b", "c"], []) and covers(verdict(2.0), ["a"])
    assert not meets_target(verdict(1.99), goal)


def test_only_a_verdict_correct_on_everything_gives_a_verified_speedup():
    goal = Goal(baseline="naive", speedup=2.0)
    assert verified_speedup(verdict(1.5), goal) == 1.5 == speedup_over(verdict(1.5), "naive")
    assert verified_speedup(verdict(1.5, correct=False), goal) is None
    assert speedup_over(verdict(1.5, correct=False), "naive") == 1.5  # measured, not verified


def timed_verdict(speedup, low, high):
    """A verdict on scenarios a and b, each `speedup` over naive, with the harness's intervals on the medians
    so that each speed-up's interval is [low, high]."""
    scenario = {
        "correct": True,
        "time_ms": 1.0,
        "time_ci_ms": [1.0, 1.0],
        "speedup": {"naive": speedup},
        "baseline_ms": {"naive": speedup},
        "baseline_ci_ms": {"naive": [low, high]},
    }
    return {
        "status": "correct",
        "scenarios": [{"id": "a", **scenario}, {"id": "b", **scenario}],
        "geomean": {"naive": {"speedup": speedup, "count": 2}},
    }


def test_the_goal_is_met_only_when_the_interval_clears_the_target():
    goal = Goal(baseline="naive", speedup=2.0)
    within_noise = timed_verdict(2.3, 1.7, 2.9)  # above the target at its point, not beyond its noise
    assert meets_target(within_noise, goal)  # worth a full check
    assert not goal_met(within_noise, goal, ["a", "b"], [])
    assert goal_met(timed_verdict(2.3, 2.0, 2.6), goal, ["a", "b"], [])  # exactly at the target, at its low end


def test_a_best_library_goal_needs_every_library_of_the_task_timed():
    goal = Goal(baseline="best_library", speedup=1.0)
    result = verdict(1.2)
    result["geomean"]["best_library"] = {"speedup": 1.2, "count": 2}
    result["libraries"] = ["eager", "compile", "quack"]
    assert goal_met(result, goal, ["a", "b"], ["eager", "compile", "quack"])
    result["baseline_notes"] = {"quack": "quack.softmax is not installed"}
    assert not goal_met(result, goal, ["a", "b"], ["eager", "compile", "quack"])


def test_a_goal_check_is_worth_running_only_on_a_verdict_at_the_target_over_every_library():
    """The loop asks for a fresh full check (the goal check) of a verdict at its target on what it ran, but not of
    one that missed a library of a best_library goal: the same host would miss it again (worth_a_goal_check)."""
    goal = Goal(baseline="best_library", speedup=1.0)
    result = verdict(1.2)
    result["geomean"]["best_library"] = {"speedup": 1.2, "count": 2}
    result["libraries"] = ["eager", "quack"]
    assert worth_a_goal_check(result, goal, ["eager", "quack"])
    below = {**result, "geomean": {"best_library": {"speedup": 0.99, "count": 2}}}
    assert not worth_a_goal_check(below, goal, ["eager", "quack"])
    result["baseline_notes"] = {"quack": "quack.softmax is not installed"}
    assert not worth_a_goal_check(result, goal, ["eager", "quack"])
    assert worth_a_goal_check(verdict(2.0), Goal(baseline="naive", speedup=2.0), [])  # no library to miss
