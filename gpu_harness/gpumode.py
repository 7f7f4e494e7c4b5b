"""`python -m gpu_harness task import-gpumode FOLDER`: a gpu-mode reference-kernels problem as a cuda-sm90 task.

A problem is a folder holding task.yml (`files`, `tests`, `benchmarks`, `description`, ...) and the files it names:
reference.py (`ref_kernel(data)`, `generate_input(**test, seed)`, `check_implementation(data, output)`) and those
it imports (task.py, utils.py, named with their sources, `../utils.py`). read_problem parses task.yml and gathers
the files; gpumode_probe.py runs them in a child process (the problem is code) and says what generate_input's data
and ref_kernel's outputs are at each scenario (a test or a benchmark, its arguments but the seed); plan_task makes
the ABI (the data's inputs, ref_kernel's outputs, one int64 per size) and write_task writes the folder:
task.toml, reference.py (tables, gpumode_runtime.py does the work) and problem/ (the files, copied unchanged).
A folder of problems is a suite (SUITE). docs/tasks.md, "Importing a gpu-mode problem", describes the mapping and
what is refused.
"""

from __future__ import annotations

import ast
import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import problem_import
from .import_suite import SuiteFormat
from .problem_import import (
    DEFENCES_COMMENT,
    PROBE_TIMEOUT_S,
    ProblemImportError,
    c_name,
    reduction_terms,
    task_name,
    tolerance_lines,
    toml,
    unit_roundoff,
)
from .taskspec import MAX_SCENARIO_BYTES

TASK_YML = "task.yml"
PROBLEM_DIR = "problem"  # the task folder's copy of the problem's files
PROBE = Path(__file__).with_name("gpumode_probe.py")
SKIPPED_SOURCES = ("@SUBMISSION@",)  # task.yml's files that are not the problem's: the submission, the runner
CASE_SYMBOL, FLOPS_SYMBOL = "case", "gm_flops"
SYMBOL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class GpuModeImportError(ProblemImportError):
    """The problem cannot be imported; the message says why."""


# ---- reading the problem ---------------------------------------------------------------------------------------


@dataclass
class Source:
    folder: Path
    yml: dict[str, Any]
    files: dict[str, Any]  # name in the task's problem/ -> bytes (task.yml and reference.py among them)
    cases: list[Any]  # [{"case": "test" | "bench", "args": {...}}], duplicates dropped
    notes: list[Any] = field(default_factory=list)


def _yaml(path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError:
        raise GpuModeImportError("task import-gpumode reads task.yml with PyYAML: pip install pyyaml") from None
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise GpuModeImportError(f"{path}: not YAML: {e}") from None
    if not isinstance(data, dict):
        raise GpuModeImportError(f"{path}: a mapping of fields is due (files, tests, ...)")
    return data


def files_root(folder: Path) -> Path:
    """The folder a problem's file sources must lie in: its repository's (the nearest folder above it holding
    .git), else the one above it (gpu-mode's problems share `../utils.py`). A task.yml is the downloaded problem's
    word: a source it names anywhere else (`../../../.ssh/id_rsa`, `/etc/...`, a link out) would be copied into
    the task, where the agent reads it and a shared task carries it."""
    folder = folder.resolve()
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            return parent
    return folder.parent


def read_problem(folder: Path) -> Source:
    """task.yml parsed and its files gathered, or GpuModeImportError naming what is missing or unsupported."""
    folder = Path(folder)
    if not (folder / TASK_YML).is_file():
        raise GpuModeImportError(f"{folder}: no {TASK_YML} (a gpu-mode problem is a folder with task.yml)")
    yml = _yaml(folder / TASK_YML)
    where = f"{folder.name}/{TASK_YML}"
    if yml.get("multi_gpu"):
        raise GpuModeImportError(f"{where}: multi_gpu: a task runs on one GPU")
    entries = yml.get("files")
    if not isinstance(entries, list) or not entries:
        raise GpuModeImportError(f"{where}: no files field (the list of {{name, source}} the problem is made of)")
    files = {TASK_YML: (folder / TASK_YML).read_bytes()}
    runner = (yml.get("config") or {}).get("main") if isinstance(yml.get("config"), dict) else None
    root = files_root(folder)
    for e in entries:
        if not isinstance(e, dict) or not {"name", "source"} <= set(e):
            raise GpuModeImportError(f"{where}: files: each entry has a name and a source, not {e!r}")
        if e["source"] in SKIPPED_SOURCES or e["name"] == runner:
            continue
        source = (folder / str(e["source"])).resolve()
        if not source.is_file():
            raise GpuModeImportError(f"{where}: files: {e['name']}'s source {e['source']} is not there")
        if not source.is_relative_to(root):
            raise GpuModeImportError(
                f"{where}: files: {e['name']}'s source {e['source']} is outside {root} (the problem's repository, "
                "or the folder above the problem where it is in none): a task copies the problem's own files only"
            )
        if not re.match(r"^[A-Za-z0-9_.-]+\.py$", str(e["name"])):
            raise GpuModeImportError(f"{where}: files: {e['name']!r} is not a Python file's name")
        files[str(e["name"])] = source.read_bytes()
    if "reference.py" not in files:
        raise GpuModeImportError(f"{where}: files names no reference.py (ref_kernel, generate_input, ...)")
    cases, notes = _cases(yml, where)
    return Source(folder, yml, files, cases, notes)


def _cases(yml: dict[str, Any], where: str) -> tuple[list[Any], list[Any]]:
    tests = yml.get("tests")
    if not isinstance(tests, list) or not tests:
        raise GpuModeImportError(f"{where}: no tests (each a mapping of generate_input's arguments and a seed)")
    benchmarks = yml.get("benchmarks") or []
    cases: list[Any] = []
    seen: dict[Any, str] = {}
    notes: list[str] = []
    for kind, entries in (("test", tests), ("bench", benchmarks)):
        for k, entry in enumerate(entries):
            if not isinstance(entry, dict) or "seed" not in entry:
                raise GpuModeImportError(f"{where}: {kind} {k + 1} is {entry!r}: a mapping with a seed is due")
            args = {a: v for a, v in entry.items() if a != "seed"}
            for a, v in args.items():
                if not SYMBOL_RE.match(str(a)) or not isinstance(v, (int, float, str, bool)):
                    raise GpuModeImportError(f"{where}: {kind} {k + 1}: argument {a!r} = {v!r} is not a name = number")
            key = json.dumps(args, sort_keys=True)
            if key in seen:
                notes.append(f"{kind} {k + 1} repeats {seen[key]}'s arguments (another seed): one scenario")
                continue
            seen[key] = f"{kind} {k + 1}"
            cases.append({"case": kind, "args": args})
    names = [sorted(c["args"]) for c in cases]
    if any(n != names[0] for n in names):
        raise GpuModeImportError(f"{where}: the tests and benchmarks do not all give the same arguments")
    return cases, notes


def source_bytes(folder: Path) -> bytes:
    """What an import of the problem is a function of: its files, each by name (the suite's sha256)."""
    files = read_problem(folder).files
    return b"".join(name.encode() + b"\0" + data + b"\0" for name, data in sorted(files.items()))


def held_bytes(task: Path) -> bytes | None:
    """The same of the copy a task folder holds in problem/ (None where it holds none)."""
    held = task / PROBLEM_DIR
    if not (held / TASK_YML).is_file():
        return None
    files = {p.name: p.read_bytes() for p in held.iterdir() if p.is_file()}
    return b"".join(name.encode() + b"\0" + data + b"\0" for name, data in sorted(files.items()))


def data_names(reference: bytes) -> list[str]:
    """The names generate_input's last `return a, b, c` gives its data items (`in<k>` where an item is no name)."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "generate_input":
            returns = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
            value = returns[-1].value if returns else None
            elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
            return [e.id.lower() if isinstance(e, ast.Name) else f"in{k}" for k, e in enumerate(elts)]
    return []


# ---- the plan ---------------------------------------------------------------------------------------------------


@dataclass
class Tensor:
    name: str
    role: str  # input, output, buffer (an output's, in the data), unused
    dtype: str  # the problem's (bool: uint8 in the ABI)
    shapes: list[Any]  # per scenario
    dims: list[Any] = field(default_factory=list)


@dataclass
class Plan:
    name: str
    folder: str
    description: str
    tensors: list[Any]
    data: list[Any]  # (role, name) per data item: input, output, scalar, unused
    container: str
    outputs: list[Any]
    scalars: list[Any]  # {name, dtype, value}
    scenarios: list[Any]
    quick: list[Any]
    id_template: str
    test_args: list[Any]
    scaled: list[Any]
    notes: list[Any]
    terms: list[Any]
    unit_roundoff: float
    cached: bool = False

    def of(self, *roles: str) -> list[Any]:
        return [t for t in self.tensors if t.role in roles]


def plan_task(source: Source, report: dict[str, Any], name: str) -> Plan:
    """The task from the probe's report: each data item's role and ABI name, each dimension named (a test
    argument whose values it has, a number, or a symbol of its own), the scenarios."""
    scen = report["scenarios"]
    first = scen[0]["obs"]
    roles = report["roles"]
    taken: set[Any] = set()
    given = data_names(source.files["reference.py"])
    tensors, data = [], []
    outs = first["outputs"]
    out_names = [c_name("out" if len(outs) == 1 else f"out{j}", set()) for j in range(len(outs))]
    buffer_of = {}
    for j, k in first["returned"].items():
        if k is not None:
            buffer_of[k] = int(j)
    for k, d in enumerate(first["data"]):
        base = given[k] if len(given) == len(first["data"]) else f"in{k}"
        if roles[k] == "scalar":
            data.append(("scalar", c_name(base, taken)))
            continue
        shapes = [s["obs"]["data"][k]["shape"] for s in scen]
        if roles[k] == "output":
            j = buffer_of.get(k)
            if j is None:  # not returned: the output of its shape and dtype
                j = next(j for j, o in enumerate(outs) if o["shape"] == d["shape"] and o["dtype"] == d["dtype"])
            out_names[j] = c_name(base, taken)
            data.append(("output", out_names[j]))
            continue
        abi = c_name(base if roles[k] == "input" else f"unused{k}", taken)
        tensors.append(Tensor(abi, roles[k], d["dtype"], shapes))
        data.append((roles[k], abi))
    for j, o in enumerate(outs):
        if out_names[j] not in taken:
            out_names[j] = c_name(out_names[j], taken)
        tensors.append(Tensor(out_names[j], "output", o["dtype"], [s["obs"]["outputs"][j]["shape"] for s in scen]))
    test_args = sorted(source.cases[0]["args"])
    reserved = set(test_args)
    case_key, flops_key = _free(CASE_SYMBOL, reserved), _free(FLOPS_SYMBOL, reserved)
    symbols = _name_dims(tensors, scen, test_args, taken | {case_key, flops_key})
    scalars = [{"name": c_name(sym, taken), "dtype": "int64", "value": sym} for sym in symbols]
    scalars += _data_scalars(data, scen, test_args)
    scenarios, terms = [], []
    for k, s in enumerate(scen):
        params = {case_key: s["case"], **s["args"], **{sym: v[k] for sym, v in symbols.items()}}
        params.update({sc["name"]: sc["values"][k] for sc in scalars if "values" in sc})
        sizes = [math.prod(t.shapes[k]) for t in tensors]
        out_elems = sum(math.prod(t.shapes[k]) for t in tensors if t.role == "output")
        params[flops_key] = s["obs"]["flops"] or max(sizes, default=1) or 1
        terms.append(reduction_terms(s["obs"]["flops"], out_elems, max(sizes, default=1)))
        scenarios.append(params)
    template = "{" + case_key + "}" + "".join(f"_{a}{{{a}}}" for a in test_args)
    quick = [template.format(**p) for p in scenarios if p[case_key] == "test"]
    scaled = [data[k][1] for k in report.get("scaled", [])]
    description = " ".join(str(source.yml.get("description") or "").split()) or f"gpu-mode {source.folder.name}"
    return Plan(
        name=name,
        folder=source.folder.name,
        description=description[:300],
        tensors=tensors,
        data=data,
        container=first["container"],
        outputs=out_names,
        scalars=scalars,
        scenarios=scenarios,
        quick=quick,
        id_template=template,
        test_args=test_args,
        scaled=scaled,
        notes=source.notes + report["notes"] + _role_notes(data),
        terms=terms,
        unit_roundoff=unit_roundoff(t.dtype for t in tensors),
        cached=bool(report.get("cached")),
    )


def _free(base: str, taken: set[Any]) -> str:
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def _name_dims(tensors: list[Any], scen: list[Any], test_args: list[Any], reserved: set[Any]) -> dict[str, Any]:
    """Each dimension a test argument whose values over the scenarios it has (the first such), else its number
    where it is the same in every scenario, else a symbol of its own; {symbol: value per scenario} in order."""
    arg_values = {a: [s["args"][a] for s in scen] for a in test_args}
    symbols: dict[str, Any] = {}
    for t in tensors:
        for d in range(len(t.shapes[0])):
            values = [shape[d] for shape in t.shapes]
            match = next((a for a, v in arg_values.items() if v == values and type(v[0]) is int), None)
            if match is None and len(set(values)) == 1:
                t.dims.append(values[0])
                continue
            sym = match or _free(f"{t.name}_dim{d}", set(symbols) | set(test_args) | reserved)
            symbols.setdefault(sym, values)
            t.dims.append(sym)
    return symbols


def _data_scalars(data: list[Any], scen: list[Any], test_args: list[Any]) -> list[Any]:
    """The data's numbers as scalars: a test argument's symbol where they have its values, else a value per
    scenario."""
    scalars = []
    for k, (role, abi) in enumerate(data):
        if role != "scalar":
            continue
        values = [s["obs"]["data"][k]["value"] for s in scen]
        dtype = "float64" if any(isinstance(v, float) for v in values) else "int64"
        match = next((a for a in test_args if [s["args"][a] for s in scen] == values), None)
        entry = {"name": abi, "dtype": dtype, "value": match or abi}
        if match is None:
            entry["values"] = values
        scalars.append(entry)
    return scalars


def _role_notes(data: list[Any]) -> list[Any]:
    unused = [name for role, name in data if role == "unused"]
    buffers = [name for role, name in data if role == "output"]
    notes = []
    if buffers:
        notes.append(f"generate_input's {', '.join(buffers)}: output buffers, the kernel's outputs")
    if unused:
        notes.append(f"generate_input's item(s) {', '.join(unused)}: not read by ref_kernel, not given to the kernel")
    return notes


# ---- the import --------------------------------------------------------------------------------------------------


@dataclass
class Imported:
    folder: Path
    plan: Plan


def default_name(folder: Path) -> str:
    """The task's name from the problem folder's ("vectoradd_py" -> "vectoradd_py"; "2_x" -> "gm_2_x")."""
    return task_name(Path(folder).name, "gm")


def run_probe(source: Source, timeout_s: float, cache: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kseek-gpumode-") as work:
        staged = Path(work) / PROBLEM_DIR
        staged.mkdir()
        for rel, data in source.files.items():
            (staged / rel).write_bytes(data)
        cases = Path(work) / "cases.json"
        cases.write_text(json.dumps(source.cases))
        argv = [str(staged), str(cases), str(MAX_SCENARIO_BYTES)]
        sources = [cases.read_bytes(), *(source.files[k] for k in sorted(source.files))]
        return problem_import.run_probe(
            PROBE, argv, sources, source.folder.name, timeout_s, cache=cache, error=GpuModeImportError
        )


def import_gpumode(
    problem: str | Path, name: str | None = None, parent: str | Path = ".", timeout_s: float = PROBE_TIMEOUT_S,
    cache: bool = True,
) -> Imported:  # fmt: skip
    """Write the task folder `parent/name` for the problem folder; GpuModeImportError (a ValueError) when it
    cannot be imported, with nothing left behind."""
    from .gpumode_files import render_reference, render_toml

    source = read_problem(Path(problem))
    name = name or default_name(source.folder)
    parent = Path(parent)
    problem_import.check_destination(parent, name, error=GpuModeImportError)
    plan = plan_task(source, run_probe(source, timeout_s, cache=cache), name)
    files = {f"{PROBLEM_DIR}/{rel}": data for rel, data in source.files.items()}
    files.update({"reference.py": render_reference(plan), "task.toml": render_toml(plan)})
    return Imported(problem_import.write_task_folder(parent, name, files, error=GpuModeImportError), plan)


def problem_folders(folder: Path) -> list[Path]:
    """The problems of a folder: itself where it holds task.yml, else each folder under it that does (sorted)."""
    if (folder / TASK_YML).is_file():
        return [folder]
    return sorted(p.parent for p in folder.rglob(TASK_YML) if PROBLEM_DIR not in p.parts[len(folder.parts) :])


def _import(path: Path, name: str, parent: Path, timeout_s: float) -> tuple[list[Any], bool]:
    done = import_gpumode(path, name=name, parent=parent, timeout_s=timeout_s)
    return done.plan.notes, done.plan.cached


def _source(path: Path) -> bytes:
    return source_bytes(path)


SUITE = SuiteFormat(
    name="gpumode",
    command="python -m gpu_harness task import-gpumode",
    problems=problem_folders,
    default_name=default_name,
    source=_source,
    held=held_bytes,
    import_problem=_import,
)

__all__ = ["DEFENCES_COMMENT", "SUITE", "GpuModeImportError", "import_gpumode", "toml", "tolerance_lines"]
