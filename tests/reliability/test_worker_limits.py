"""The worker against the real server (daphne) when a run cannot go on as usual: an event larger than any message
the server reads, and a run the worker cannot start."""

import json
import logging
import threading

import pytest

from agentloop.models.anthropic_backend import AnthropicModel
from agentloop.protocol import MESSAGE_MAX_BYTES
from agentloop.worker.client import Worker
from tests.agentloop.helpers import NAIVE, ScriptedEvaluator
from tests.agentloop.messages_api import MessagesServer, Reply, text, tool_use
from tests.reliability.live import kill, wait_until
from tests.reliability.test_worker_restart import run_status, stored_steps, trace_events

pytestmark = pytest.mark.timeout(600)
VIEW = {"command": "view", "path": "kernel.cpp"}


def queue_run(site, model="claude-sonnet-4-6", budget_steps=2):
    return site.django(
        "from runs.models import Task\nfrom runs.services import run_start\n"
        "run = run_start(task=Task.objects.get(name='matmul_cpu'), model=model, starting_kernel=kernel,"
        " goal_baseline='naive', goal_speedup=2.0, review_mode='auto', budget_steps=budget_steps)\n"
        "result = run.pk",
        model=model,
        kernel=NAIVE,
        budget_steps=budget_steps,
    )


def test_an_event_larger_than_the_servers_messages_gets_a_note_and_the_run_still_ends_on_the_server(
    site, tmp_path, caplog
):
    port = site.start_server()
    token = site.worker_token("gpu-large")
    run_id = queue_run(site)
    state_dir = tmp_path / "worker"
    worker = None
    may_go_on = threading.Event()

    def responder(request):
        if not request.get("tools"):
            return Reply([text("QUESTION: none\nREASON: none")])
        turns = sum(1 for r in messages.requests if r["body"].get("tools"))
        if turns == 1:
            # Just over the largest message this server reads, whatever it announces (1 MiB before `limits`).
            return Reply([text("x" * (worker._window.limits.message_bytes + 1)), tool_use("editor", VIEW)])
        assert may_go_on.wait(120)
        return Reply([tool_use("editor", VIEW)])

    caplog.set_level(logging.INFO, logger="agentloop.worker")
    with MessagesServer(responder) as messages:
        worker = Worker(
            server=f"ws://127.0.0.1:{port}",
            token=token,
            gpus=[0],
            state_dir=state_dir,
            model_factory=lambda spec, settings: AnthropicModel(
                spec,
                # a reply over the server's largest message, which the model's own limit would refuse first
                settings={
                    "api_key": "sk-test",
                    "base_url": messages.url,
                    "stream": False,
                    "backoff_base_s": 0.01,
                    "max_reply_bytes": 4 * MESSAGE_MAX_BYTES,
                },
            ),
            agent_kwargs={"evaluator": ScriptedEvaluator()},
        )
        thread = threading.Thread(target=worker.serve, daemon=True)
        thread.start()
        try:
            noted = wait_until(
                lambda: [p for _, kind, p in stored_steps(site, run_id) if kind == "note" and "refused_seq" in p], 120
            )
            assert noted, site.server_log(port) + caplog.text[-3000:]
            may_go_on.set()
            finished = wait_until(lambda: run_status(site, run_id) in ("succeeded", "failed", "stopped"), 120)
            assert finished, site.server_log(port) + caplog.text[-3000:]
            assert wait_until(lambda: len(worker.spool) == 0, 30)
        finally:
            may_go_on.set()
            worker.stop.set()
            thread.join(20)

    events = trace_events(state_dir, run_id)
    big = next(e for e in events if e["kind"] == "model_message")
    steps = stored_steps(site, run_id)
    # Everything but the refused event is stored, the last status included; the connection never dropped.
    assert [s[0] for s in steps] == [e["seq"] for e in events if e["seq"] != big["seq"]]
    assert steps[-1][1] == "status" and steps[-1][2]["reason"] == "budget_steps"
    note = noted[0]
    assert note["refused_seq"] == big["seq"] and note["level"] == "error"
    size = len(
        json.dumps(
            {"type": "event", "v": 1, **{k: big[k] for k in ("run_id", "seq", "kind", "ts", "payload", "usage")}},
            separators=(",", ":"),
        )
    )
    assert f"not sent: its event message of {size} bytes is over the server's message limit" in note["text"]
    assert "connection lost" not in caplog.text


def test_a_run_the_worker_cannot_start_ends_failed_with_the_reason_and_the_worker_takes_the_next_run(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("gpu-nokey")
    no_key = queue_run(site)  # the form's default model; the worker has no API key
    demo = site.queue_demo_run()
    state_dir = tmp_path / "worker"
    worker = site.start_worker(port, token, state_dir)
    try:
        failed = wait_until(lambda: run_status(site, no_key) == "failed", 120, while_alive=worker)
        assert failed, site.worker_log(state_dir)
        started = wait_until(lambda: stored_steps(site, demo), 120, while_alive=worker)
        assert started, site.worker_log(state_dir)
    finally:
        kill(worker)
    ((seq, kind, payload),) = stored_steps(site, no_key)
    assert (seq, kind, payload["status"], payload["reason"]) == (0, "status", "failed", "cannot_start")
    assert "ANTHROPIC_API_KEY" in payload["detail"] and "claude-sonnet-4-6" in payload["detail"]
    assert started[0][2]["reason"] == "started"
