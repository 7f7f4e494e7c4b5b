"""Running other programs with a hard bound: each gets its own process group, killed whole on timeout."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any


@dataclass
class Completed:
    returncode: int | None  # None when it was killed for the timeout
    stdout: str
    stderr: str
    timed_out: bool


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """Kill the process and everything it started (its own session), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_bounded(
    cmd: list[str], timeout_s: float, cwd: str | None = None, env: dict[str, Any] | None = None
) -> Completed:
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
        return Completed(proc.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return Completed(None, out or "", err or "", True)
