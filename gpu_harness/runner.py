"""The parent's end of the child process: spawn it, talk to it with a deadline on every message, kill it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import childbox
from .build import cache_dir
from .procs import kill_group
from .scratch import ScratchFolder

REPO_ROOT = Path(__file__).resolve().parents[1]


class ChildFailed(Exception):
    """The child died, hung, or broke the protocol; `kind` is 'crash', 'timeout' or 'protocol'."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class LineReader:
    """Lines from a pipe, each waited for until a deadline (the parent's end of the child's message pipe; the
    agent loop's end of the harness service's answers)."""

    def __init__(self, fd: int, chunk: int = 1 << 16) -> None:
        self.fd, self._chunk, self._buf = fd, chunk, b""

    def line(self, deadline: float) -> bytes | None:
        """The next line without its newline; None when the writer has closed the pipe. Raises TimeoutError
        once `deadline` (time.monotonic()) passes with no whole line in."""
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, self._chunk)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line


# Where libraries keep caches when these variables name a folder: set for a contained child, under its scratch
# folder. The harness's own process may have set them (torch.compile puts TORCHINDUCTOR_CACHE_DIR in os.environ the
# first time it compiles, for its workers), and a child inheriting /tmp/torchinductor_root then failed every
# torch.compile baseline on the sandbox's read-only /tmp (an H100, 2026-12-05).
CACHE_FOLDERS = {
    "TORCHINDUCTOR_CACHE_DIR": "tmp/torchinductor",
    "TRITON_CACHE_DIR": "home/.triton/cache",
    "XDG_CACHE_HOME": "home/.cache",
    "CUDA_CACHE_PATH": "home/.nv/ComputeCache",
}


CACHE_PLACEHOLDER = "{cache}"  # in a task's [child.env] values (docs/tasks.md): where a library keeps its cache


def with_cache_folder(task_env: dict[str, Any] | None, folder: str) -> dict[str, Any]:
    """The task's [child.env] with `{cache}` in each value replaced by `folder`."""
    return {k: v.replace(CACHE_PLACEHOLDER, folder) for k, v in (task_env or {}).items()}


def cache_folder(contained: bool, workdir: str) -> str:
    """What `{cache}` names in a task's [child.env]: the harness's cache folder, kept between evaluations, for an
    uncontained child; a contained child's own `cache/` in its scratch folder `workdir`, which dies with it. The
    harness's folder is read-only in the sandbox (flash-attn-4, pointed there, failed to import), and a cache a
    contained child could write and a later evaluation would read is one it could leave poisoned."""
    if not contained:
        return str(cache_dir())
    folder = os.path.join(workdir, "cache")
    os.mkdir(folder)
    return folder


def contained_environment(env: dict[str, Any], workdir: str) -> None:
    """`env` made a contained child's: the rest of the file system is read-only, so temporary files, and the
    caches libraries keep under HOME (Triton's, for torch.compile baselines), go to `workdir`, and die with it (a
    cache that outlived the evaluation would be one the candidate could leave poisoned for the next)."""
    for var, name in (("TMPDIR", "tmp"), ("HOME", "home")):
        env[var] = os.path.join(workdir, name)
        os.mkdir(env[var])
    for var, name in CACHE_FOLDERS.items():
        env[var] = os.path.join(workdir, name)


class ChildSession:
    """The candidate's process, booted before its job is known: its imports, CUDA start and the task's setup
    overlap the build (or wait, started ahead, for the next evaluation); `start(job)` then hands it the job
    over the command pipe. It owns a scratch folder (its log, the CPU task's output files) that `close`
    removes."""

    batch_n: int  # calls a timed batch makes (evaluation.py sets it from the child's `ready`)

    def __init__(self, task: str, extra_env: dict[str, Any] | None = None, sandbox: str = childbox.NONE) -> None:
        self.started = False  # given a job
        self.sandbox = sandbox  # childbox.BUBBLEWRAP: the child runs in a sandbox of its own, this folder its only
        self.scratch = ScratchFolder.create()  # writable one; owned while this process lives: a later judge sweeps
        self.workdir = self.scratch.path  # it if not
        self.log_path = os.path.join(self.workdir, "child.log")
        contained = sandbox == childbox.BUBBLEWRAP
        child_env = self.environment(with_cache_folder(extra_env, cache_folder(contained, self.workdir)))
        argv = [sys.executable, "-m", "gpu_harness.child", task]
        if contained:
            contained_environment(child_env, self.workdir)
            argv = childbox.contained(argv, self.workdir)
        msg_r, msg_w = os.pipe()
        cmd_r, cmd_w = os.pipe()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [*argv, "--msg-fd", str(msg_w), "--cmd-fd", str(cmd_r)],
                pass_fds=(msg_w, cmd_r),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.workdir,
                env=child_env,
                start_new_session=True,
            )
        os.close(msg_w)
        os.close(cmd_r)
        self._msg = msg_r
        self._cmd = cmd_w
        self._lines = LineReader(msg_r)
        self._closed = False

    @staticmethod
    def environment(extra_env: dict[str, Any] | None = None) -> dict[str, Any]:
        env = {**os.environ, **(extra_env or {})}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    @classmethod
    def environment_key(cls, extra_env: dict[str, Any] | None = None) -> int:
        """Equal for two sessions started with the same environment (a spare is used only then)."""
        return hash(tuple(sorted(cls.environment(extra_env).items())))

    def alive(self) -> bool:
        return not self._closed and self.proc.poll() is None

    def start(self, job: dict[str, Any]) -> None:
        self.started = True
        self.send(cmd="job", job=job)

    def log_tail(self, n: int = 1500) -> str:
        """The log's last `n` bytes. The child writes the log (printf is allowlisted) and can replace it: only its
        tail is read, and only from a regular file (childbox.open_scratch_file)."""
        try:
            with childbox.open_scratch_file(self.log_path) as log:
                log.seek(max(0, os.fstat(log.fileno()).st_size - n))
                data = log.read(n)
            return data.decode(errors="replace").strip()
        except OSError:
            return ""

    def recv(self, timeout_s: float, waiting_for: str) -> dict[str, Any]:
        try:
            line = self._lines.line(time.monotonic() + max(0.0, timeout_s))
        except TimeoutError:
            raise ChildFailed("timeout", f"no answer within {timeout_s:.0f}s while {waiting_for}") from None
        if line is None:
            code = self.proc.wait(timeout=30)
            raise ChildFailed(
                "crash",
                f"the candidate's process died ({_describe_exit(code, self.sandbox != childbox.NONE)}) while "
                f"{waiting_for}; its output ends: {self.log_tail(600)!r}",
            )
        try:
            message: dict[str, Any] = json.loads(line)
            return message
        except ValueError as e:
            raise ChildFailed("protocol", f"unreadable message from the child: {e}") from e

    def send(self, **cmd: object) -> None:
        data = (json.dumps(cmd) + "\n").encode()
        try:
            while data:  # a job is larger than a pipe's buffer: written as the child reads it
                data = data[os.write(self._cmd, data) :]
        except (BrokenPipeError, OSError) as e:
            raise ChildFailed("crash", f"the candidate's process is gone ({e})") from e

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Nothing is owed by the child once its last message is in (the parent has let go of its output slots
        # by now): it and whatever it left running are killed at once, not waited for (a CUDA process takes
        # a while to wind down by itself).
        kill_group(self.proc)
        for fd in (self._msg, self._cmd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.scratch.remove()


def _describe_exit(code: int | None, sandboxed: bool = False) -> str:
    """How the child ended. A sandboxed child is bubblewrap's, which exits 128 + N when what it ran was killed by
    signal N (an abort, a file over the size limit): that is said as the signal, not as an exit code."""
    if code is None:
        return "still running"
    if sandboxed and 128 < code < 128 + 65:
        code = -(code - 128)
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
