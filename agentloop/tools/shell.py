"""The shell tool: one bash command in the workspace, in the run's sandbox (agentloop/sandbox.py), with a
scrubbed environment, a time limit that every process the command started obeys, and output read in bounded
memory (what the model is shown is kept, the rest counted)."""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from agentloop.sandbox import BUBBLEWRAP, NONE, Sandbox, scrubbed_env
from agentloop.tools import OutputKeeper, ToolInputError, ToolResult, require

SUPERVISOR = Path(__file__).with_name("supervisor.py")
READ_CHUNK = 1 << 16
# After the command's own process has ended: how long output still buffered in the pipe may take to drain.
# Nothing of the command is left alive by then (the sandbox or the supervisor killed it), so this is never a wait
# for a process, only for bytes already written.
DRAIN_S = 2.0
STOP_GRACE_S = 5.0  # for the supervisor to kill what is below it after SIGTERM
# The longest command line, in UTF-8 (the policy's shell_command_max_bytes): it travels as one argument of
# `bash -c`, and Linux takes at most 128 KiB (MAX_ARG_STRLEN) in one argument; a longer script belongs in a file.
COMMAND_MAX_BYTES = 100_000

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

    def __init__(
        self,
        workspace: Path,
        timeout_s: float = 120,
        timeout_max_s: float = 600,
        output_limit: int = 10000,
        hidden: list[Path] | None = None,
        use_bwrap: bool | None = None,
        extra_env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
        command_max_bytes: int = COMMAND_MAX_BYTES,
    ) -> None:
        """`sandbox` decides where commands run; without one it is chosen here: `use_bwrap=False` is the
        operator's --unsandboxed, anything else asks for bubblewrap and refuses commands where it does not work."""
        self.extra_env = dict(extra_env or {})
        self.workspace = Path(workspace)
        self.timeout_s = timeout_s
        self.timeout_max_s = timeout_max_s
        self.output_limit = output_limit
        self.command_max_bytes = command_max_bytes
        self.sandbox = sandbox or Sandbox.choose(unsandboxed=use_bwrap is False, hidden=hidden or [])

    def argv(self, command: str) -> tuple[list[str], dict[str, Any]]:
        """The command line and the environment to start it with. Under bubblewrap the command's environment is
        set inside the sandbox (--clearenv/--setenv), and bwrap itself also starts with the scrubbed one: it is
        PID 1 of the sandbox, so its /proc/1/environ is readable from inside. Without a sandbox the command runs
        below the supervisor, which kills whatever it leaves behind."""
        env = scrubbed_env(self.workspace) | self.extra_env
        inner = ["bash", "-c", command]
        if self.sandbox.mode == NONE:
            return [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), "--", *inner], env
        return self.sandbox.shell_argv(self.workspace, env, inner), env

    def __call__(self, tool_input: dict[str, Any]) -> ToolResult:
        command = require(tool_input, "command")
        problem = command_problem(command, self.command_max_bytes)
        if problem is not None:
            raise ToolInputError(problem)
        if self.sandbox.mode not in (BUBBLEWRAP, NONE):
            return ToolResult(
                output=f"[not run] {self.sandbox.refusal}",
                is_error=True,
                extra={"exit_code": None, "timed_out": False, "duration_s": 0},
            )
        timeout = tool_input.get("timeout_s", self.timeout_s)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout < math.inf:
            timeout = self.timeout_s
        timeout = min(float(timeout), self.timeout_max_s)
        argv, env = self.argv(command)
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=self.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        output = OutputKeeper(self.output_limit)
        try:
            timed_out = _read(proc, output, started + timeout)
            if timed_out:
                self._stop(proc)
        finally:
            _pipe(proc).close()  # whatever may still hold the pipe's other end, we read no more of it
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
        shown, cut = output.result()
        status = (
            f"[timed out after {timeout:g} s; the command and its children were killed]"
            if timed_out
            else f"[exit code {proc.returncode}]"
        )
        return ToolResult(
            output=f"{status}\n{shown}" if shown else status,
            is_error=timed_out or proc.returncode != 0,
            truncated_chars=cut,
            extra={
                "exit_code": None if timed_out else proc.returncode,
                "timed_out": timed_out,
                "duration_s": round(time.monotonic() - started, 3),
            },
        )

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        """At the time limit. Under bubblewrap, killing bwrap kills the sandbox's PID 1 (--die-with-parent), and
        with it every process of the namespace. Without, the supervisor is asked to kill all below it first."""
        if self.sandbox.mode == NONE:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE_S)
                return
            except subprocess.TimeoutExpired:
                pass
            _kill_group(proc)
            proc.wait()
            return
        # The sandbox's PID 1 is bwrap's child, in a session of its own: it dies because bwrap does, and the
        # kernel then kills the rest of its namespace, all after bwrap has been reaped. Waiting for PID 1 to be
        # gone (or a zombie) is waiting for every process of the namespace to be gone.
        inits = _children(proc.pid)
        _kill_group(proc)
        proc.wait()
        _wait_ended(inits, time.monotonic() + STOP_GRACE_S)


def command_problem(command: str, max_bytes: int) -> str | None:
    """Why `command` cannot be run, in words the model reads (a NUL, which no argument can hold; over the limit on
    a command's length); None when it can."""
    if "\0" in command:
        return "the command contains a NUL character, which no command line can hold: nothing was run"
    size = len(command.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        return (
            f"the command is {size:,} bytes, over the limit of {max_bytes:,} bytes on a shell command: nothing was "
            "run. Write a long script to a file with the editor and run the file"
        )
    return None


def _pipe(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    """The command's output: a pipe (stdout=PIPE, stderr=STDOUT)."""
    assert proc.stdout is not None
    return proc.stdout


def _read(proc: subprocess.Popen[bytes], output: OutputKeeper, deadline: float) -> bool:
    """Feed the command's output to `output` until the started process has ended and the pipe is closed; True
    if the deadline came first. After the process has ended, the pipe is read for DRAIN_S more at most: a
    process that escaped both the sandbox and the supervisor may hold it open, and we do not wait for that."""
    fd = _pipe(proc).fileno()
    pipe_open, drain_until = True, None
    while True:
        now = time.monotonic()
        if proc.poll() is not None:
            if not pipe_open:
                return False
            drain_until = drain_until or now + DRAIN_S
            if now >= drain_until:
                return False
        elif now >= deadline:
            return True
        # Short waits: the end of the process is noticed within 0.2 s even while the pipe stays open.
        wait = max(0.0, min(0.2, (drain_until or deadline) - now))
        if not pipe_open:  # the command closed its output but runs on: wait for it, not for the pipe
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        elif select.select([fd], [], [], wait)[0]:
            chunk = os.read(fd, READ_CHUNK)
            if chunk:
                output.feed(chunk)
            else:
                pipe_open = False


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (read from /proc, which every Linux has)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _wait_ended(pids: list[int], deadline: float) -> None:
    """Until each of `pids` has exited (gone, or a zombie its new parent has not reaped yet), or the deadline."""
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                break
            if state in ("Z", "X"):
                break
            time.sleep(0.01)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # Whatever is left in the started process's group (bwrap and its PID 1; the supervisor).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
