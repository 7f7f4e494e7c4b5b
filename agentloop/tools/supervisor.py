"""Runs one shell command without a sandbox so that every process it starts ends with it.

    python -I -S supervisor.py PARENT_PID -- bash -c COMMAND

Without bubblewrap's PID namespace nothing else would: a command can leave its process group and session
(`setsid sleep 99 &`), double-fork, and keep the output pipe open, so killing the group misses it and reading to
the end of the output waits for it. This process is a child subreaper (prctl PR_SET_CHILD_SUBREAPER): whatever
the command starts stays below it even when orphaned. When the command exits, or this process gets SIGTERM (the
shell tool's time limit), or the agent that started it dies, it kills every process below it and exits.

What it cannot stop: a command that kills this process first (it runs as the same user). Only the sandbox
closes that (docs/protocol.md, section 3).

Standard library only, started with -I -S: it must run from any working directory, before any site setup.
"""

import ctypes
import os
import signal
import subprocess
import sys
from types import FrameType
from typing import NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class Stop(Exception):
    pass


def _stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise Stop


def descendants(root: int) -> list[int]:
    """Every process below `root` now, from the parent links in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])  # after the command name, which may hold spaces
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_all() -> None:
    """SIGKILL everything below us until nothing is left. Orphans of the killed come to us (we are their
    subreaper), so the loop also reaps them; it ends once a scan finds no descendant."""
    me = os.getpid()
    while True:
        pids = descendants(me)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            pass  # the rest are still someone else's zombies for a moment; the next scan sees them


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[argv.index("--") + 1 :]
    libc = ctypes.CDLL(None, use_errno=True)
    signal.signal(signal.SIGTERM, _stop)
    if (
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
        or libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0
    ):
        print(f"[supervisor: prctl failed: {os.strerror(ctypes.get_errno())}]", flush=True)
        return 125
    code = 137
    try:
        if os.getppid() != parent:  # the agent died before PDEATHSIG was set
            return code
        # A session of its own: a command that signals its own group does not reach this process.
        proc = subprocess.Popen(command, start_new_session=True)
        while True:
            pid, status = os.wait()  # our command, or an orphan of it that came to us
            if pid == proc.pid:
                code = os.waitstatus_to_exitcode(status)
                code = 128 - code if code < 0 else code
                break
    except Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kill_all()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
