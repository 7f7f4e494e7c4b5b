"""The production shape (docs/deployment.md): several daphne processes behind one address, PostgreSQL, a Redis
channel layer. A worker connected to one process and a browser to another see the same events.

Runs where DATABASE_URL names PostgreSQL and REDIS_URL is set (CI's second pass); skipped elsewhere, because
the in-memory channel layer does not cross processes by design.
"""

import json
import os

import pytest
from websockets.sync.client import connect

from tests.reliability.live import postgres_url
from tests.reliability.wire import WireWorker, note_event

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not (postgres_url() and os.environ.get("REDIS_URL")),
        reason="needs DATABASE_URL=postgres://... and REDIS_URL (several processes share events there)",
    ),
]


def test_a_browser_on_one_process_sees_the_events_a_worker_sends_to_another(site):
    first, second = site.start_server(), site.start_server()
    token = site.worker_token("gpu-two")
    site.queue_demo_run()
    session = site.session_for("vera", "viewer")
    headers = {"Cookie": f"sessionid={session}", "Origin": f"http://127.0.0.1:{second}"}
    worker = WireWorker(first, token)
    run_id = worker.claim()
    with (
        connect(f"ws://127.0.0.1:{second}/ws/runs/{run_id}/", additional_headers=headers) as browser,
        connect(f"ws://127.0.0.1:{second}/ws/runs/", additional_headers=headers) as all_runs,
    ):
        for seq in range(20):
            worker.send(note_event(run_id, seq))
        assert all(r["type"] == "ack" for r in worker.replies_for(20))
        announced = set()
        while len(announced) < 20:
            message = json.loads(browser.recv(timeout=10))
            assert message["type"] == "step.stored" and message["run_id"] == run_id
            announced.update(range(message["seq"], message.get("last_seq", message["seq"]) + 1))
        assert announced == set(range(20))

        # A run-level change made through the first process (a status event) reaches the all-runs feed too.
        worker.send(
            {**note_event(run_id, 20), "kind": "status", "payload": {"status": "stopped", "reason": "stopped_by_human"}}
        )
        assert worker.replies_for(1)[0]["type"] == "ack"
        while True:
            message = json.loads(all_runs.recv(timeout=10))
            if message["type"] == "run.changed" and message["run_id"] == run_id and message["status"] == "stopped":
                break
    worker.close()
