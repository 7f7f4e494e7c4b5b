"""The evaluation budget: an `evaluate` call over it is answered, not cut off. The trace of a run that ends on it
is a conversation the Messages API accepts (every tool call has its result), and a run cut off anywhere in it
resumes: after the refusal it ends on the same budget without another model turn."""

import json

from agentloop.config import Budgets
from agentloop.state import RunState, api_messages
from tests.agentloop.helpers import anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, api_refusal, text, tool_use
from tests.agentloop.test_loop import edit_to, evaluate
from tests.agentloop.test_resume_every_prefix import assert_valid_messages_api_input, first_turn_only, resume

TURNS = [
    Reply([edit_to("v2"), evaluate()]),  # the one evaluation the budget allows
    Reply([evaluate(), tool_use("shell", {"command": "echo after"})]),  # one too many, then another tool
    Reply([text("never asked: the budget is spent")]),
]


def record(tmp_path):
    """The run, and the workspace's files as they were when each event was written."""
    workspace = tmp_path / "ws"
    snapshots = []

    def snapshot(event):
        snapshots.append({p.name: p.read_bytes() for p in workspace.iterdir() if p.is_file()})

    with MessagesServer(Script(TURNS)) as server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server),
            config=make_config(budgets=Budgets(steps=10, evaluations=1)),
            extra_sinks=[snapshot],
        )
        outcome = agent.run()
        trace.close()
        turns = len(server.turn_requests)
    return outcome, (tmp_path / "trace.jsonl").read_text().splitlines(keepends=True), snapshots, turns


def test_a_run_over_its_evaluation_budget_answers_every_tool_call_and_ends_on_that_budget(tmp_path):
    outcome, lines, _, turns = record(tmp_path)
    events = [json.loads(line) for line in lines]
    assert (outcome.status, outcome.reason) == ("failed", "budget_evaluations")
    assert turns == 2  # no turn after the refusal
    assert len(payloads(events, "evaluation")) == 1
    # Every tool call has its result, and every tool use of every turn is answered.
    calls = [p["call_id"] for p in payloads(events, "tool_call")]
    results = [p["call_id"] for p in payloads(events, "tool_result")]
    used = [b["id"] for p in payloads(events, "model_message") for b in p["content"] if b["type"] == "tool_use"]
    assert calls == results == used
    refused = payloads(events, "tool_result")[2]
    assert refused["name"] == "evaluate" and refused["is_error"] and refused["budget_spent"] == "evaluations"
    assert "evaluation budget" in refused["output"]
    # The conversation the trace holds is one the Messages API accepts.
    state = RunState()
    for event in events:
        state.apply(event)
    assert api_refusal({"messages": api_messages(state.messages)}) is None
    assert payloads(events, "status")[-1]["detail"] == "evaluations budget exhausted: used 1 of 1"


def test_a_run_cut_off_anywhere_around_its_spent_evaluation_budget_resumes(tmp_path):
    _, lines, snapshots, _ = record(tmp_path / "recorded")
    kinds = [json.loads(line)["kind"] for line in lines]
    refusal = next(
        i for i, line in enumerate(lines) if json.loads(line)["payload"].get("budget_spent") == "evaluations"
    )
    with MessagesServer(first_turn_only) as server:
        for k in range(1, len(lines)):  # the last event is the finished status: nothing to resume after it
            where = f"resumed after event {k - 1} ({kinds[k - 1]})"
            events, outcome, new, turns = resume(tmp_path / f"cut{k}", server, lines[:k], "", snapshots[k - 1])
            assert outcome.reason != "internal_error", where
            if k > refusal:  # the refusal is in the trace: the run ends on its budget, the model is not asked again
                assert (outcome.status, outcome.reason) == ("failed", "budget_evaluations"), (where, outcome)
                assert turns == [], where
            else:
                assert_valid_messages_api_input(turns[0]["messages"])
            final = events + new
            answered = {p["call_id"] for p in payloads(final, "tool_result")}
            assert {p["call_id"] for p in payloads(final, "tool_call")} <= answered, where
