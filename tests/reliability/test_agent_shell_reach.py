"""The agent's shell cannot read the worker token, the API key, or the server's database (issue 7, security), and
where no sandbox works it runs nothing (issue 15, finding 1).

The shell is built as the worker builds it (agentloop/worker/client.py: hidden = the worker's state directory
plus the folders named with --hide) for `make run`'s layout, where the local worker's state lives inside the
server's data folder (DATA_DIR/local-worker) beside the SQLite database and the generated SECRET_KEY, and
`manage.py serve` starts the worker with `--hide DATA_DIR` (tests/foundation/test_make_run.py checks that). Outside /tmp on purpose:
bubblewrap gives the shell a private /tmp, which would hide a test folder there whatever the sandbox did.
"""

import os
import secrets
import shutil
from pathlib import Path

import pytest

from agentloop.evaluator import EvaluatorError, HarnessEvaluator
from agentloop.sandbox import working_bwrap
from agentloop.tools.shell import ShellTool
from tests.reliability.host_service import BANNER, HostService

SECRET_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-rel-do-not-leak",
    "KSEEK_WORKER_TOKEN": "kst_rel_do_not_leak",
    "KSEEK_ADMIN_PASSWORD": "admin-rel-do-not-leak",
}


@pytest.fixture
def layout(monkeypatch):
    root = Path.home() / ".cache" / f"kseek-shell-reach-{secrets.token_hex(4)}"
    data = root / "data"
    state = data / "local-worker"
    (state / "runs" / "7" / "workspace").mkdir(parents=True)
    (data / "kernelseek.sqlite3").write_text("SQLITE-DATABASE-CONTENT")
    (data / "secret_key").write_text("SECRET-KEY-CONTENT")
    (state / "spool.jsonl").write_text("SPOOL-CONTENT")
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)
    try:
        yield data, state, state / "runs" / "7" / "workspace"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def worker_sandbox(state):
    """The sandbox the worker decides for its runs, with no flag given."""
    from agentloop.worker.client import Worker

    return Worker(server="ws://127.0.0.1:9", token="unused", gpus=[0], state_dir=state, hidden=[state.parent]).sandbox


def shell_output(workspace, state, command):
    return ShellTool(workspace, sandbox=worker_sandbox(state))({"command": command}).output


@pytest.mark.sandbox  # without bubblewrap the shell runs nothing (tested below)
def test_the_shells_environment_holds_no_secret_and_the_worker_state_is_hidden(layout):
    data, state, workspace = layout
    output = shell_output(workspace, state, f"env; cat {state}/spool.jsonl")
    for value in SECRET_ENV.values():
        assert value not in output
    assert "HOME=" in output  # the command ran
    assert "SPOOL-CONTENT" not in output


@pytest.mark.sandbox  # without bubblewrap the shell runs nothing (tested below)
def test_no_process_the_shell_can_see_holds_a_secret(layout):
    data, state, workspace = layout
    output = shell_output(workspace, state, "for p in /proc/[0-9]*; do tr '\\000' '\\n' < $p/environ; done")
    assert "PATH=" in output  # the command could read environments
    for value in SECRET_ENV.values():
        assert value not in output


@pytest.mark.sandbox  # without bubblewrap the shell runs nothing (tested below)
def test_the_shell_cannot_read_the_servers_database_or_secret_key(layout):
    data, state, workspace = layout
    output = shell_output(workspace, state, f"cat {data}/kernelseek.sqlite3 {data}/secret_key")
    assert "SQLITE-DATABASE-CONTENT" not in output and "SECRET-KEY-CONTENT" not in output


@pytest.fixture
def host_service(layout):
    data, _, _ = layout
    service = HostService(data.parent)
    yield service
    service.close()


@pytest.mark.sandbox  # without bubblewrap the shell runs nothing (tested below)
def test_the_shell_reaches_no_service_of_the_host_on_its_loopback_or_its_unix_sockets(
    layout, host_service, monkeypatch
):
    monkeypatch.delenv("KSEEK_AGENT_NETWORK", raising=False)  # the operator did not opt in
    data, state, workspace = layout
    output = shell_output(workspace, state, host_service.probe())
    assert "tcp not reached" in output and "unix not reached" in output, output
    assert BANNER not in output


@pytest.mark.sandbox  # without bubblewrap the shell runs nothing (tested below)
def test_an_operator_who_opts_in_to_the_network_lets_the_shell_reach_the_hosts_services(
    layout, host_service, monkeypatch
):
    data, state, workspace = layout
    monkeypatch.setenv("KSEEK_AGENT_NETWORK", "1")
    output = shell_output(workspace, state, host_service.probe())
    assert f"tcp {BANNER}" in output and f"unix {BANNER}" in output, output


@pytest.fixture
def no_working_bwrap(tmp_path, monkeypatch):
    """This process sees a `bwrap` that is installed but cannot make namespaces (user namespaces off)."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    working_bwrap.cache_clear()
    yield
    working_bwrap.cache_clear()  # the next probe sees the real PATH again


def test_without_a_working_sandbox_the_shell_and_the_harness_run_nothing_and_say_what_to_install(
    layout, no_working_bwrap
):
    data, state, workspace = layout
    sandbox = worker_sandbox(state)
    assert sandbox.mode == "refused"
    result = ShellTool(workspace, sandbox=sandbox)({"command": "touch ran; cat /proc/[0-9]*/environ"})
    assert result.is_error and not (workspace / "ran").exists()
    assert "apt-get install bubblewrap" in result.output and "--unsandboxed" in result.output
    assert not any(value in result.output for value in SECRET_ENV.values())
    (workspace / "kernel.cpp").write_text("int x;")
    with pytest.raises(EvaluatorError, match="apt-get install bubblewrap"):
        HarnessEvaluator(sandbox=sandbox)("matmul_cpu", workspace / "kernel.cpp", "quick")
