"""Runs the harness on a snapshot of the agent's kernel, in a separate process with a scrubbed environment, in
the run's sandbox.

Why a separate process: the harness compiles and runs the candidate (code the model wrote) in its own child,
which inherits its parent's environment; starting the harness from a process that holds no secrets keeps the API
key and the worker token out of the candidate's environment. Why in the sandbox (agentloop/sandbox.py): the
candidate runs as our user, and a process of our user can read /proc/<our pid>/environ; in bubblewrap's PID
namespace it cannot see us. Why a process that stays (gpu_harness/service.py): what a fresh one
pays for every time (torch's import, the device's peaks, the baselines' timings, the candidate process's start)
is paid once a run. Why a snapshot: the file the verdict names is the file judged, even if something rewrites
the workspace meanwhile.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloop.kernel_file import KernelFileError, read_regular_file
from agentloop.sandbox import Sandbox, is_secret_name, scrubbed_env
from gpu_harness.build import cache_dir
from gpu_harness.runner import LineReader

REPO_ROOT = Path(__file__).resolve().parents[1]


class EvaluatorError(RuntimeError):
    """The harness itself could not produce a verdict (not: the kernel was wrong; that is a verdict)."""


class HarnessDied(EvaluatorError):
    """The harness process ended while it held a request (its kernel may be what killed it): `why` says how, in
    words ("the harness process died (signal 9)"), and `log_tail` what its log said last."""

    def __init__(self, why: str, log_tail: str) -> None:
        super().__init__(f"{why}: {log_tail}" if log_tail else why)
        self.why = why
        self.log_tail = log_tail


def how_it_ended(code: int) -> str:
    """A process's exit status in words: a signal (negative, or 128 + N as bwrap reports its child's), or a code."""
    signal_number = -code if code < 0 else code - 128 if code > 128 else None
    if signal_number is not None:
        return f"the harness process died (signal {signal_number})"
    return f"the harness process ended (exit code {code})"


class HarnessEvaluator:  # an agentloop.interfaces.Evaluator
    """Evaluations through one long-lived harness process (python -m gpu_harness.service), started at the first
    call from a scrubbed environment and kept for the next: it keeps the baselines' timings, the device's
    peaks and a candidate process booted ahead, so that a quick evaluation costs seconds, not a fresh start.
    A harness that dies or overruns its time is stopped, and the next call starts a new one. `close()` ends it.
    Where the sandbox is `refused`, every call fails with its reason and nothing is started.
    """

    service_argv = [sys.executable, "-m", "gpu_harness.service"]

    def __init__(
        self,
        timeout_s: float = 1800,
        progress: Callable[[str], None] | None = None,
        extra_env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.progress = progress
        # e.g. CUDA_VISIBLE_DEVICES of the run's GPU. A secret's name is refused even here: the harness passes its
        # whole environment on to the candidate's process (gpu_harness/runner.py), so what reaches the harness
        # reaches the kernel.
        secrets = sorted(name for name in (extra_env or {}) if is_secret_name(name))
        if secrets:
            raise ValueError(f"the harness's environment may not carry secrets: {', '.join(secrets)}")
        self.extra_env = dict(extra_env or {})
        self.sandbox = sandbox or Sandbox.choose()
        self._proc: subprocess.Popen[bytes] | None = None
        self._home: str | None = None  # the harness's scratch folder: its log and the kernel snapshots
        self._answers: LineReader | None = None
        self._next_id = 0

    def __call__(self, task: str, kernel_path: Path, scenarios: str | list[str]) -> dict[str, Any]:
        if self.sandbox.mode == "refused":
            raise EvaluatorError(self.sandbox.refusal)
        self._ensure_started()
        with tempfile.TemporaryDirectory(prefix="snapshot-", dir=self._home) as tmp:
            snapshot = Path(tmp) / Path(kernel_path).name
            try:  # never through a link, never a FIFO or a device, never more than the limit (kernel_file.py)
                snapshot.write_bytes(read_regular_file(Path(kernel_path), Path(kernel_path).name))
            except KernelFileError as exc:
                raise EvaluatorError(str(exc)) from None
            self._next_id += 1
            rid = self._next_id
            self._send(
                {"id": rid, "task": task, "kernel": str(snapshot), "scenarios": scenarios, "timeout_s": self.timeout_s}
            )
            deadline = time.monotonic() + self.timeout_s + 60
            while True:
                msg = self._receive(deadline)
                if msg.get("id") != rid:
                    continue
                if "progress" in msg:
                    if self.progress:
                        self.progress(str(msg["progress"]))
                    continue
                if "error" in msg:
                    raise EvaluatorError(f"the harness refused the request: {msg['error']}")
                result = msg.get("result")
                if not isinstance(result, dict):
                    self.close()
                    raise EvaluatorError(f"the harness answered without a result: {str(msg)[:300]}")
                break
        result["kernel_path"] = str(kernel_path)
        return result

    def _ensure_started(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self.close()
        self._home = tempfile.mkdtemp(prefix="kseek-harness-")
        env = scrubbed_env(self._home)
        env["PYTHONPATH"] = str(REPO_ROOT)
        # the harness's build cache and the task folders it reads (gpu_harness/tasks): locations, not secrets
        for name in ("KSEEK_CACHE_DIR", "KSEEK_TASKS_DIR"):
            if name in os.environ:
                env[name] = os.environ[name]
        env["HOME"] = os.environ.get("HOME", self._home)  # the harness's build cache lives under HOME
        env.update(self.extra_env)
        # The build cache is the one folder outside its scratch that the harness writes (gpu_harness/build.py).
        cache = cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        argv = self.sandbox.harness_argv(Path(self._home), [cache], env, list(self.service_argv))
        with open(Path(self._home) / "harness.log", "wb") as log:
            self._proc = subprocess.Popen(
                argv,
                cwd=self._home,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        assert self._proc.stdout is not None  # stdout=PIPE
        self._answers = LineReader(self._proc.stdout.fileno(), chunk=1 << 20)

    def _send(self, request: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None  # _ensure_started: stdin=PIPE
        try:
            self._proc.stdin.write((json.dumps(request) + "\n").encode())
            self._proc.stdin.flush()
        except OSError as exc:
            tail = self._log_tail()
            self.close()
            raise HarnessDied(f"the harness process is gone ({exc})", tail) from None

    def _receive(self, deadline: float) -> dict[str, Any]:
        assert self._answers is not None and self._proc is not None  # _ensure_started made them
        try:
            line = self._answers.line(deadline)
        except TimeoutError:
            self.close()
            raise EvaluatorError(f"the harness did not finish within {self.timeout_s + 60:g} s") from None
        if line is None:
            code = self._proc.wait()
            tail = self._log_tail()
            self.close()
            raise HarnessDied(how_it_ended(code), tail)
        try:
            answer: dict[str, Any] = json.loads(line)
            return answer
        except ValueError:
            self.close()
            raise EvaluatorError(f"the harness wrote an unreadable line: {line[:300]!r}") from None

    def _log_tail(self) -> str:
        if self._home is None:
            return ""
        try:
            return (Path(self._home) / "harness.log").read_text(errors="replace").strip()[-2000:]
        except (OSError, TypeError):
            return ""

    def close(self) -> None:
        """Stop the harness process (and, with it, the candidate process it had booted ahead)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:  # (stdin=PIPE)
                    proc.stdin.close()  # the harness ends when its input closes ...
                proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                pass
            try:
                # ... and whatever is left of its process group goes (under bubblewrap: bwrap, whose death
                # takes the sandbox's PID 1 and every process of its namespace with it)
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            if proc.stdout:
                proc.stdout.close()
        if self._home:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
