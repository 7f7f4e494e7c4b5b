"""The candidate's process in a sandbox of its own (bubblewrap), so that what its native code does outside the
checked symbols reaches nothing the harness keeps.

The symbol allowlist (depcheck.py) decides what a kernel may *import*; it cannot stop native code from calling a
function it never imported: `system`'s address is `printf`'s plus a constant of the host's libc. With it, a
kernel of allowlisted imports ran commands in the child: it rewrote the cached builds the next evaluations load
(the naive baseline among them), killed the judging parent, and left a process running after its evaluation
(an outside test found all three). Contained here, the child:

- sees the file system read-only, but for its scratch folder (its log, its output files, its TMPDIR): the build
  cache and everything else the harness reads cannot be written;
- runs in PID, IPC, UTS and network namespaces of its own: it cannot see or signal the parent or any other
  process, and reaches no network; whatever it starts dies with it (the namespace's first process dies with the
  child's bubblewrap, which dies with the parent's kill);
- keeps the pipes the parent passed it (messages and commands), its environment and its working directory.

A task's child is contained wherever a working `bwrap` is found, a GPU task's too: its sandbox then holds the GPUs'
device nodes, and the parent and the child share device memory through CUDA IPC across the namespaces. On a GPU
(docs/harness.md, "Threat model"): CUDA IPC with the parent and the eager baseline (an H200), the library
baselines' caches in the scratch folder (runner.CACHE_FOLDERS; an H100) and a task's cheats (12/12 rejected, an
H100) all hold contained, all on 2026-12-05, QuACK (CuTe DSL) as a baseline on 2026-12-06 (an H100), and
flash-attn-4 on 2026-12-07 (an H100), once its compile cache was the child's own (runner.cache_folder: the
harness's is read-only here, and flash-attn-4 did not import pointed at it). FA3's times are longer contained
(docs/harness.md); where a library fails here, its figure is n/a with the child's note, never a figure.
`KSEEK_CHILD_SANDBOX_GPU=0` runs a GPU task's child uncontained, as the harness's user. Each verdict says which (`child_sandbox`).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import stat
import subprocess
from typing import BinaryIO

BUBBLEWRAP = "bubblewrap"
NONE = "none"
_NAMESPACES = [
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-net",
]


def _base(bwrap: str) -> list[str]:
    return [bwrap, *_NAMESPACES, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]


@functools.cache
def working_bwrap() -> str | None:
    """bubblewrap's path where it can make these namespaces here (probed once per process), else None."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run([*_base(path), "--", "true"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return path if probe.returncode == 0 else None


GPU_OPT_OUT = "KSEEK_CHILD_SANDBOX_GPU"


def sandbox_for(target: str) -> str:
    """Where a task's candidate runs (`child_sandbox` of its verdicts): `bubblewrap` where it works, but for a
    GPU task with `KSEEK_CHILD_SANDBOX_GPU=0`; `none` otherwise."""
    wanted = target == "cpu" or os.environ.get(GPU_OPT_OUT) != "0"
    return BUBBLEWRAP if wanted and working_bwrap() is not None else NONE


def contained(argv: list[str], workdir: str) -> list[str]:
    """`argv` run inside the child's sandbox, `workdir` (which must exist) its only writable folder; the GPUs'
    device nodes (none on a host without the driver) are in its minimal /dev."""
    bwrap = working_bwrap()
    if bwrap is None:
        raise RuntimeError("no working bubblewrap to contain the candidate's process")
    folder = os.path.realpath(workdir)
    devices = [arg for node in sorted(glob.glob("/dev/nvidia*")) for arg in ("--dev-bind", node, node)]
    return [*_base(bwrap), *devices, "--bind", folder, folder, "--chdir", folder, "--", *argv]


def open_regular_file(path: str | os.PathLike[str], name: str, follow_links: bool = True) -> BinaryIO:
    """`path` opened for reading as a regular file, or OSError saying `name` is not one: a FIFO opens without
    waiting for a writer and is then refused, as are a directory, a socket and a device (/dev/zero would feed a
    read without end). With `follow_links` False, a link at the last component is refused as well."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise OSError(f"{name} is not a regular file (a directory, FIFO, socket or device)")
    return f


def open_scratch_file(path: str) -> BinaryIO:
    """`path`, a file of the child's scratch folder, opened for reading as a regular file, or OSError. The child
    can write that folder (its native code can call any libc function): a name it made a FIFO would block the
    judge's open() for ever, a link to /dev/zero would feed it without end. So no link is followed at the last
    component, and anything but a regular file is refused (open_regular_file)."""
    return open_regular_file(path, os.path.basename(path), follow_links=False)
