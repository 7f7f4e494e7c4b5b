"""Binary shell output reaches the dashboard and its pages on every database (issue 34, item 27): on 62245a7 an event
holding a NUL character (`printf 'a\\000b'`) was refused for good on PostgreSQL, whose jsonb cannot hold one.

A real site (daphne, on PostgreSQL when DATABASE_URL names one, as CI runs it, else SQLite), the real worker
(`python -m agentloop worker`) and the real `anthropic` client against the local Messages-API server, whose one
scripted turn is the command. The worker runs unsandboxed: what is tested is the event's way to the pages, not the
sandbox (tests/reliability/test_agent_sandbox.py)."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import pytest

from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use
from tests.reliability.live import wait_until
from tests.reliability.test_agent_sandbox import payloads, queue_run, start_worker


@pytest.fixture
def state(site, tmp_path):
    folder = Path.home() / ".cache" / f"kseek-binary-{tmp_path.name}"
    yield folder / "state"
    site.close()
    shutil.rmtree(folder, ignore_errors=True)


def fetch(port: int, session: str, path: str) -> bytes:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Cookie": f"sessionid={session}"})
    return urllib.request.urlopen(request, timeout=30).read()


def test_a_commands_binary_output_is_stored_shown_on_the_runs_feed_and_exported_as_it_was(site, state):
    port = site.start_server()
    run_id = queue_run(site)
    script = Script([Reply([tool_use("shell", {"command": "printf 'a\\000b'"})]), Reply([text("done")])])
    with MessagesServer(script) as model:
        worker = start_worker(site, port, site.worker_token("gpu-host"), state, "--unsandboxed", model_url=model.url)
        finished = wait_until(
            lambda: site.query("select 1 from runs_run where id = ? and finished_at is not null", (run_id,)),
            180,
            while_alive=worker,
        )
        assert finished, f"the run did not finish:\n{site.worker_log(state)}"
    assert site.query("select seq, error from runs_refusedevent where run_id = ?", (run_id,)) == []
    [result] = payloads(site, run_id, "tool_result")
    assert result["output"] == "[exit code 0]\na\u2400b" and result["escaped_nul"] == {"/output": [[15, 1]]}
    # the run's feed shows the character's symbol in its place
    session = site.session_for("watcher", "viewer")
    feed = json.loads(fetch(port, session, f"/runs/{run_id}/steps/"))
    [line] = [s["summary"] for s in feed["steps"] if s["kind"] == "tool_result"]
    assert "a\u2400b" in line, line
    # the trace export gives the event back as the worker sent it
    exported = [json.loads(line) for line in fetch(port, session, f"/runs/{run_id}/trace.jsonl").splitlines()]
    [sent] = [r for r in exported if r.get("kind") == "tool_result"]
    assert sent["payload"]["output"] == "[exit code 0]\na\x00b" and "escaped_nul" not in sent["payload"]
