"""Reading a suite's manifest (suite.json, as `python -m gpu_harness task import-kernelbench` writes it), checked
whole before anything is stored: a malformed one is refused with what is wrong (ManifestError). No Django here.

The manifest's fields are docs/tasks.md's ("Importing a KernelBench level as a suite"); the dashboard reads the
suite's name, its source, an optional `format` (the benchmark: kernelbench when absent) and per problem its file,
task name, outcome, reason and scenarios, and keeps the whole manifest as it was read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpu_harness.kernelbench_suite import CHECK_FAILED, IMPORTED, MANIFEST, REFUSED, UNCHECKED

OUTCOMES = (IMPORTED, UNCHECKED, REFUSED, CHECK_FAILED)
# Outcomes whose folder holds a task (the dashboard links it when sync_tasks loaded it); a suite study runs only
# IMPORTED ones, whose task check passed.
HAS_TASK = (IMPORTED, UNCHECKED)
FORMATS = {"kernelbench": "KernelBench", "gpumode": "GPU MODE", "flashinfer": "FlashInfer"}
DEFAULT_FORMAT = "kernelbench"
# A level of KernelBench writes ~100 KB; far more is no manifest of ours.
MAX_BYTES = 16 * 2**20
MAX_PROBLEMS = 10_000
_TASK_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # gpu_harness.taskspec's rule for a folder task's name
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ManifestError(ValueError):
    """The manifest cannot be read as a suite: the message says where and what."""


@dataclass(frozen=True)
class ManifestProblem:
    file: str
    name: str
    outcome: str
    reason: str = ""
    scenarios: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Manifest:
    suite: str  # the source folder's name, as the importer wrote it (level1)
    source: str  # what it was imported from, for people (KernelBench level1)
    format: str
    problems: list[ManifestProblem]
    data: dict  # the manifest as read


def _text(entry: dict, key: str, where: str, *, required: bool = False, limit: int = 300) -> str:
    value = entry.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ManifestError(f"{where}: {key} must be a string, not {type(value).__name__}")
    if required and not value.strip():
        raise ManifestError(f"{where}: {key} is missing")
    if len(value) > limit:
        raise ManifestError(f"{where}: {key} has more than {limit} characters")
    return value


def _problem(entry, index: int) -> ManifestProblem:
    where = f"problems[{index}]"
    if not isinstance(entry, dict):
        raise ManifestError(f"{where}: each problem is an object, not {type(entry).__name__}")
    file = _text(entry, "file", where, required=True)
    where = f"problems[{index}] ({file})"
    outcome = _text(entry, "outcome", where, required=True)
    if outcome not in OUTCOMES:
        raise ManifestError(f"{where}: outcome {outcome!r} is none of {', '.join(OUTCOMES)}")
    name = _text(entry, "name", where, required=outcome in HAS_TASK, limit=80)
    if name and not _TASK_NAME.match(name):
        raise ManifestError(f"{where}: name {name!r} is no task name (lowercase letters, digits, _)")
    if outcome != IMPORTED and not _text(entry, "reason", where, limit=100_000).strip():
        raise ManifestError(f"{where}: an outcome of {outcome!r} needs its reason")
    sha = _text(entry, "sha256", where, limit=64)
    if sha and not _SHA256.match(sha):
        raise ManifestError(f"{where}: sha256 is not 64 lowercase hex digits")
    scenarios = entry.get("scenarios") or []
    if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
        raise ManifestError(f"{where}: scenarios must be a list of strings")
    return ManifestProblem(
        file=file, name=name, outcome=outcome, reason=entry.get("reason") or "", scenarios=list(scenarios)
    )


def parse_manifest(data, default_name: str = "") -> Manifest:
    """The manifest of a suite from its parsed JSON; ManifestError for anything that is not one."""
    if not isinstance(data, dict):
        raise ManifestError(f"the manifest is a JSON object, not {type(data).__name__}")
    fmt = _text(data, "format", "format", limit=40) or DEFAULT_FORMAT
    if fmt not in FORMATS:
        raise ManifestError(f"format {fmt!r} is none of {', '.join(FORMATS)}")
    suite = _text(data, "suite", "suite", limit=200) or default_name
    problems = data.get("problems")
    if not isinstance(problems, list) or not problems:
        raise ManifestError("problems must be a non-empty list")
    if len(problems) > MAX_PROBLEMS:
        raise ManifestError(f"{len(problems)} problems: a suite holds at most {MAX_PROBLEMS}")
    parsed = [_problem(entry, i) for i, entry in enumerate(problems)]
    _distinct([p.file for p in parsed], "file")
    _distinct([p.name for p in parsed if p.outcome in HAS_TASK], "task name")
    return Manifest(suite=suite, source=f"{FORMATS[fmt]} {suite}".strip(), format=fmt, problems=parsed, data=data)


def _distinct(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ManifestError(f"two problems have the {what} {value!r}")
        seen.add(value)


def read_manifest(folder: Path) -> Manifest:
    """The manifest of the suite in `folder` (FOLDER/suite.json)."""
    path = Path(folder) / MANIFEST
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ManifestError(f"{path}: larger than {MAX_BYTES // 2**20} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ManifestError(f"{path}: cannot be read: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:
        raise ManifestError(f"{path}: not JSON: {error}") from None
    try:
        return parse_manifest(data, default_name=Path(folder).name)
    except ManifestError as error:
        raise ManifestError(f"{path}: {error}") from None
