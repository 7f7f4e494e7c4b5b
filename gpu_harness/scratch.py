"""Each evaluation's scratch folder (the child's log, output files, TMPDIR and HOME), and the sweep of those a
judge left when it was killed.

A judge removes its scratch folder when it closes its child. One killed outright (SIGKILL, the machine's
out-of-memory killer, a service restarted hard) cannot, and its folder stays in the temporary directory, with
whatever its child wrote there, up to the child's file-size limit per file. So each folder has an owner: a lock
file beside it (`<folder>.lock`, outside the folder, where a contained child cannot reach it), held with
`flock` by the judge's process for as long as the folder is in use. The kernel drops the lock when that process
ends, however it ends. A later judge sweeps, once per process, the folders whose lock it can take: their owner
is gone. A folder without a lock file is left alone unless it is older than `UNOWNED_AFTER_S` (a judge makes
the lock file right after the folder; an older one is a leftover from before the lock files).
"""

from __future__ import annotations

import fcntl
import functools
import glob
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

PREFIX = "kseek-eval-"
LOCK_SUFFIX = ".lock"
UNOWNED_AFTER_S = 3600.0
# a folder whose lock is free is swept only once it has been still this long: a judge takes its lock a moment
# after making the folder, and a sweep in that moment must not take the folder for a dead judge's
UNLOCKED_AFTER_S = 60.0


@dataclass
class ScratchFolder:
    """A scratch folder and the open, locked file that says its owner is alive."""

    path: str
    _lock_fd: int | None

    @classmethod
    def create(cls) -> ScratchFolder:
        sweep_once()
        path = tempfile.mkdtemp(prefix=PREFIX)
        fd = os.open(path + LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # just made, by this process: no one else holds it
        return cls(path, fd)

    def remove(self) -> None:
        """The folder, then its lock file; the lock goes last, so a sweeper never sees the folder unowned."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock_fd is not None:
            _unlink_quietly(self.path + LOCK_SUFFIX)
            os.close(self._lock_fd)
            self._lock_fd = None


@functools.cache
def sweep_once() -> int:
    """`sweep()` the first time a process asks for a scratch folder; how many it removed."""
    return sweep()


def sweep(folder: str | None = None, now: float | None = None) -> int:
    """Remove the scratch folders in `folder` (the temporary directory) whose owner is gone; how many."""
    folder = folder or tempfile.gettempdir()
    now = time.time() if now is None else now
    removed = 0
    for path in glob.glob(os.path.join(glob.escape(folder), PREFIX + "*")):
        if path.endswith(LOCK_SUFFIX) or os.path.islink(path) or not os.path.isdir(path):
            continue
        if _owner_gone(path, now):
            shutil.rmtree(path, ignore_errors=True)
            _unlink_quietly(path + LOCK_SUFFIX)
            removed += 1
    return removed


def _owner_gone(path: str, now: float) -> bool:
    """True when no live process holds `path`'s lock (taking it for a moment proves it) and the folder has been
    still for UNLOCKED_AFTER_S, or, with no lock file, for UNOWNED_AFTER_S."""
    try:
        still_s = now - os.stat(path).st_mtime
        fd = os.open(path + LOCK_SUFFIX, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return os.path.isdir(path) and still_s > UNOWNED_AFTER_S
    except OSError:  # not ours to judge (a link, another user's): leave it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its judge is alive
    finally:
        os.close(fd)
    return still_s > UNLOCKED_AFTER_S


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
