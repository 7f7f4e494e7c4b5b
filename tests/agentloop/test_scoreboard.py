"""The scoreboard alone: what it records of each verdict, the best verified speedup, the goal, when a verdict
calls for the loop's own check, and the evaluation budget, all kept in the run's state by the events it emits."""

import dataclasses

import pytest

from agentloop.config import Budgets, Goal
from agentloop.errors import BudgetExhausted
from agentloop.events import Emitter
from agentloop.scoreboard import EVALUATIONS, Scoreboard
from agentloop.state import RunState
from tests.agentloop.helpers import FULL_IDS, make_config, verdict


def board(tmp_path, evaluations=None):
    state = RunState()
    events = []
    emitter = Emitter("t1", [events.append])
    emitter.add_listener(state.apply)
    config = make_config(goal_speedup=2.0, budgets=Budgets(evaluations=evaluations))
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text("// a kernel\n")
    return Scoreboard(state, config, FULL_IDS, emitter.emit, libraries=[]), state, events, kernel


def test_each_verdict_is_recorded_with_its_figures_and_the_best_counts_only_correct_ones(tmp_path):
    scores, state, events, kernel = board(tmp_path)
    first = scores.record(verdict(kernel, "quick", 1.5), "tool", "quick", "kernel.cpp", "toolu_1")
    wrong = scores.record(verdict(kernel, "quick", 3.0, status="incorrect"), "tool", "quick", "kernel.cpp", "toolu_2")
    assert [e["kind"] for e in events] == ["evaluation", "evaluation"] and events[0]["payload"] == first
    assert (first["speedup"], first["full"], first["goal_met"], first["best_speedup"]) == (1.5, False, False, 1.5)
    assert (wrong["best_speedup"], wrong["evaluations_used"]) == (1.5, 2)  # a wrong kernel's speed is no record
    assert state.best_speedup == 1.5 and not state.goal_met
    # a quick set's best is never called verified, to the model as on every page (it read "Best verified so far")
    said = scores.verdict_text(verdict(kernel, "quick", 1.5), first)
    assert "So far, the run's best quick: 1.5x, quick set only, not verified." in said and "verified so far" not in said
    assert scores.goal_status().startswith("best quick: 1.5x, quick set only, not verified (over naive); target 2x")
    full = verdict(kernel, "full", 1.75)
    scores.record(full, "tool", "full", "kernel.cpp", "toolu_3")
    assert scores.goal_status().startswith("best verified: 1.75x, full set (over naive); target 2x")


def test_a_quick_verdict_at_the_target_asks_for_a_full_check_and_only_a_full_one_meets_the_goal(tmp_path):
    scores, state, _, kernel = board(tmp_path)
    quick = verdict(kernel, "quick", 2.5)
    assert scores.worth_confirming(quick) and not scores.worth_confirming(verdict(kernel, "quick", 1.9))
    sha = quick["kernel_sha256"]
    assert scores.check_due_at_end(sha)  # never judged: checked when the model ends its turn
    assert not scores.record(quick, "tool", "quick", "kernel.cpp", "toolu_1")["goal_met"]
    assert scores.check_due_at_end(sha)  # a quick verdict at the target: still worth the full check
    check = scores.record(verdict(kernel, "full", 2.5), "goal_check", "full", "kernel.cpp", None)
    assert check["goal_met"] and check["full"] and check["evaluations_used"] == 1  # the loop's check is free
    assert state.goal_met and not scores.check_due_at_end(sha)  # judged in full: no second check


def test_the_evaluation_budget_refuses_the_call_after_the_last_and_then_ends_the_run(tmp_path):
    scores, state, _, kernel = board(tmp_path, evaluations=1)
    assert scores.refusal() is None
    scores.record(verdict(kernel, "quick", 1.2), "tool", "quick", "kernel.cpp", "toolu_1")
    scores.check_budget()  # used up, not yet exceeded: the model may still edit and end its turn
    assert "evaluation budget is spent (1 of 1 used)" in scores.refusal()
    state.apply({"kind": "tool_result", "payload": {"call_id": "toolu_2", "budget_spent": EVALUATIONS}})
    with pytest.raises(BudgetExhausted) as ended:
        scores.check_budget()
    assert ended.value.reason == "budget_evaluations"


def test_without_an_evaluation_budget_nothing_is_refused(tmp_path):
    scores, _, _, kernel = board(tmp_path)
    for n in range(5):
        scores.record(verdict(kernel, "quick", 1.0), "tool", "quick", "kernel.cpp", f"toolu_{n}")
    assert scores.refusal() is None


def library_board(tmp_path):
    """A scoreboard whose run's goal is 1x best_library over the libraries naive and numpy, its state knowing the
    run's config (as a run's first status event gives it), and a kernel file."""
    state = RunState()
    emitter = Emitter("t1", [])
    emitter.add_listener(state.apply)
    state.config = dataclasses.replace(make_config(), goal=Goal("best_library", 1.0))
    scores = Scoreboard(state, state.config, FULL_IDS, emitter.emit, libraries=["naive", "numpy"])
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text("// a kernel\n")
    return scores, state, kernel


def test_a_best_library_verdict_that_missed_a_library_is_not_confirmed_and_the_model_is_told_why(tmp_path):
    scores, state, kernel = library_board(tmp_path)
    result = verdict(kernel, "full", 1.5)
    result["geomean"]["best_library"] = {"speedup": 1.5, "count": len(FULL_IDS)}
    result["libraries"] = ["naive", "numpy"]
    assert scores.worth_confirming(result) and scores.libraries_missing(result) == []

    result["baseline_notes"] = {"numpy": "numpy is not installed"}
    payload = scores.record(result, "tool", "full", "kernel.cpp", "toolu_1")
    assert not payload["goal_met"] and not scores.worth_confirming(result) and not state.goal_met
    assert scores.libraries_missing(result) == ["numpy"]
    assert "this evaluation did not time numpy (the table's notes say why), so it cannot meet the goal" in (
        scores.verdict_text(result, payload)
    )


def test_the_runs_state_asks_for_a_goal_check_only_after_a_verdict_a_check_could_confirm(tmp_path):
    """What a resumed run does after a crash (RunState.goal_check_due) agrees with the scoreboard."""
    scores, state, kernel = library_board(tmp_path)
    quick = verdict(kernel, "quick", 1.5)
    quick["geomean"]["best_library"] = {"speedup": 1.5, "count": 1}
    quick["libraries"] = ["naive", "numpy"]
    scores.record(quick, "tool", "quick", "kernel.cpp", "toolu_1")
    assert state.goal_check_due == "kernel.cpp" and scores.worth_confirming(quick)
    assert scores.check_due_at_end(quick["kernel_sha256"])  # the model ending its turn gets the check
    quick["baseline_notes"] = {"numpy": "numpy is not installed"}
    scores.record(quick, "tool", "quick", "kernel.cpp", "toolu_2")
    assert state.goal_check_due is None and not scores.worth_confirming(quick)
    assert not scores.check_due_at_end(quick["kernel_sha256"])  # nor at the end of its turn
