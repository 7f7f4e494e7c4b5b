"""What every importer of a shared problem format does the same way (KernelBench, gpu-mode, FlashInfer-Bench).

Each format has its own parser and probe (kernelbench.py, gpumode.py, flashinfer.py); they share here: running
the problem's code in a child process with a time limit, its report cached by what it is a function of
(run_probe); the ABI's names (c_name); the folder written under a temporary name, checked with load_spec and
renamed into place, so a refusal leaves nothing behind (write_task_folder); the [tolerance] rule from the
reference's own error against the same problem computed in float64 (tolerance_lines); and TOML values (toml).
The defences every imported task applies at run time are in imported_inputs.py. docs/tasks.md describes each
format's import.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .taskspec import MAX_SCENARIO_BYTES, NAME_RE, TaskSpecError, load_spec, reserved_by

PROBE_TIMEOUT_S = 300.0
# the unit roundoff of each float dtype: the tolerance's size term uses the problem's lowest precision
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


class ProblemImportError(ValueError):
    """The problem cannot be imported; the message says why (the CLI prints it and exits 2)."""


def torch_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "none"


# ---- running a probe ------------------------------------------------------------------------------------------


def probe_key(probe: Path, *sources: bytes) -> str:
    """A probe's report is a function of these alone: the problem's sources, the probe's own code (and the
    defences it decides on), torch's version, Python's, and a task's limit on a scenario's tensors."""
    h = hashlib.sha256()
    defences = Path(__file__).with_name("imported_inputs.py").read_bytes()
    for part in (*sources, probe.read_bytes(), defences, torch_version().encode(),
                 platform.python_version().encode(), str(MAX_SCENARIO_BYTES).encode()):  # fmt: skip
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def _probe_cache(kind: str, key: str) -> Path:
    from .build import cache_dir

    return cache_dir() / f"{kind}-probe" / f"{key}.json"


def _store(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(report))
    os.replace(tmp, path)


def run_probe(
    probe: Path, argv: list[str], sources: list[bytes], what: str, timeout_s: float, cache: bool = True,
    error: type[Exception] = ProblemImportError,
) -> dict[str, Any]:  # fmt: skip
    """The report of `python -P PROBE *argv RESULT.json` (the problem's code runs there, CPU only), or `error`
    naming what went wrong. A report (or a refusal that follows from the problem alone, "cacheable") is cached
    under probe_key of the sources: the same problem is not run again; the report then says "cached": true."""
    kind = probe.stem.removesuffix("_probe")
    cached = _probe_cache(kind, probe_key(probe, *sources)) if cache else None
    try:
        report = {**json.loads(cached.read_text()), "cached": True} if cached else None
    except (OSError, ValueError):
        report = None
    if report is None:
        report = _run_child(probe, argv, what, timeout_s, error)
        if cached and (report.get("ok") or report.get("cacheable")):
            _store(cached, report)
    if not report.get("ok"):
        raise error(report.get("error") or f"{what} cannot be imported")
    return report


def _run_child(probe: Path, argv: list[str], what: str, timeout_s: float, error: type[Exception]) -> dict[str, Any]:
    from .procs import run_bounded

    with tempfile.TemporaryDirectory(prefix=f"kseek-{probe.stem}-") as work:
        out = Path(work) / "probe.json"
        # CPU only (a probe learns shapes, it times nothing); -P: the probe's folder is not on sys.path
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        # this checkout's harness, where a generated reference.py it runs imports gpu_harness.imported_inputs
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-P", str(probe), *argv, str(out)]
        done = run_bounded(cmd, timeout_s, cwd=work, env=env)
        if done.timed_out:
            raise error(
                f"{what} did not finish within {timeout_s:g} s (importing it and running it on CPU at reduced "
                "sizes): it hangs, or needs a longer --timeout"
            )
        if not out.is_file():
            tail = "\n".join((done.stderr or "").strip().splitlines()[-5:])
            killed = " (killed: out of memory?)" if done.returncode == -9 else ""
            raise error(f"{what}: the probe process died (exit {done.returncode}){killed}: {tail}")
        report: dict[str, Any] = json.loads(out.read_text())
        return report


# ---- names -----------------------------------------------------------------------------------------------------


def c_name(base: str, taken: set[Any]) -> str:
    """`base` as a C identifier no other argument has and no C or Python word is (a suffix _2, _3 where taken)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", base) or "arg"
    if name[0].isdigit():
        name = "_" + name
    candidate, n = name, 1
    while candidate in taken or reserved_by(candidate):
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate


def task_name(stem: str, prefix: str) -> str:
    """A task's name from a problem's: lowercase letters, digits and _, starting with a letter (`prefix`_ in front
    where it would not)."""
    name = re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")
    return name if re.match(r"^[a-z]", name) else f"{prefix}_{name}".rstrip("_")


# ---- writing the folder ----------------------------------------------------------------------------------------


def check_destination(parent: Path, name: str, error: type[Exception] = ProblemImportError) -> Path:
    """`parent/name`, or `error` when the name is not a task's or the folder exists (said before anything runs)."""
    if not NAME_RE.match(name):
        raise error(f"task name {name!r}: use lowercase letters, digits and _ (it names a C symbol)")
    folder = parent / name
    if folder.exists():
        raise error(f"{folder} already exists")
    return folder


def write_task_folder(
    parent: Path, name: str, files: dict[str, Any], error: type[Exception] = ProblemImportError
) -> Path:
    """Write `parent/name` holding `files` (relative path -> text or bytes; task.toml among them): staged beside
    it under `.NAME.importing-*`, checked with load_spec, then renamed into place, so that a failure leaves
    nothing behind; `error` when the name is not a task's, the folder exists or the written one is not valid."""
    folder = check_destination(parent, name, error)
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.importing-", dir=parent))
    try:
        staged = work / name  # load_spec reads the task's name from its folder's
        for rel, content in files.items():
            path = staged / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        try:
            load_spec(staged)
        except TaskSpecError as e:  # the importer's own fault: say so rather than leave a broken folder
            raise error(f"the folder written for {name} is not a valid task: {e}") from None
        if folder.exists():
            raise error(f"{folder} already exists")
        os.rename(staged, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def toml(value: object) -> str:
    """A TOML value: strings as JSON strings (a subset of TOML's basic strings), numbers, lists, tables."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


# ---- the tolerance ---------------------------------------------------------------------------------------------

# [tolerance] of an imported problem: factor x the reference's own error (its distance from the same problem
# computed in float64, on the same inputs, at the problem's size) + a floor per scenario, at most KernelBench's
# own 1e-2. The floor is the larger of MIN_FLOOR (an elementwise op whose float64 result rounds to the
# reference's: another correct evaluation, a fast exp) and PER_TERM x u x sqrt(terms summed per output element):
# a plain kernel's sequential float32 sum is that much further from the truth than a library's blocked one
# (KernelBench level 1 #6, K = 524,288 of torch.rand products: a tiled SGEMM 4.3e-5 from cuBLAS on an H200; here a
# sequential sum 4.47e-5 = 1.04 u sqrt(K) from float64, the CPU's float32 matmul 2.1e-7), so 4 leaves it room.
TOLERANCE = {"factor": 2.0, "default_error": 1e-4, "ceiling": 1e-2}
MIN_FLOOR = 1e-5
PER_TERM = 4.0


def scenario_floor(terms: int, unit_roundoff: float) -> float:
    """The floor of a scenario whose output elements each sum `terms` products at `unit_roundoff`."""
    return float(f"{max(MIN_FLOOR, PER_TERM * unit_roundoff * math.sqrt(terms)):.3g}")


def unit_roundoff(dtypes: Iterable[str]) -> float:
    """The unit roundoff of the lowest float precision among `dtypes` (float32's where none is a float)."""
    return max((UNIT_ROUNDOFF[d] for d in dtypes if d in UNIT_ROUNDOFF), default=UNIT_ROUNDOFF["float32"])


def reduction_terms(flops: int, output_elements: int, largest: int) -> int:
    """How many terms one output element sums, at most: the counted flops per output element, halved (a matmul's
    K), or where none are counted the largest tensor's elements per output element (a row's length; 1
    elementwise)."""
    outputs = max(1, output_elements)
    if flops > 0:
        return max(1, round(flops / (2 * outputs)))
    return max(1, largest // outputs)


def tolerance_lines(
    case_key: str, cases: list[Any], terms: list[Any], u: float, baselines: tuple[Any, ...], reference: str
) -> list[Any]:
    """[tolerance]: twice the reference's own error (`baselines[0]`, the problem in float64; the second where it
    cannot run) + a floor per scenario (`cases`, `terms` summed per output element), at most 1e-2."""
    floors: dict[str, Any] = {}  # a case's floor: its largest scenario's (gpu-mode's cases, test and bench, repeat)
    for case, n in zip(cases, terms, strict=True):
        floors[case] = max(floors.get(case, 0.0), scenario_floor(n, u))
    said = ", ".join(f"{case} {n}" for case, n in zip(cases, terms, strict=True))
    return [
        f"# Twice {reference}'s own relative L2 error (its distance from the same problem computed in float64 on",
        f"# seed a's inputs; {baselines[1]}'s where float64 cannot run it) + a floor per scenario: the larger of",
        f"# {MIN_FLOOR:g} and {PER_TERM:g} x u x sqrt(terms summed per output element), since a plain kernel's sequential",
        "# float32 sum is that much further from the truth than a library's blocked one; at most KernelBench's own",
        f'# {TOLERANCE["ceiling"]:g} (docs/tasks.md, "Importing a KernelBench problem"). u = {u:.3g};',
        f"# terms per output element: {said}.",
        "[tolerance]",
        f"baseline = {toml(list(baselines))}",
        'measure = "once"',
        f"factor = {TOLERANCE['factor']!r}",
        f"floor = {toml({'by': case_key, **floors})}",
        f"default_error = {TOLERANCE['default_error']!r}",
        f"ceiling = {TOLERANCE['ceiling']!r}",
    ]


DEFENCES_COMMENT = [
    '# What it is judged against (docs/tasks.md, "What an imported problem is judged against"): the tolerance',
    "# from the reference's own error against the problem in float64 ([tolerance]); the float inputs listed in",
    "# SCALED (reference.py) given as x * s + b, s and b drawn from the judge's seed per input and scenario, so a",
    "# copy cannot pass as a normalisation; the names a reference is given compared strictly (a missing or an",
    "# extra weight or input is refused).",
]
