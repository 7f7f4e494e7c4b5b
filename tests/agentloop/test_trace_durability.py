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
