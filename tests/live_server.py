"""Starting a real server process for a test: a free port, the process in a session of its own, a wait until it
serves its login page, and a kill of its whole process group at the end (whatever it started, such as make
run's daphne and local worker, goes with it)."""

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(argv: list[str], *, port: int, env: dict, log_path: Path, timeout_s: float = 120):
    """Run `argv` (which must listen on 127.0.0.1:`port`) and yield its base URL once it serves; the test fails
    with the end of the process's log when it exits or does not serve in time."""
    log = open(log_path, "w+")
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                urllib.request.urlopen(base + "/accounts/login/", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"{' '.join(argv[:2])} did not serve (exit {process.poll()}):\n{log.read()[-4000:]}")
                time.sleep(0.3)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
