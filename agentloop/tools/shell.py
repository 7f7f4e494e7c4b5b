"""The shell tool: one bash command in the workspace, a scrubbed environment, a time limit, truncated output."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from agentloop.sandbox import bwrap_argv, bwrap_path, scrubbed_env
from agentloop.tools import ToolResult, require, truncate

SCHEMA = {
    "name": "shell",
    "description": (
        "Run a bash command in your workspace (the current directory) and return its exit code and combined "
        "stdout and stderr. Each call is a fresh shell: `cd` and variables do not carry over. Long output is "
        "cut in the middle."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command line."},
            "timeout_s": {"type": "number", "description": "Time limit in seconds (default 120)."},
        },
        "required": ["command"],
    },
}


class ShellTool:
    name = "shell"
    schema = SCHEMA

    def __init__(self, workspace: Path, timeout_s: float = 120, timeout_max_s: float = 600,
                 output_limit: int = 10000, hidden: list[Path] | None = None, use_bwrap: bool | None = None,
                 extra_env: dict[str, str] | None = None):
        self.extra_env = dict(extra_env or {})
        self.workspace = Path(workspace)
        self.timeout_s = timeout_s
        self.timeout_max_s = timeout_max_s
        self.output_limit = output_limit
        self.hidden = list(hidden or [])
        self.bwrap = bwrap_path() if use_bwrap in (None, True) else None
        if use_bwrap and not self.bwrap:
            raise RuntimeError("bubblewrap was required but `bwrap` is not on PATH")

    def argv(self, command: str) -> tuple[list[str], dict]:
        """The command line and the environment to start it with. Under bubblewrap the command's environment is
        set inside the sandbox (--clearenv/--setenv), and bwrap itself also starts with the scrubbed one: it is
        PID 1 of the sandbox, so its /proc/1/environ is readable from inside."""
        env = scrubbed_env(self.workspace) | self.extra_env
        inner = ["bash", "-c", command]
        if self.bwrap:
            return bwrap_argv(self.bwrap, self.workspace, self.hidden, env, inner), env
        return inner, env

    def __call__(self, tool_input: dict) -> ToolResult:
        command = require(tool_input, "command")
        timeout = tool_input.get("timeout_s", self.timeout_s)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            timeout = self.timeout_s
        timeout = min(float(timeout), self.timeout_max_s)
        argv, env = self.argv(command)
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=self.workspace, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            raw, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            raw, _ = proc.communicate()
        text = raw.decode("utf-8", errors="replace")
        shown, cut = truncate(text, self.output_limit)
        status = (f"[timed out after {timeout:g} s; the command and its children were killed]" if timed_out
                  else f"[exit code {proc.returncode}]")
        return ToolResult(
            output=f"{status}\n{shown}" if shown else status, is_error=timed_out or proc.returncode != 0,
            truncated_chars=cut,
            extra={"exit_code": None if timed_out else proc.returncode, "timed_out": timed_out,
                   "duration_s": round(time.monotonic() - started, 3)},
        )


def _kill_group(proc: subprocess.Popen) -> None:
    # The command may have started children (make, a stuck binary): kill the whole process group.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
