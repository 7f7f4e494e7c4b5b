"""A forked run in the agent: its first model call, through the real `anthropic` client against the local
Messages-API server, sees the parent's conversation up to the fork's step and its own decision at the question;
a fork of a replay goes on with the replay model; a fork resumes from its own trace."""

from __future__ import annotations

import json
from pathlib import Path

from agentloop.agent import Agent, Oversight
from agentloop.config import Budgets
from agentloop.fork import fork_cut, fork_problems, fork_wire
from agentloop.models.replay import ReplayModel
from agentloop.state import api_messages
from agentloop.trace import TraceWriter, read_trace
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_config, payloads, unsandboxed
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
EVENTS = read_trace(DEMO)
QUESTION = next(e for e in EVENTS if e["kind"] == "question_proposed")
CONFIG = EVENTS[0]["payload"]["config"]


def fork_of_demo(seq, decision):
    wire = fork_wire(fork_cut(EVENTS, seq, parent=41), 41, decision)
    assert fork_problems(wire) == []
    return wire


def fork_agent(tmp_path, model, fork, steps=1, evaluator=None):
    trace = TraceWriter(tmp_path / "trace.jsonl")
    config = make_config(
        goal_speedup=CONFIG["goal"]["speedup"], kernel=CONFIG["starting_kernel"], budgets=Budgets(steps=steps)
    )
    agent = Agent(
        run_id=42,
        config=config,
        model=model,
        sinks=[trace],
        host=unsandboxed(tmp_path / "ws"),
        evaluator=evaluator or ScriptedEvaluator(),
        oversight=Oversight(bank=[]),
        fork=fork,
    )
    return agent, trace


def test_a_fork_at_a_question_with_a_veto_first_sends_the_conversation_up_to_it_without_the_question(tmp_path):
    fork = fork_of_demo(QUESTION["seq"], {"action": "veto", "by": "olga"})
    with MessagesServer(Script([Reply([text("Trying again.")])])) as server:
        agent, trace = fork_agent(tmp_path, anthropic_model(server), fork)
        agent.run()
        trace.close()
    assert server.refusals == []
    first = server.requests[0]["body"]
    assert first.get("tools"), "the fork's first call is a turn of its conversation"
    sent = first["messages"]
    assert sent[:-1] == api_messages(fork["conversation"])  # the parent's conversation up to the question
    assert sent[0]["content"][0]["text"] == CONFIG["task_prompt"]
    assert "hardware limit" in json.dumps(sent[-2])  # the parent's last turn, which claimed a limit
    assert QUESTION["payload"]["text"] not in json.dumps(first)  # vetoed: not asked
    assert "not" in sent[-1]["content"][-1]["text"]  # the loop's note that the task is not finished
    events = read_trace(tmp_path / "trace.jsonl")
    assert events[0]["payload"]["config"]["fork"]["parent_run"] == 41
    vetoed = [n for n in payloads(events, "note") if n.get("fork_decision")]
    assert len(vetoed) == 1 and "olga vetoed" in vetoed[0]["text"]
    assert payloads(events, "question_proposed") == [] and payloads(events, "decision_point") == []


def test_a_fork_with_its_own_question_asks_it_first(tmp_path):
    fork = fork_of_demo(QUESTION["seq"], {"action": "write", "text": "Did you try blocking?", "by": "olga"})
    with MessagesServer(Script([Reply([text("Blocking next.")])])) as server:
        agent, trace = fork_agent(tmp_path, anthropic_model(server), fork)
        agent.run()
        trace.close()
    sent = server.requests[0]["body"]["messages"]
    assert sent[-1]["content"][-1]["text"] == "Did you try blocking?"
    events = read_trace(tmp_path / "trace.jsonl")
    (proposed,) = payloads(events, "question_proposed")
    assert proposed["by"] == "human" and proposed["decision_point"] == QUESTION["payload"]["decision_point"]
    # Audit 15: the person's own question carries no bank category (it was tagged with the parent question's).
    assert QUESTION["payload"]["category"] and proposed["category"] is None and not proposed["bank_key"]
    (decided,) = payloads(events, "question_decided")
    assert decided["action"] == "approve" and decided["reviewer"] == "olga"


def test_a_fork_of_a_replay_goes_on_with_the_replay_model_from_the_parents_place(tmp_path):
    text_ = QUESTION["payload"]["text"]
    decision = {"action": "bank", "bank_key": QUESTION["payload"]["bank_key"], "text": text_, "by": "olga"}
    fork = fork_of_demo(QUESTION["seq"], decision)
    agent, trace = fork_agent(tmp_path, ReplayModel(EVENTS), fork, steps=10)
    outcome = agent.run()
    trace.close()
    assert outcome.status == "succeeded", outcome
    events = read_trace(tmp_path / "trace.jsonl")
    turns = [p for p in payloads(events, "model_message") if p["purpose"] == "turn"]
    parent_turns = [p for p in payloads(EVENTS, "model_message") if p["purpose"] == "turn"]
    assert [t["content"] for t in turns] == [t["content"] for t in parent_turns[3:]]  # the recording's next turns


def test_a_fork_cut_off_after_its_start_resumes_and_decides_its_question_once(tmp_path):
    fork = fork_of_demo(QUESTION["seq"], {"action": "write", "text": "Why?", "by": "olga"})
    with MessagesServer(Script([Reply([text("x")])])) as server:
        agent, trace = fork_agent(tmp_path, anthropic_model(server), fork)
        agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    started = [e for e in events if e["kind"] == "status"][:1]
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in started))
    with MessagesServer(Script([Reply([text("y")])])) as server:
        trace = TraceWriter(tmp_path / "trace.jsonl")
        resumed = Agent(
            run_id=42,
            resume_events=started,
            model=anthropic_model(server),
            sinks=[trace],
            host=unsandboxed(tmp_path / "ws"),
            evaluator=ScriptedEvaluator(),
            oversight=Oversight(bank=[]),
        )
        resumed.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    assert len(payloads(events, "question_decided")) == 1
    assert payloads(events, "decision_point") == []
    assert server.requests[0]["body"]["messages"][-1]["content"][-1]["text"] == "Why?"


def test_a_fork_of_a_fork_starts_from_the_first_forks_workspace_and_place_in_the_recording(tmp_path):
    text_ = QUESTION["payload"]["text"]
    decision = {"action": "bank", "bank_key": QUESTION["payload"]["bank_key"], "text": text_, "by": "olga"}
    agent, trace = fork_agent(tmp_path, ReplayModel(EVENTS), fork_of_demo(QUESTION["seq"], decision), steps=10)
    agent.run()
    trace.close()
    first_fork = read_trace(tmp_path / "trace.jsonl")
    inherited = fork_cut(EVENTS, QUESTION["seq"]).files
    assert fork_cut(first_fork, 1).files == inherited  # before the first fork wrote anything
    evaluation = next(e for e in first_fork if e["kind"] == "evaluation")
    cut = fork_cut(first_fork, evaluation["seq"], parent=42)
    assert cut.files["kernel.cpp"] == evaluation["payload"]["result"]["kernel_source"] and cut.warnings == []
    turns_before = sum(
        e["kind"] == "model_message" and e["payload"]["purpose"] == "turn" for e in first_fork[: evaluation["seq"]]
    )
    assert cut.played == {"turn": 3 + turns_before, "select_question": 0}
    # A second fork, inside the first fork's first turn, plays the recording's turns after the four made by then.
    turn = next(e for e in first_fork if e["kind"] == "model_message" and e["payload"]["purpose"] == "turn")
    cut = fork_cut(first_fork, turn["seq"], parent=42)
    assert cut.played["turn"] == 4 and cut.files == inherited
    second = tmp_path / "second"
    second.mkdir()
    agent, trace = fork_agent(second, ReplayModel(EVENTS), fork_wire(cut, 42, None), steps=10)
    outcome = agent.run()
    trace.close()
    assert outcome.status == "succeeded", outcome
    turns = [p for p in payloads(read_trace(second / "trace.jsonl"), "model_message") if p["purpose"] == "turn"]
    assert [t["content"] for t in turns] == [p["content"] for p in payloads(EVENTS, "model_message")[-1:]]


def test_a_fork_continues_with_an_openai_compatible_model_too(tmp_path):
    from agentloop.models.openai_backend import OpenAIModel
    from tests.agentloop.chat_api import ChatServer, answer

    fork = fork_of_demo(QUESTION["seq"], {"action": "veto", "by": "olga"})
    with ChatServer([answer("Trying again.")]) as server:
        model = OpenAIModel("qwen3-coder", settings={"base_url": server.url, "backoff_base_s": 0.01})
        agent, trace = fork_agent(tmp_path, model, fork)
        agent.run()
        trace.close()
    first = server.requests[0]["body"]
    assert first.get("tools") and "hardware limit" in json.dumps(first["messages"])
    assert QUESTION["payload"]["text"] not in json.dumps(first)
    calls = [c["id"] for m in first["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in first["messages"] if m["role"] == "tool"]
    assert calls and calls == answered  # every tool call of the parent's conversation answered, in order


def test_a_fork_cut_off_between_its_question_and_its_decision_decides_it_without_proposing_it_again(tmp_path):
    fork = fork_of_demo(QUESTION["seq"], {"action": "write", "text": "Why?", "by": "olga"})
    with MessagesServer(Script([Reply([text("x")])])) as server:
        agent, trace = fork_agent(tmp_path, anthropic_model(server), fork)
        agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    cut = [e for e in events[: next(i for i, e in enumerate(events) if e["kind"] == "question_decided")]]
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in cut))
    with MessagesServer(Script([Reply([text("y")])])) as server:
        trace = TraceWriter(tmp_path / "trace.jsonl")
        Agent(
            run_id=42,
            resume_events=cut,
            model=anthropic_model(server),
            sinks=[trace],
            host=unsandboxed(tmp_path / "ws"),
            evaluator=ScriptedEvaluator(),
            oversight=Oversight(bank=[]),
        ).run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    assert len(payloads(events, "question_proposed")) == 1 and len(payloads(events, "question_decided")) == 1
    assert server.requests[0]["body"]["messages"][-1]["content"][-1]["text"] == "Why?"
