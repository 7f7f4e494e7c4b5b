"""The trace is durable no later than the spool: the real worker fsyncs each event to the run's trace before its
spool holds it, so after a machine crash the server never holds a seq the trace lost (a resumed run would write
another event under it)."""

import json
import os
import threading

from agentloop.trace import read_trace
from agentloop.worker.client import Worker
from tests.agentloop.fake_server import FakeServer
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, worker_assignment
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use


def seqs_in(data: bytes) -> set[int]:
    return {json.loads(line)["seq"] for line in data.split(b"\n") if line.strip()}


def test_every_event_is_fsynced_to_the_trace_before_the_worker_spools_it(tmp_path, monkeypatch):
    trace_path = tmp_path / "state" / "runs" / "4" / "trace.jsonl"
    durable: dict[str, int] = {}  # file -> how many of its bytes an fsync has made durable
    spooled: list[tuple[int, bool]] = []  # (seq, whether the trace held it durably when the spool's fsync did)
    finished = threading.Event()
    real_fsync = os.fsync

    def observed_fsync(fd):
        real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        durable[path] = os.fstat(fd).st_size
        if path.endswith("/spool.jsonl"):
            with open(path, "rb") as f:
                record = json.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
            if "event" in record:  # an event just became durable in the spool: was it in the trace already?
                with open(trace_path, "rb") as f:
                    in_trace = seqs_in(f.read()[: durable.get(str(trace_path), 0)])
                event = record["event"]
                spooled.append((event["seq"], event["seq"] in in_trace))
                if event["kind"] == "status" and event["payload"]["status"] == "failed":
                    finished.set()

    monkeypatch.setattr(os, "fsync", observed_fsync)
    assignment = worker_assignment(4)
    messages = MessagesServer(
        Script(
            [
                Reply([text("Looking."), tool_use("shell", {"command": "true"})]),
                Reply([tool_use("evaluate", {"scenarios": "quick"})]),
            ]
        )
    )
    with messages, FakeServer("tok", [assignment]) as server:
        worker = Worker(
            server=server.url,
            token="tok",
            gpus=[0],
            state_dir=tmp_path / "state",
            use_bwrap=False,
            model_factory=lambda spec, settings: anthropic_model(messages),
            agent_kwargs={"evaluator": ScriptedEvaluator()},
        )
        thread = threading.Thread(target=worker.serve, daemon=True)
        thread.start()
        try:
            assert finished.wait(60), "the run did not end"
        finally:
            worker.stop.set()
            thread.join(10)
    events = read_trace(trace_path)
    assert events[-1]["payload"]["reason"] == "budget_steps"
    assert [seq for seq, _ in spooled] == [e["seq"] for e in events]
    assert [seq for seq, in_trace in spooled if not in_trace] == []


def test_a_crash_between_a_model_reply_and_its_usage_event_loses_no_cost(tmp_path):
    from agentloop.agent import Agent, Oversight
    from agentloop.config import Budgets
    from agentloop.trace import TraceWriter
    from tests.agentloop.helpers import make_agent, make_config, unsandboxed

    config = make_config(budgets=Budgets(steps=1))
    with MessagesServer(Script([Reply([text("Looking."), tool_use("shell", {"command": "true"})])])) as server:
        agent, trace = make_agent(tmp_path / "lived", anthropic_model(server), config=config, bank=[])
        agent.run()
        trace.close()
    lived = read_trace(tmp_path / "lived" / "trace.jsonl")
    [paid] = [e for e in lived if e["kind"] == "usage"]
    assert paid["usage"]["cost_usd"] > 0 and paid["usage"]["tokens_in"] > 0
    # The worker died right after writing the model's reply: its trace ends there, without the usage event.
    cut = [e["kind"] for e in lived].index("model_message") + 1
    resumed_trace = TraceWriter(tmp_path / "resumed" / "trace.jsonl")
    for event in lived[:cut]:
        resumed_trace.write(event)
    with MessagesServer(Script([])) as server:
        Agent(
            run_id="t1",
            resume_events=lived[:cut],
            model=anthropic_model(server),
            sinks=[resumed_trace],
            host=unsandboxed(tmp_path / "lived" / "ws"),
            evaluator=ScriptedEvaluator(),
            oversight=Oversight(bank=[]),
        ).run()
    resumed_trace.close()
    events = read_trace(tmp_path / "resumed" / "trace.jsonl")
    # The call is counted once, with what it cost, in the run's totals and its budgets.
    counted = [e for e in events if e["kind"] == "usage"]
    assert [e["usage"] for e in counted] == [paid["usage"]]
    assert counted[0]["payload"]["totals"] == paid["payload"]["totals"]
    assert sum(e["usage"]["cost_usd"] for e in events) == paid["usage"]["cost_usd"]
