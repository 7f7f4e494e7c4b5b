"""A hostile agent command, run by the real worker for a real dashboard, cannot read the worker's secrets; without a
working sandbox nothing runs unless the operator said so, and a run made that way says so (issue 15, finding 1).

The site is real (daphne, its database), the worker is `python -m agentloop worker` started as an operator starts
it (the token and the API key in its environment), and the model is the real `anthropic` client against the local
Messages-API server, whose one scripted turn is the hostile command: it looks for the key and the token in every
/proc/*/environ and /proc/*/cmdline it can read and in the worker's state folder. "No working sandbox" is made
the way a host without user namespaces has it: a `bwrap` on PATH that cannot start (docs/protocol.md, section 3).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from agentloop.sandbox import EXIT_NO_SANDBOX
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use
from tests.reliability.host_service import BANNER, HostService
from tests.reliability.live import ROOT, wait_until

API_KEY = "sk-ant-hostile-test-0123456789"
FOUND = "FOUND "


def hostile_command(state_dir: Path) -> str:
    return (
        'n=0; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" >/dev/null 2>&1 && n=$((n+1)); '
        'done; echo "readable: $n"; '
        "cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' "
        "| grep -a -o -E '(ANTHROPIC_API_KEY|KSEEK_WORKER_TOKEN)=[^ ]*|sk-ant-[A-Za-z0-9_-]+|kst_[A-Za-z0-9_-]+' "
        f"| sort -u | sed 's/^/{FOUND}/'; "
        f"grep -r -a -h -o -E 'sk-ant-[A-Za-z0-9_-]+|kst_[A-Za-z0-9_-]+' {state_dir} 2>/dev/null "
        f"| sort -u | sed 's/^/{FOUND}/'; "
        f"ls -A {state_dir} 2>/dev/null | sed 's/^/STATE /'"
    )


def failing_bwrap(folder: Path) -> str:
    """A PATH whose `bwrap` is installed but cannot make namespaces (as where user namespaces are off)."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return f"{folder}:{os.environ['PATH']}"


def start_worker(
    site,
    port: int,
    token: str,
    state_dir: Path,
    *flags,
    model_url: str = "http://127.0.0.1:9",
    path: str | None = None,
    extra_env: dict | None = None,
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        KSEEK_WORKER_TOKEN=token,
        ANTHROPIC_API_KEY=API_KEY,
        ANTHROPIC_BASE_URL=model_url,
        PATH=path or env["PATH"],
        **(extra_env or {}),
    )
    state_dir.mkdir(parents=True, exist_ok=True)
    log = open(state_dir.parent / f"{state_dir.name}.log", "a")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentloop",
            "worker",
            "--server",
            f"ws://127.0.0.1:{port}",
            "--gpus",
            "0",
            "--state-dir",
            str(state_dir),
            *flags,
        ],
        cwd=state_dir.parent,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    site.workers.append(process)
    return process


def queue_run(site) -> int:
    return site.django(
        "from runs.models import Task\nfrom runs.services import run_start\n"
        "task = Task.objects.get(name='matmul_cpu')\n"
        "run = run_start(task=task, model='claude-sonnet-4-6', starting_kernel=task.starting_kernel,"
        " goal_baseline=task.goal_baseline, goal_speedup=task.goal_speedup, review_mode='auto', budget_steps=1)\n"
        "result = run.pk"
    )


def payloads(site, run_id: int, kind: str) -> list[dict]:
    rows = site.query("select payload from runs_step where run_id = ? and kind = ? order by seq", (run_id, kind))
    return [p if isinstance(p, dict) else json.loads(p) for (p,) in rows]


def run_page(site, port: int, run_id: int) -> str:
    session = site.session_for("watcher", "viewer")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/runs/{run_id}/", headers={"Cookie": f"sessionid={session}"}
    )
    return urllib.request.urlopen(request, timeout=30).read().decode()


@pytest.fixture
def state(site):
    """The worker's state folder, outside /tmp: bubblewrap gives the shell a private /tmp, which would hide a
    folder there whatever the sandbox did. Removed after the site's workers are gone. A fresh name each time (not
    the test's): another checkout's suite on this machine, or a killed run's leftover socket, never shares it."""
    cache = Path.home() / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="kseek-sandbox-", dir=cache))
    yield folder / "state"
    site.close()
    shutil.rmtree(folder, ignore_errors=True)


def hostile_run(site, state: Path, *flags, extra_env: dict | None = None) -> tuple[dict, int, str, int]:
    """The hostile command as the one turn of a run, through the real worker: (its tool_result, the run's id,
    the worker's token, the server's port). The command also connects to a service of the host, on 127.0.0.1
    and on a unix socket, as it would to a database that trusts local connections."""
    port = site.start_server()
    token = site.worker_token("gpu-host")
    run_id = queue_run(site)
    state.parent.mkdir(parents=True, exist_ok=True)
    service = HostService(state.parent)
    command = f"{hostile_command(state)}; {service.probe()}"
    script = Script([Reply([tool_use("shell", {"command": command})]), Reply([text("done")])])
    with MessagesServer(script) as model, closing(service):
        worker = start_worker(site, port, token, state, *flags, model_url=model.url, extra_env=extra_env)
        finished = wait_until(
            lambda: site.query("select 1 from runs_run where id = ? and finished_at is not null", (run_id,)),
            180,
            while_alive=worker,
        )
        assert finished, f"the run did not finish:\n{site.worker_log(state)}"
    results = payloads(site, run_id, "tool_result")
    assert results, f"no tool result:\n{site.worker_log(state)}"
    return results[0], run_id, token, port


@pytest.mark.sandbox
def test_a_hostile_command_finds_neither_the_api_key_nor_the_worker_token_in_any_process_or_the_worker_state(
    site, state
):
    result, run_id, token, port = hostile_run(site, state)
    output = result["output"]
    # Nor a service of the host: its own network namespace, the host's unix sockets covered.
    assert "tcp not reached" in output and "unix not reached" in output and BANNER not in output, output
    assert "readable: " in output and "readable: 0" not in output, output  # it did read environments
    assert FOUND not in output and API_KEY not in output and token not in output, output
    # The worker's state folder is hidden: an empty folder in its place, with only the path down to this run's
    # workspace bound back (no spool, no directives, no other run).
    assert [line for line in output.splitlines() if line.startswith("STATE ")] == ["STATE runs"], output
    assert payloads(site, run_id, "status")[0]["config"]["sandbox"] == "bubblewrap"
    assert "bubblewrap" in run_page(site, port, run_id).split('id="run-sandbox"', 1)[1][:200]
    # The worker itself never writes the token or the key into its state folder (spool, traces, settings).
    files = [p.read_bytes() for p in state.rglob("*") if p.is_file()]
    assert files and not any(token.encode() in data or API_KEY.encode() in data for data in files)


def test_a_run_the_operator_let_run_unsandboxed_says_unsandboxed_on_its_page_and_in_its_trace(site, state):
    result, run_id, token, port = hostile_run(site, state, "--unsandboxed")
    # The control: without a sandbox the very same command reads both secrets from the worker's process.
    assert f"{FOUND}ANTHROPIC_API_KEY={API_KEY}" in result["output"]
    assert f"{FOUND}KSEEK_WORKER_TOKEN={token}" in result["output"]
    assert "STATE spool.jsonl" in result["output"]
    assert f"tcp {BANNER}" in result["output"] and f"unix {BANNER}" in result["output"]
    assert payloads(site, run_id, "status")[0]["config"]["sandbox"] == "none"
    assert any(note["text"].startswith("unsandboxed") for note in payloads(site, run_id, "note"))
    marker = run_page(site, port, run_id).split('id="run-sandbox"', 1)[1][:200]
    assert "unsandboxed" in marker


@pytest.mark.sandbox  # the opt-in opens bubblewrap's network: without bubblewrap there is nothing to open
def test_an_operator_who_opts_in_to_the_network_lets_a_runs_commands_reach_the_hosts_services_and_the_trace_says_so(
    site, state
):
    result, run_id, token, port = hostile_run(site, state, extra_env={"KSEEK_AGENT_NETWORK": "1"})
    output = result["output"]
    assert f"tcp {BANNER}" in output and f"unix {BANNER}" in output, output
    assert FOUND not in output  # still in the sandbox: the network is all the opt-in opens
    assert payloads(site, run_id, "status")[0]["config"]["sandbox"] == "bubblewrap"
    assert any(note.get("network") and note["text"].startswith("network") for note in payloads(site, run_id, "note"))


def test_without_a_working_sandbox_the_worker_takes_no_run_and_says_what_to_install(site, tmp_path):
    port = site.start_server()
    run_id = queue_run(site)
    state = tmp_path / "state"
    worker = start_worker(site, port, site.worker_token("no-ns-host"), state, path=failing_bwrap(tmp_path / "bin"))
    assert worker.wait(timeout=120) == EXIT_NO_SANDBOX
    said = site.worker_log(state)
    assert "apt-get install bubblewrap" in said and "--unsandboxed" in said and "cannot make its namespaces" in said
    assert site.query("select status, worker_id from runs_run where id = ?", (run_id,)) == [("queued", None)]
    assert site.query("select count(*) from runs_step where run_id = ?", (run_id,)) == [(0,)]


def test_without_a_working_sandbox_a_standalone_run_does_not_start(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": failing_bwrap(tmp_path / "bin"),
        "KSEEK_AGENT_RUNS": str(tmp_path / "runs"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentloop",
            "run",
            "--model",
            f"replay:{ROOT / 'agentloop' / 'replays' / 'matmul_cpu_demo.jsonl'}",
            "--quiet",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_NO_SANDBOX, done.stderr
    assert "apt-get install bubblewrap" in done.stderr and "--unsandboxed" in done.stderr
    assert not (tmp_path / "runs").exists()  # no trace, no workspace: nothing ran


def test_serve_without_a_working_sandbox_serves_the_dashboard_without_a_worker_and_says_what_to_do(site, tmp_path):
    # `make run`'s last step on a host where bubblewrap cannot work.
    from tests.live_server import free_port

    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo"],
            cwd=ROOT,
            env=site.env(PATH=failing_bwrap(tmp_path / "bin")),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        said = wait_until(
            lambda: "Serving the dashboard without a worker" in log_path.read_text() and log_path.read_text(),
            120,
            while_alive=serve,
        )
        assert said, log_path.read_text()[-3000:]
        assert "apt-get install bubblewrap" in said and "manage.py serve --unsandboxed" in said
        assert "restarting it" not in said  # the worker is not started again and again
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=30)
        assert page.status == 200 and serve.poll() is None
    finally:
        os.killpg(serve.pid, 15)
        serve.wait(timeout=60)
