"""The worker (agentloop/worker/client.py) when something goes wrong: an event no server message may carry, an
event the server refuses for good, a run that cannot start, a server message it cannot act on, and a long life.

Runs here are real agent runs in the real worker: the real `anthropic` client against the local Messages-API
server (tests/agentloop/messages_api.py), the stand-in dashboard of fake_server.py, scripted harness verdicts.
"""

import logging
import threading

from agentloop.errors import ConfigError
from agentloop.models.anthropic_backend import AnthropicModel
from agentloop.trace import read_trace
from agentloop.worker.client import Worker
from tests.agentloop.fake_server import FakeServer
from tests.agentloop.helpers import ScriptedEvaluator
from tests.agentloop.helpers import worker_assignment as assignment
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use
from tests.agentloop.test_worker import TOKEN, note_event, serving, wait_for

VIEW = {"command": "view", "path": "kernel.cpp"}


class GatedScript(Script):
    """Turns after the first wait until `gate` is set: the test decides when the run may go on."""

    def __init__(self, turns):
        super().__init__(turns)
        self.total = len(turns)
        self.gate = threading.Event()

    def __call__(self, request):
        if request.get("tools") and len(self.turns) < self.total:
            assert self.gate.wait(60), "the test never opened the gate"
        return super().__call__(request)


def scripted_worker(server, messages, state_dir, **kwargs):
    def model_factory(spec, settings):
        return AnthropicModel(
            spec, settings={"api_key": "sk-test", "base_url": messages.url, "stream": True, "backoff_base_s": 0.01}
        )

    return Worker(
        server=server.url,
        token=TOKEN,
        gpus=[0],
        state_dir=state_dir,
        model_factory=model_factory,
        agent_kwargs={"evaluator": ScriptedEvaluator()},
        **kwargs,
    )


def trace_of(state_dir, run_id):
    return read_trace(state_dir / "runs" / str(run_id) / "trace.jsonl")


def refusal_notes(events):
    return [e for e in events if e["kind"] == "note" and "refused_seq" in e["payload"]]


# ------------------------------------------------------------------------------------------ too large, refused
def test_an_event_over_the_servers_message_limit_is_not_sent_but_reported_in_a_note_and_the_rest_arrives(tmp_path):
    limits = {"message_bytes": 32 * 1024, "event_bytes": 16 * 1024}
    script = GatedScript([Reply([text("x" * 60_000), tool_use("editor", VIEW)]), Reply([tool_use("editor", VIEW)])])
    with (
        MessagesServer(script) as messages,
        FakeServer(TOKEN, [assignment(31)], accepts_events=True, limits=limits) as server,
    ):
        worker = scripted_worker(server, messages, tmp_path / "state")
        thread = serving(worker)
        try:
            # The run is still running (its second turn waits): the note comes through its own emitter.
            assert wait_for(lambda: refusal_notes(server.events(31)), 30)
            script.gate.set()
            assert wait_for(lambda: server.finished(31) and len(worker.spool) == 0, 60)
        finally:
            worker.stop.set()
            thread.join(10)
    local = trace_of(tmp_path / "state", 31)
    big = next(e for e in local if e["kind"] == "model_message")
    stored = server.events(31)
    # Nothing over the limit went out, so the connection never dropped; every other event of the run arrived.
    assert server.oversize_messages == 0 and server.largest_message <= limits["message_bytes"]
    assert len(server.hellos) == 1
    assert [e["seq"] for e in stored] == [e["seq"] for e in local if e["seq"] != big["seq"]]
    (note,) = refusal_notes(stored)
    assert note["payload"]["refused_seq"] == big["seq"] and note["payload"]["level"] == "error"
    assert note["payload"]["text"].startswith(f"the server refused event #{big['seq']} (model_message, ")
    assert "over the server's message limit of 32768 bytes" in note["payload"]["text"]
    assert stored[-1]["kind"] == "status" and stored[-1]["payload"]["reason"] == "budget_steps"


def test_a_final_nack_is_reported_in_a_note_of_the_running_run_and_a_refused_report_is_not_reported_again(
    tmp_path, caplog
):
    def refuse(event):
        if event["kind"] == "tool_call" and event["payload"]["call_id"] == "toolu_first":
            return "the test refuses this tool call"
        if event["kind"] == "note" and "refused_seq" in event["payload"]:
            return "the test refuses the report too"
        return None

    script = GatedScript([Reply([tool_use("editor", VIEW, "toolu_first")]), Reply([tool_use("editor", VIEW)])])
    caplog.set_level(logging.INFO, logger="agentloop.worker")
    with (
        MessagesServer(script) as messages,
        FakeServer(TOKEN, [assignment(32)], accepts_events=True, refuse=refuse) as server,
    ):
        worker = scripted_worker(server, messages, tmp_path / "state")
        thread = serving(worker)
        try:
            assert wait_for(lambda: len(server.refusals) == 2, 30)  # the tool call, then the note reporting it
            script.gate.set()
            assert wait_for(lambda: server.finished(32) and len(worker.spool) == 0, 60)
        finally:
            worker.stop.set()
            thread.join(10)
    local = trace_of(tmp_path / "state", 32)
    call = next(e for e in local if e["kind"] == "tool_call")
    (note,) = refusal_notes(local)  # one report, none about the refused report
    assert note["payload"]["refused_seq"] == call["seq"] and note["payload"]["level"] == "error"
    assert note["payload"]["text"].startswith(f"the server refused event #{call['seq']} (tool_call, ")
    assert note["payload"]["text"].endswith(" bytes): the test refuses this tool call")
    assert server.refusals == [(32, call["seq"]), (32, note["seq"])]
    assert local[-1]["kind"] == "status" and local[-1]["payload"]["status"] == "failed"
    assert f"event #{note['seq']} reported a refusal itself; not reported again" in caplog.text
    assert worker._last_sent == {}


def test_a_refusal_after_the_run_has_finished_is_logged_only_and_its_final_status_stays_last(tmp_path, caplog):
    def refuse(event):
        finished = event["kind"] == "status" and event["payload"]["status"] == "failed"
        return "the test refuses the final status" if finished else None

    caplog.set_level(logging.INFO, logger="agentloop.worker")
    with (
        MessagesServer(Script([Reply([tool_use("editor", VIEW)]) for _ in range(2)])) as messages,
        FakeServer(TOKEN, [assignment(33)], accepts_events=True, refuse=refuse) as server,
    ):
        worker = scripted_worker(server, messages, tmp_path / "state")
        thread = serving(worker)
        try:
            assert wait_for(lambda: server.refusals and len(worker.spool) == 0, 60)
            assert wait_for(lambda: "is logged only" in caplog.text, 10)
        finally:
            worker.stop.set()
            thread.join(10)
    local = trace_of(tmp_path / "state", 33)
    assert local[-1]["kind"] == "status" and local[-1]["payload"]["status"] == "failed"
    assert refusal_notes(local) == [] and server.refusals == [(33, local[-1]["seq"])]
    assert (
        f"run 33 is not running in this worker: the refusal of event #{local[-1]['seq']} is logged only" in caplog.text
    )


# ------------------------------------------------------------------------------------------ cannot start
def test_runs_that_cannot_start_end_failed_with_the_reason_and_the_worker_takes_the_next_run(tmp_path, monkeypatch):
    from agentloop.agent import Agent

    no_task = {k: v for k, v in assignment(41).items() if k != "task"}
    runs = [no_task, assignment(42, model="nobody-knows-me"), assignment(43, model="explodes"), assignment(44)]
    real_finish = Agent._finish

    def finish(agent, status, reason, message):
        if agent.run_id == 43:
            raise OSError("the disk is full")  # out of agent.run(), past its own handler
        return real_finish(agent, status, reason, message)

    monkeypatch.setattr(Agent, "_finish", finish)
    with (
        MessagesServer(Script([Reply([tool_use("editor", VIEW)]) for _ in range(4)])) as messages,
        FakeServer(TOKEN, runs, accepts_events=True) as server,
    ):
        worker = scripted_worker(server, messages, tmp_path / "state")
        make = worker.model_factory

        def model_factory(spec, settings):
            if spec == "nobody-knows-me":
                raise ConfigError("no model named nobody-knows-me: set ANTHROPIC_API_KEY or pick another model")
            return make("claude-sonnet-4-6", settings)

        worker.model_factory = model_factory
        thread = serving(worker)
        try:
            assert wait_for(lambda: all(server.finished(r) for r in (41, 42, 43, 44)) and len(worker.spool) == 0, 90)
        finally:
            worker.stop.set()
            thread.join(10)

    (unusable,) = server.events(41)
    assert (unusable["seq"], unusable["kind"]) == (0, "status")
    assert unusable["payload"] == {
        "status": "failed",
        "reason": "cannot_start",
        "detail": "unusable assignment: no 'task'",
    }
    (no_model,) = server.events(42)
    assert no_model["seq"] == 0 and no_model["payload"]["reason"] == "cannot_start"
    assert no_model["payload"]["detail"] == (
        "the worker cannot start this run: ConfigError: no model named "
        "nobody-knows-me: set ANTHROPIC_API_KEY or pick another model "
        "(model nobody-knows-me)"
    )
    assert trace_of(tmp_path / "state", 42) == [dict(no_model, v=1)]
    crashed = server.events(43)
    assert [e["payload"].get("reason") for e in crashed if e["kind"] == "status"] == ["started", "internal_error"]
    assert (
        crashed[-1]["payload"]["detail"] == "the agent stopped with an error: OSError: the disk is full "
        "(model explodes)"
    )
    assert server.events(44)[-1]["payload"]["reason"] == "budget_steps"  # and the next run ran as usual


# ------------------------------------------------------------------------------------------ malformed messages
MALFORMED = [
    '{"type":"ack","v":1,"run_id":7,"seq":null}',
    '{"type":"acks","v":1,"acks":[[7,null],"junk",[7],null,[true,1]]}',
    '{"type":"acks","v":1,"acks":"all of them"}',
    '{"type":"nack","v":1,"run_id":7,"error":"no seq","retry":false}',
    '{"type":"nack","v":1,"run_id":7,"seq":0,"error":"no retry field"}',
    '{"type":"assign","v":1,"run":{"task":"matmul_cpu"}}',
    '{"type":"assign","v":1,"run":"run 5"}',
    '{"type":"directive","v":1,"id":"d-1","action":"stop"}',
    '{"type":"no_work","v":1,"retry_after_s":"soon"}',
    '{"type":"welcome","v":1,"worker":"x","limits":{"message_bytes":"big"}}',
    '{"type":"mystery","v":1}',
    '{"type":"ack","v":2,"run_id":7,"seq":0}',
    "42",
    '"a string"',
    '[{"type":"ack","v":1,"run_id":7,"seq":0}]',
    '{"type":["ack"],"v":1}',  # a type that is no string is an unknown one, not a failure of the worker
    # Python holds True and 1.0 equal to 1; neither is the JSON integer 1 (docs/protocol.md 2.1).
    '{"type":"ack","v":true,"run_id":7,"seq":0}',
    '{"type":"ack","v":1.0,"run_id":7,"seq":0}',
    "not json at all",
    b'{"type":"ack","v":1,"run_id":7,"seq":0}',
]


def test_malformed_server_messages_are_logged_and_answered_with_error_and_the_worker_acts_on_the_valid_ones(
    tmp_path, caplog
):
    state_dir = tmp_path / "state"
    from agentloop.worker.spool import Spool

    spool = Spool(state_dir / "spool.jsonl")
    spool.add(note_event(0, run_id=7))
    spool.close()
    caplog.set_level(logging.INFO, logger="agentloop.worker")
    with (
        MessagesServer(Script([Reply([tool_use("editor", VIEW)]) for _ in range(2)])) as messages,
        FakeServer(TOKEN, [assignment(51)], accepts_events=True, after_welcome=MALFORMED) as server,
    ):
        worker = scripted_worker(server, messages, state_dir)
        thread = serving(worker)
        try:
            # Still serving: the spooled event is acknowledged, the valid assignment runs to its end.
            assert wait_for(lambda: server.finished(51) and len(worker.spool) == 0, 90)
            assert wait_for(lambda: len(server.errors) >= len(MALFORMED), 10)
            assert thread.is_alive()
        finally:
            worker.stop.set()
            thread.join(10)
    assert len(server.hellos) == 1  # never reconnected either
    assert len(server.errors) == len(MALFORMED), server.errors
    assert (7, 0) in server.steps and server.events(51)[-1]["payload"]["reason"] == "budget_steps"
    assert "a binary frame" in server.errors[-1] and "not a JSON object" in server.errors[12]
    assert any("sending within 1048576 bytes a message" in e for e in server.errors)
    assert "a server message could not be handled" not in caplog.text  # each was understood as malformed


# ------------------------------------------------------------------------------------------ a long life
def test_a_long_lived_worker_keeps_its_send_times_and_spool_file_proportional_to_what_is_pending(tmp_path):
    from agentloop.worker.spool import COMPACT_SLACK, Spool

    count = 3 * COMPACT_SLACK
    with FakeServer(TOKEN, [], accepts_events=True) as server:
        worker = Worker(server=server.url, token=TOKEN, gpus=[], state_dir=tmp_path)
        thread = serving(worker)
        try:
            assert wait_for(lambda: worker._window is not None, 30)
            for seq in range(count):
                worker._event_sink(note_event(seq, run_id=9))
            assert wait_for(lambda: len(server.steps) == count and len(worker.spool) == 0, 120)
        finally:
            worker.stop.set()
            thread.join(10)
    assert worker._last_sent == {}
    lines = (tmp_path / "spool.jsonl").read_text().splitlines()
    assert len(lines) <= COMPACT_SLACK + 2, len(lines)  # not the 2 x 3,000 lines of every event and its ack
    again = Spool(tmp_path / "spool.jsonl")  # and what it says is still whole
    assert again.pending() == [] and again.marks == {"9": count - 1}


def test_a_compacted_spool_keeps_its_pending_events_and_marks_across_a_restart(tmp_path):
    from agentloop.worker.spool import COMPACT_SLACK, Spool

    spool = Spool(tmp_path / "spool.jsonl")
    for seq in range(2 * COMPACT_SLACK):
        spool.add(note_event(seq))
    spool.ack_many([(7, seq) for seq in range(2 * COMPACT_SLACK) if seq % 100])  # all but every 100th
    lines = (tmp_path / "spool.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 2 * COMPACT_SLACK // 100  # compacted: the mark and what is pending
    spool.add(note_event(2 * COMPACT_SLACK))  # appends go to the new file
    spool.close()
    again = Spool(tmp_path / "spool.jsonl")
    assert [e["seq"] for e in again.pending()] == [*range(0, 2 * COMPACT_SLACK, 100), 2 * COMPACT_SLACK]
    assert again.marks == {"7": 2 * COMPACT_SLACK}
