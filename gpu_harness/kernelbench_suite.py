"""A KernelBench level as a suite (`task import-kernelbench FOLDER`): the format's part of import_suite.py.

A problem is one `.py` file, in KernelBench's order (by its leading number, then name); its source is the file,
held in its task folder as problem.py; a hub download is refused before anything runs (kernelbench.hub_refusal).
docs/tasks.md, "Importing a KernelBench level as a suite", describes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .import_suite import (  # noqa: F401 (the names a caller of the KernelBench suite uses)
    CHECK_FAILED,
    IMPORTED,
    MANIFEST,
    REFUSED,
    UNCHECKED,
    Suite,
    SuiteFormat,
    available_memory,
    check_key,
)
from .import_suite import import_suite as _import_suite
from .kernelbench import PROBLEM_FILE, default_name, hub_refusal, import_kernelbench


def problem_files(folder: Path) -> list[Path]:
    """The folder's problem files in KernelBench's order (by their leading number, then name)."""

    def order(p: Path) -> tuple[int, int, str]:
        m = re.match(r"(\d+)", p.name)
        return (0, int(m.group(1)), p.name) if m else (1, 0, p.name)

    return sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=order)


def _held(folder: Path) -> bytes | None:
    held = folder / PROBLEM_FILE
    return held.read_bytes() if held.is_file() else None


def _import(path: Path, name: str, parent: Path, timeout_s: float) -> tuple[list[Any], bool]:
    done = import_kernelbench(path, name=name, parent=parent, timeout_s=timeout_s)
    return done.plan.notes, done.plan.cached


KERNELBENCH = SuiteFormat(
    name="kernelbench",
    command="python -m gpu_harness task import-kernelbench",
    problems=problem_files,
    default_name=default_name,
    source=lambda path: path.read_bytes(),
    held=_held,
    import_problem=_import,
    refused_at_once=hub_refusal,
)


def import_suite(source: Path, out: Path, jobs: int, timeout_s: float, progress: Callable[[str], None]) -> Suite:
    """Every problem file of `source` into `out` (import_suite.import_suite with the KernelBench format)."""
    return _import_suite(KERNELBENCH, source, out, jobs, timeout_s, progress)
