"""A released kernel's development run: the trace its lab kept (release.toml `development_trace`, the harness's
`--trace` lines of every evaluation made on the way, each with the question asked then as its note) imported once
as a run and linked to the kernel, so that the kernel's page shows how it got there. The run is an imported one:
its figures are the trace's claims, never verified ones (gpu_harness.figures.standing)."""

import hashlib
import lzma
from pathlib import Path
from typing import cast

from runs.models import Kernel, Run
from runs.services.errors import ServiceError
from runs.services.trace_import import imported_text, trace_import


def read_trace_lines(path: Path) -> list[str]:
    """The trace's lines, from a plain file or an xz one (several xz streams, one per device call, read as one)."""
    opener = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as trace:
            return trace.readlines()
    except (OSError, EOFError, lzma.LZMAError, UnicodeDecodeError) as error:
        raise ServiceError(f"cannot read {path.name}: {error}") from None


def development_trace_name(path_text: str, lines: list[str]) -> str:
    """The name its run is imported under: the path release.toml gives and the content's digest, so that loading
    the same trace again finds its run, and a trace that grew (a new version tried) is imported anew."""
    digest = hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()
    return f"{path_text} (sha256 {digest[:12]})"


def kernel_development_link(*, kernel: Kernel, lines: list[str], name: str) -> tuple[Run, bool]:
    """Link `kernel` to the run imported from `lines` under `name` (development_trace_name), importing them only
    where no run was imported under that name before. Returns the run and whether it was imported now.
    ServiceError when the trace cannot be imported (nothing of it is stored)."""
    run = Run.objects.filter(imported_from=imported_text(name, {})).order_by("pk").first()
    imported = run is None
    if imported:
        run = trace_import(lines=lines, name=name)
    Kernel.objects.filter(pk=kernel.pk).update(development_run=run)
    return cast(Run, run), imported  # (found, or imported just now)
