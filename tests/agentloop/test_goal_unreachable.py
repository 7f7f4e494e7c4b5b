"""A best_library goal that cannot be met on the worker: once a verdict says a library of the goal could not run
there at all (not installed), the run ends `goal_unreachable` before its next model call instead of spending its
budget. The turn's tool calls are all answered first, the evaluate tool tells the model, the final status names
the library and its note, and a run resumed after that verdict ends the same way without asking the model.
A library the model merely did not ask for, or any goal over another baseline, ends nothing."""

import dataclasses
import json

from agentloop.agent import Agent, Oversight
from agentloop.config import Budgets, Goal
from agentloop.trace import TraceWriter, read_trace
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_config, payloads, unsandboxed
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use
from tests.agentloop.test_loop import evaluate

NOT_INSTALLED = "numpy is not installed (No module named 'numpy')"
TURNS = [
    Reply([evaluate(), tool_use("shell", {"command": "echo after"})]),
    Reply([text("a second turn")]),
    Reply([text("a third turn")]),
]


class LibraryEvaluator(ScriptedEvaluator):
    """Verdicts whose best library is the best of the libraries asked for (`asked`), and whose whole-run notes
    say which of them could not run here (`notes`)."""

    def __init__(self, asked, notes):
        super().__init__(default=("correct", 1.5))
        self.asked, self.notes = asked, notes

    def __call__(self, task, kernel_path, scenarios):
        result = super().__call__(task, kernel_path, scenarios)
        result["geomean"]["best_library"] = {"speedup": 1.5, "count": len(result["scenarios"])}
        result["libraries"] = list(self.asked)
        result["baseline_notes"] = dict(self.notes)
        return result


def library_config(baseline="best_library"):
    return dataclasses.replace(make_config(budgets=Budgets(steps=3)), goal=Goal(baseline, 2.0))


def run(tmp_path, evaluator, config=None):
    with MessagesServer(Script(TURNS)) as server:
        trace = TraceWriter(tmp_path / "trace.jsonl")
        agent = Agent(
            run_id="t1",
            config=config or library_config(),
            model=anthropic_model(server),
            sinks=[trace],
            host=unsandboxed(tmp_path / "ws"),
            evaluator=evaluator,
            oversight=Oversight(),
        )
        outcome = agent.run()
        trace.close()
        turns = len(server.turn_requests)
    return outcome, read_trace(tmp_path / "trace.jsonl"), turns


def test_a_library_that_cannot_run_here_ends_the_run_after_the_turn_with_every_call_answered(tmp_path):
    outcome, events, turns = run(tmp_path, LibraryEvaluator(["numpy"], {"numpy": NOT_INSTALLED}))
    assert (outcome.status, outcome.reason) == ("failed", "goal_unreachable")
    assert turns == 1  # no second turn: the run cannot succeed here
    calls = [p["call_id"] for p in payloads(events, "tool_call")]
    assert calls == [p["call_id"] for p in payloads(events, "tool_result")] and len(calls) == 2
    told = payloads(events, "tool_result")[0]["output"]
    assert "did not time numpy" in told and "the run ends after this turn" in told
    detail = payloads(events, "status")[-1]["detail"]
    assert detail.startswith(f"numpy cannot run on this worker ({NOT_INSTALLED}), so the goal, 2x over best_library,")


def test_a_library_not_asked_for_or_another_goal_baseline_ends_nothing(tmp_path):
    outcome, _, turns = run(tmp_path / "asked", LibraryEvaluator([], {}))
    assert outcome.reason == "budget_steps" and turns == 3
    over_naive = library_config(baseline="naive")
    outcome, _, turns = run(tmp_path / "naive", LibraryEvaluator(["numpy"], {"numpy": NOT_INSTALLED}), over_naive)
    assert outcome.reason == "budget_steps" and turns == 3


def test_a_run_resumed_after_the_verdict_ends_without_asking_the_model(tmp_path):
    _, events, _ = run(tmp_path / "recorded", LibraryEvaluator(["numpy"], {"numpy": NOT_INSTALLED}))
    evaluated = next(i for i, e in enumerate(events) if e["kind"] == "evaluation")
    cut = tmp_path / "cut"
    (cut / "ws").mkdir(parents=True)
    (cut / "ws" / "kernel.cpp").write_bytes((tmp_path / "recorded" / "ws" / "kernel.cpp").read_bytes())
    (cut / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events[: evaluated + 1]))
    resumed_events = read_trace(cut / "trace.jsonl")
    with MessagesServer(Script(TURNS)) as server:
        trace = TraceWriter(cut / "trace.jsonl")
        outcome = Agent(
            run_id="t1",
            resume_events=resumed_events,
            model=anthropic_model(server),
            sinks=[trace],
            host=unsandboxed(cut / "ws"),
            evaluator=LibraryEvaluator(["numpy"], {}),
            oversight=Oversight(),
        ).run()
        trace.close()
        assert server.turn_requests == []
    assert (outcome.status, outcome.reason) == ("failed", "goal_unreachable")
    new = read_trace(cut / "trace.jsonl")[len(resumed_events) :]
    answered = {p["call_id"] for p in payloads(new, "tool_result")}
    assert {p["call_id"] for p in payloads(events[: evaluated + 1], "tool_call")} <= answered
