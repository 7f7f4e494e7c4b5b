"""The agent's shell cannot read the worker token, the API key, or the server's database (issue 7, security).

The shell is built as the worker builds it (agentloop/worker/client.py: hidden = the worker's state directory
plus the folders named with --hide) for `make run`'s layout, where the local worker's state lives inside the
server's data folder (DATA_DIR/local-worker) beside the SQLite database and the generated SECRET_KEY, and
`manage.py serve` starts the worker with `--hide DATA_DIR` (tests/foundation/test_make_run.py checks that). Outside /tmp on purpose:
bubblewrap gives the shell a private /tmp, which would hide a test folder there whatever the sandbox did.
"""

import secrets
import shutil
from pathlib import Path

import pytest

from agentloop.sandbox import bwrap_path
from agentloop.tools.shell import ShellTool

SECRET_ENV = {"ANTHROPIC_API_KEY": "sk-ant-rel-do-not-leak", "KSEEK_WORKER_TOKEN": "kst_rel_do_not_leak",
              "KSEEK_ADMIN_PASSWORD": "admin-rel-do-not-leak"}


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


def shell_output(workspace, state, command):
    from agentloop.worker.client import Worker

    data = state.parent
    worker = Worker(server="ws://127.0.0.1:9", token="unused", gpus=[0], state_dir=state, hidden=[data])
    tool = ShellTool(workspace, hidden=worker.shell_hidden, use_bwrap=bwrap_path() is not None)
    return tool({"command": command}).output


def test_the_shells_environment_holds_no_secret_and_the_worker_state_is_hidden(layout):
    data, state, workspace = layout
    output = shell_output(workspace, state, f"env; cat {state}/spool.jsonl")
    for value in SECRET_ENV.values():
        assert value not in output
    assert "HOME=" in output  # the command ran
    if bwrap_path():
        assert "SPOOL-CONTENT" not in output


@pytest.mark.skipif(bwrap_path() is None, reason="without bubblewrap the shell sees the user's processes: "
                                                 "docs/protocol.md section 3 says so")
def test_no_process_the_shell_can_see_holds_a_secret(layout):
    data, state, workspace = layout
    output = shell_output(workspace, state, "for p in /proc/[0-9]*; do tr '\\000' '\\n' < $p/environ; done")
    assert "PATH=" in output  # the command could read environments
    for value in SECRET_ENV.values():
        assert value not in output


@pytest.mark.skipif(bwrap_path() is None, reason="without bubblewrap the shell runs as the worker's user and can "
                                                 "read its files: docs/protocol.md section 3 says so")
def test_the_shell_cannot_read_the_servers_database_or_secret_key(layout):
    data, state, workspace = layout
    output = shell_output(workspace, state, f"cat {data}/kernelseek.sqlite3 {data}/secret_key")
    assert "SQLITE-DATABASE-CONTENT" not in output and "SECRET-KEY-CONTENT" not in output
