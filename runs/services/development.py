"""A released kernel's development run: the trace its lab kept (release.toml `development_trace`, the harness's
`--trace` lines of every evaluation made on the way, each with the question asked then as its note) imported once
as a run and linked to the kernel, so that the kernel's page shows how it got there. The run is an imported one:
its figures are the trace's claims, never verified ones (gpu_harness.figures.standing)."""

import hashlib
import lzma
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple, cast

from django.conf import settings

from runs.models import Kernel, Run
from runs.services.errors import ServiceError
from runs.services.trace_import import imported_text, trace_import

# How much of the decompressed trace one read takes: a line longer than this is read in pieces, so memory never
# holds more than one piece, whatever the file unpacks to.
_READ_BYTES = 2**20


class DevelopmentTrace(NamedTuple):
    """A development trace decompressed into a temporary file (read again from its start by the import, line by
    line, never held whole) and the sha256 of its bytes."""

    file: IO[bytes]
    sha256: str


@contextmanager
def development_trace_read(path: Path) -> Iterator[DevelopmentTrace]:
    """The trace at `path`, plain or xz (several xz streams, one per device call, read as one), decompressed piece
    by piece into a temporary file under the trace upload's limit (KSEEK_TRACE_UPLOAD_MAX_BYTES, applied to the
    decompressed bytes as they come: a small xz file that unpacks to more is refused at the limit, unread beyond
    it). ServiceError, naming the file, for one over the limit or one that cannot be read."""
    limit = settings.KSEEK_TRACE_UPLOAD_MAX_BYTES
    opener = lzma.open if path.suffix == ".xz" else open
    with tempfile.TemporaryFile() as copy:
        digest, size = hashlib.sha256(), 0
        try:
            with opener(path, "rb") as trace:
                while piece := trace.readline(min(_READ_BYTES, limit - size + 1)):
                    size += len(piece)
                    if size > limit:
                        raise ServiceError(
                            f"{path.name} is over the limit of a trace: more than {limit:,} bytes once decompressed "
                            f"(KSEEK_TRACE_UPLOAD_MAX_BYTES={limit})"
                        )
                    digest.update(piece)
                    copy.write(piece)
        except (OSError, EOFError, lzma.LZMAError) as error:
            raise ServiceError(f"cannot read {path.name}: {error}") from None
        copy.seek(0)
        yield DevelopmentTrace(copy, digest.hexdigest())


def development_trace_name(path_text: str, sha256: str) -> str:
    """The name its run is imported under: the path release.toml gives and the content's digest (of its
    decompressed bytes), so that loading the same trace again finds its run, and a trace that grew (a new version
    tried) is imported anew."""
    return f"{path_text} (sha256 {sha256[:12]})"


def kernel_development_link(*, kernel: Kernel, lines: IO[bytes] | list[str], name: str) -> tuple[Run, bool]:
    """Link `kernel` to the run imported from `lines` under `name` (development_trace_name), importing them only
    where no run was imported under that name before. Returns the run and whether it was imported now.
    ServiceError when the trace cannot be imported (nothing of it is stored)."""
    run = Run.objects.filter(imported_from=imported_text(name, {})).order_by("pk").first()
    imported = run is None
    if imported:
        run = trace_import(lines=lines, name=name)
    Kernel.objects.filter(pk=kernel.pk).update(development_run=run)
    return cast(Run, run), imported  # (found, or imported just now)
