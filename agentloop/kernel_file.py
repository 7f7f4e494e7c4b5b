"""The one reader of a kernel file for the harness: the evaluate tool, the loop's own goal checks (after a quick
verdict, at the end of a turn, on resume) and the evaluator's snapshot all read a kernel through it.

The file is the model's: its shell may have made it a symbolic link (to /proc/self/environ, to a file of a folder
the sandbox hides), a FIFO, a device or a sparse file of 64 GiB. The agent's process reads it outside the sandbox,
with the agent's environment and view of the disk, and what it reads goes into the trace as the verdict's
`kernel_source`. So the name is resolved inside the workspace as the editor resolves it; a name that is or lies
behind a symbolic link is refused; the file is opened with O_NOFOLLOW | O_NONBLOCK (a link swapped in at the last
moment fails, a FIFO opens without waiting for a writer) and judged by fstat of what was opened: a regular file,
within the protocol's limit on a kernel source; and at most limit + 1 bytes are read. What the harness judges is
a snapshot of exactly those bytes (`snapshot`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES, kernel_source_refusal
from agentloop.tools import ToolInputError


class KernelFileError(ToolInputError):
    """The kernel file cannot be judged; the message says why, in words the model reads."""


@dataclass(frozen=True)
class KernelFile:
    name: str  # as the model (or the run's config) named it
    path: Path  # where it is in the workspace
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def read_regular_file(path: Path, name: str) -> bytes:
    """The bytes of the regular file at `path` (`name` in messages), never following a link at its last component,
    never waiting on a FIFO, never reading more than the protocol's limit on a kernel source + 1 bytes. KernelFileError
    otherwise."""
    limit = KERNEL_SOURCE_MAX_BYTES
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise KernelFileError(f"no file {name} in the workspace") from None
    except OSError as exc:  # ELOOP: a symbolic link; ENXIO: a socket; ...
        if os.path.islink(path):
            raise KernelFileError(_LINK.format(name=name)) from None
        raise KernelFileError(f"{name} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KernelFileError(f"{name} is not a regular file (a directory, FIFO, socket or device): not evaluated")
        if info.st_size > limit:
            raise KernelFileError(_too_large(name, info.st_size))
        chunks, size = [], 0
        while size <= limit:
            chunk = f.read(limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > limit:  # it grew after fstat
        raise KernelFileError(_too_large(name, size))
    return b"".join(chunks)


def read_kernel(resolve: Callable[[str], Path], workspace: Path, name: str) -> KernelFile:
    """The kernel file `name` of the workspace, as the harness is to judge it. `resolve` is the editor's (inside
    the workspace, or ToolInputError). A name that is, or lies behind, a symbolic link is refused: its resolved
    path must be the path the name spells."""
    path = resolve(name)
    if path != Path(os.path.normpath(workspace / name)):
        raise KernelFileError(_LINK.format(name=name))
    return KernelFile(name, path, read_regular_file(path, name))


@contextlib.contextmanager
def snapshot(kernel: KernelFile) -> Iterator[Path]:
    """A private copy of the bytes read, under the kernel's own file name, for as long as the harness needs it:
    nothing the model does to the workspace meanwhile changes what is judged."""
    with tempfile.TemporaryDirectory(prefix="kseek-kernel-") as tmp:
        path = Path(tmp) / kernel.path.name
        path.write_bytes(kernel.data)
        yield path


_LINK = "{name} is a symbolic link, or lies behind one: not evaluated. Evaluate a regular file of your workspace"


def _too_large(name: str, size: int) -> str:
    return f"{name} is not evaluated: {kernel_source_refusal(size)}; make the file smaller"
