"""A worker given a forked run (docs/protocol.md 2.10) starts it from the fork's conversation and workspace, and
refuses an unusable fork at once with the reason in the run's only event."""

from __future__ import annotations

from agentloop.fork import fork_cut, fork_wire
from agentloop.models.anthropic_backend import AnthropicModel
from agentloop.trace import read_trace
from agentloop.worker.client import Worker
from tests.agentloop.fake_server import FakeServer
from tests.agentloop.helpers import ScriptedEvaluator, worker_assignment
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text
from tests.agentloop.test_fork_agent import CONFIG, EVENTS, QUESTION
from tests.agentloop.test_worker import TOKEN, serving, wait_for


def forked_assignment(run_id, decision):
    fork = fork_wire(fork_cut(EVENTS, QUESTION["seq"], parent=5), 5, decision)
    return worker_assignment(
        run_id,
        starting_kernel=CONFIG["starting_kernel"],
        goal=CONFIG["goal"],
        budgets={"steps": 1},
        fork=fork,
    )


def run_through_worker(tmp_path, assignments):
    with MessagesServer(Script([Reply([text("On it.")])] * 3)) as messages, FakeServer(TOKEN, assignments) as server:

        def model_factory(spec, settings):
            return AnthropicModel(spec, settings={"api_key": "sk", "base_url": messages.url, "backoff_base_s": 0.01})

        worker = Worker(
            server=server.url,
            token=TOKEN,
            gpus=[0],
            state_dir=tmp_path,
            model_factory=model_factory,
            agent_kwargs={"evaluator": ScriptedEvaluator()},
        )
        thread = serving(worker)
        try:
            ids = [a["id"] for a in assignments]
            assert wait_for(lambda: all(server.finished(i) for i in ids), 60)
        finally:
            worker.stop.set()
            thread.join(10)
        return server, messages


def test_a_worker_starts_a_forked_run_from_the_forks_conversation_and_workspace(tmp_path):
    server, messages = run_through_worker(tmp_path, [forked_assignment(11, {"action": "veto", "by": "olga"})])
    events = server.events(11)
    assert events[0]["payload"]["config"]["fork"]["step_seq"] == QUESTION["seq"]
    assert any(e["payload"].get("fork_decision") for e in events if e["kind"] == "note")
    first = messages.requests[0]["body"]
    assert "hardware limit" in str(first["messages"]) and QUESTION["payload"]["text"] not in str(first)
    workspace = tmp_path / "runs" / "11" / "workspace"
    assert (workspace / "kernel.cpp").read_text() == fork_cut(EVENTS, QUESTION["seq"]).files["kernel.cpp"]
    assert read_trace(tmp_path / "runs" / "11" / "trace.jsonl")[0]["payload"]["config"]["fork"]["parent_run"] == 5


def test_a_worker_refuses_an_unusable_fork_before_it_runs_anything(tmp_path):
    bad = forked_assignment(12, None)
    bad["fork"]["files"] = {"../../escape.txt": "x"}
    server, messages = run_through_worker(tmp_path, [bad])
    (only,) = server.events(12)
    assert only["payload"]["reason"] == "cannot_start" and "outside the workspace" in only["payload"]["detail"]
    assert messages.requests == []
    assert not (tmp_path / "escape.txt").exists()


def test_a_worker_given_questions_off_asks_no_question_at_a_decision_point(tmp_path):
    server, messages = run_through_worker(tmp_path, [worker_assignment(13, questions=False, budgets={"steps": 2})])
    events = server.events(13)
    assert any(e["kind"] == "decision_point" for e in events)  # the model ended its turn short of the goal
    assert not any(e["kind"] == "question_proposed" for e in events)
    assert all(r["body"].get("tools") for r in messages.requests)  # no question-selection call
    assert any("no eligible bank question" in str(e["payload"].get("text")) for e in events if e["kind"] == "note")


def test_a_worker_refuses_questions_that_is_not_a_boolean(tmp_path):
    server, messages = run_through_worker(tmp_path, [worker_assignment(14, questions="no")])
    (only,) = server.events(14)
    assert (
        only["payload"]["reason"] == "cannot_start" and "`questions` must be true or false" in only["payload"]["detail"]
    )
