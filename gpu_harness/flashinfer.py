"""`python -m gpu_harness task import-flashinfer DEFINITION.json`: a FlashInfer-Bench definition as a cuda-sm90 task.

A definition (JSON: name, op_type, axes `const`/`var`, inputs and outputs with shape and dtype, a reference whose
`run` is the specification) has its workloads (a JSONL of traces whose `workload` binds every var axis and says
where each input comes from) beside it (`NAME.jsonl`) or in its trace set's `workloads/<op_type>/NAME.jsonl`.
read_definition checks both; each workload is a scenario, its var axes its sizes. The ABI: the definition's inputs
in order (tensors; a shape-null input is a scalar, its value the workload's), its outputs, one int64 per var axis.
The folder: task.toml, definition.json and workloads.jsonl (as given), definition_reference.py (the reference's
code) and reference.py (REFERENCE_PY). flashinfer_probe.py runs the reference in a child process (flops per
scenario, outputs as the definition says, which inputs scaling suits). A folder of definitions is a suite (SUITE).
docs/tasks.md, "Importing a FlashInfer-Bench definition", describes the mapping and what is refused.
"""

from __future__ import annotations

import ast
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from string import Template
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

PROBE = Path(__file__).with_name("flashinfer_probe.py")
DTYPES = {"float32", "float16", "bfloat16", "int64", "int32", "int8", "bool"}  # what a task holds (bool as uint8)
SCALARS = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "int64": "int64", "int32": "int32",
           "int8": "int32", "bool": "int32"}  # fmt: skip
REQUIRED = ("name", "op_type", "axes", "inputs", "outputs", "reference")


class FlashInferImportError(ProblemImportError):
    """The definition cannot be imported; the message says why."""


@dataclass
class Definition:
    path: Path
    data: dict[str, Any]
    workloads: list[Any]  # each: {"uuid", "axes", "inputs"}
    workloads_path: Path
    notes: list[Any]


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise FlashInferImportError(f"{path.name}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise FlashInferImportError(f"{path.name}: a definition is a JSON object")
    return data


def workloads_file(path: Path, d: dict[str, Any]) -> Path:
    """Beside the definition (NAME.jsonl), else in its trace set (root/workloads/<op_type>/NAME.jsonl)."""
    beside = path.with_suffix(".jsonl")
    if beside.is_file():
        return beside
    for root in path.parents:
        if root.name == "definitions":
            folder = root.parent / "workloads"
            found = folder / str(d.get("op_type")) / f"{d.get('name')}.jsonl"
            if not found.resolve().is_relative_to(folder.resolve()):  # the definition's words make the path
                raise FlashInferImportError(
                    f"{path.name}: op_type {d.get('op_type')!r} and name {d.get('name')!r} lead outside the trace "
                    f"set's workloads/ ({found}): a task takes its workloads from there only"
                )
            return found
    return beside


def _check_tensors(d: dict[str, Any], where: str) -> None:
    axes = d["axes"]
    if not isinstance(axes, dict) or not axes:
        raise FlashInferImportError(f"{where}: axes: a mapping of axis name -> {{type: const|var}}")
    for axis, spec in axes.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind not in ("const", "var") or (kind == "const" and not _is_size(spec.get("value"))):
            raise FlashInferImportError(f"{where}: axis {axis}: {{type: var}} or {{type: const, value: an int >= 0}}")
    for field in ("inputs", "outputs"):
        if not isinstance(d[field], dict) or not d[field]:
            raise FlashInferImportError(f"{where}: {field}: a mapping of name -> {{shape, dtype}}")
        for name, spec in d[field].items():
            if not isinstance(spec, dict) or "dtype" not in spec or "shape" not in spec:
                raise FlashInferImportError(f"{where}: {field}.{name}: a shape and a dtype are due")
            if spec["dtype"] not in DTYPES:
                raise FlashInferImportError(
                    f"{where}: {field}.{name}: dtype {spec['dtype']} is not one a task holds ({', '.join(sorted(DTYPES))})"
                )
            if spec["shape"] is None and field == "outputs":
                raise FlashInferImportError(f"{where}: outputs.{name}: a scalar output (shape null) is not a kernel's")
            for axis in spec["shape"] or []:
                if axis not in axes:
                    raise FlashInferImportError(f"{where}: {field}.{name}: axis {axis!r} is not in axes")
    if set(d["inputs"]) & set(d["outputs"]):
        raise FlashInferImportError(
            f"{where}: inputs and outputs share names {sorted(set(d['inputs']) & set(d['outputs']))}"
        )


def _check_reference(d: dict[str, Any], where: str) -> None:
    try:
        tree = ast.parse(str(d["reference"]))
    except SyntaxError as e:
        raise FlashInferImportError(f"{where}: reference: not Python ({e.msg}, line {e.lineno})") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
        raise FlashInferImportError(f"{where}: reference: no top-level function run (its entry point)")


def _workloads(d: dict[str, Any], path: Path, where: str) -> tuple[list[Any], list[Any]]:
    if not path.is_file():
        raise FlashInferImportError(f"{where}: no workloads ({path.name} beside it, or in its trace set's workloads/)")
    var = {a for a, s in d["axes"].items() if s["type"] == "var"}
    kept, notes = [], []
    for k, line in enumerate(path.read_text().splitlines()):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as e:
            raise FlashInferImportError(f"{path.name}:{k + 1}: not JSON: {e}") from None
        w = entry.get("workload", entry) if isinstance(entry, dict) else None
        if not isinstance(w, dict) or not isinstance(w.get("axes"), dict):
            raise FlashInferImportError(f"{path.name}:{k + 1}: a workload with axes is due")
        if entry.get("definition", d["name"]) != d["name"]:
            continue
        _check_bindings(d, w, var, f"{path.name}:{k + 1}")
        inputs = w.get("inputs") or {}
        kinds = {n: (inputs.get(n) or {"type": "random"}).get("type") for n in d["inputs"]}
        if bad := [n for n, t in kinds.items() if t not in ("random", "scalar")]:
            notes.append(f"workload {w.get('uuid', k + 1)} dropped: {', '.join(bad)} come(s) from a file "
                         "(safetensors): the harness draws every input from its own seeds")  # fmt: skip
            continue
        for n, t in kinds.items():
            if (t == "scalar") != (d["inputs"][n]["shape"] is None):
                raise FlashInferImportError(
                    f"{path.name}:{k + 1}: input {n} is {t}, the definition's shape says otherwise"
                )
        kept.append(w)
    if not kept:
        raise FlashInferImportError(f"{where}: none of its workloads can be a scenario ({'; '.join(notes) or 'none'})")
    return kept, notes


def _is_size(value: object) -> bool:
    """A size an axis may take: a whole number >= 0 (a bool is no size, though Python counts it an int)."""
    return type(value) is int and value >= 0


def _check_bindings(d: dict[str, Any], w: dict[str, Any], var: set[Any], where: str) -> None:
    """A workload binds exactly the definition's var axes, each to a size, and names only its inputs."""
    problem_import_strict(set(w["axes"]), var, f"{where}: axes against the definition's var axes")
    if bad := [f"{a} = {v!r}" for a, v in w["axes"].items() if not _is_size(v)]:
        raise FlashInferImportError(f"{where}: axes {', '.join(bad)}: each axis's size is a whole number >= 0")
    if extra := sorted(set(w.get("inputs") or {}) - set(d["inputs"])):
        raise FlashInferImportError(f"{where}: inputs {extra} are not the definition's")


def problem_import_strict(given: set[Any], expected: set[Any], what: str) -> None:
    try:
        from .imported_inputs import strict_names

        strict_names(given, expected, what)
    except ValueError as e:
        raise FlashInferImportError(str(e)) from None


def read_definition(path: Path) -> Definition:
    path = Path(path)
    if not path.is_file():
        raise FlashInferImportError(f"{path}: no such file")
    d = _json(path)
    where = path.name
    if missing := [f for f in REQUIRED if f not in d]:
        raise FlashInferImportError(f"{where}: no {', '.join(missing)} (a definition has {', '.join(REQUIRED)})")
    _check_tensors(d, where)
    _check_reference(d, where)
    wpath = workloads_file(path, d)
    workloads, notes = _workloads(d, wpath, where)
    return Definition(path, d, workloads, wpath, notes)


# ---- the task ---------------------------------------------------------------------------------------------------

REFERENCE_PY = Template('''\
"""$name: the FlashInfer-Bench definition $definition as a cuda-sm90 task, written by `python -m gpu_harness task
import-flashinfer` (docs/tasks.md, "Importing a FlashInfer-Bench definition"). definition.json and workloads.jsonl
are as given; definition_reference.py is the definition's reference code. Regenerate rather than edit.

- reference(**inputs, **scalars): run(*inputs in the definition's order), the inputs in their own dtypes, on the
  judge's device; returns the outputs by name;
- run_reference(**inputs, **outputs, **scalars): the same, writing the outputs in place (the timed baseline);
- float64(...): the same with the float tensors widened to float64, writing the outputs rounded to their dtype;
- make_<input>(generator, shape, params): FlashInfer-Bench's random input (randn for floats, integers in
  [-1024, 1024), bools 0/1), from the judge's generator.
"""

import importlib.util
import json
import threading
from pathlib import Path

import torch

from gpu_harness.imported_inputs import scale_and_shift, strict_names

HERE = Path(__file__).resolve().parent
DEFINITION = json.loads((HERE / "definition.json").read_text())
INPUTS, OUTPUTS, AXES = DEFINITION["inputs"], DEFINITION["outputs"], DEFINITION["axes"]
SIZES = [a for a, s in AXES.items() if s["type"] == "var"]  # var axes: scalars of the task
$tables
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64,
          "int32": torch.int32, "int8": torch.int8, "bool": torch.bool}
_lock = threading.Lock()
_run = None


def size(axis, params):
    return AXES[axis]["value"] if AXES[axis]["type"] == "const" else int(params[axis])


def shapes(params):
    specs = list(INPUTS.values()) + list(OUTPUTS.values())
    return [tuple(size(a, params) for a in s["shape"]) for s in specs if s["shape"] is not None]


def run_function():
    global _run
    with _lock:
        if _run is None:
            name = f"kseek_flashinfer_{DEFINITION['name']}_{id(DEFINITION)}"
            spec = importlib.util.spec_from_file_location(name, HERE / "definition_reference.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _run = module.run
        return _run


def _call(args, wide):
    strict_names(set(args) - set(OUTPUTS), ARGS, "the call's arguments against the task's")
    values = []
    for name, spec in INPUTS.items():
        v = args[name]
        if isinstance(v, torch.Tensor):
            v = v.to(DTYPES[spec["dtype"]])
            v = v.double() if wide and v.is_floating_point() else v
        values.append(v)
    out = run_function()(*values)
    if isinstance(out, dict):
        strict_names(out, OUTPUTS, "the reference's outputs against the definition's")
    else:
        out = [out] if isinstance(out, torch.Tensor) else list(out)
        if len(out) != len(OUTPUTS):
            raise ValueError(f"the reference returned {len(out)} output(s), the definition has {len(OUTPUTS)}")
        out = dict(zip(OUTPUTS, out))
    abi = {n: torch.uint8 if s["dtype"] == "bool" else DTYPES[s["dtype"]] for n, s in OUTPUTS.items()}
    return {n: (out[n] if wide else out[n].to(abi[n])) for n in OUTPUTS}


def reference(**args):
    return _call(args, wide=False)


def run_reference(**args):
    for name, value in _call(args, wide=False).items():
        args[name].copy_(value)


def float64(**args):
    for name, value in _call(args, wide=True).items():
        args[name].copy_(value)


def _random(name, generator, shape, params):
    dtype = INPUTS[name]["dtype"]
    device = generator.device
    if dtype in ("float32", "float16", "bfloat16"):
        t = torch.randn(shape, generator=generator, device=device).to(DTYPES[dtype])
    elif dtype == "bool":
        t = torch.randint(0, 2, shape, generator=generator, device=device, dtype=torch.uint8)
    else:
        low = -128 if dtype == "int8" else -1024
        t = torch.randint(low, -low, shape, generator=generator, device=device, dtype=DTYPES[dtype])
    if name in SCALED:  # a copy cannot pass as a normalisation (gpu_harness/imported_inputs.py)
        t = scale_and_shift(t, generator.initial_seed(), name, params)
    return t
''')

MAKE_FUNCTION = Template("""

def make_$name(generator, shape, params):
    return _random("$name", generator, shape, params)
""")


@dataclass
class Imported:
    folder: Path
    notes: list[Any]
    cached: bool


def default_name(path: Path) -> str:
    return task_name(Path(path).stem, "fi")


def _scenarios(defn: Definition) -> list[Any]:
    var = [a for a, s in defn.data["axes"].items() if s["type"] == "var"]
    scenarios, seen = [], set()
    for w in defn.workloads:
        params = {a: w["axes"][a] for a in var}
        for n, spec in (w.get("inputs") or {}).items():
            if spec.get("type") == "scalar":
                params[n] = spec["value"]
        key = json.dumps(params, sort_keys=True)
        if key not in seen:
            seen.add(key)
            scenarios.append(params)
    return scenarios


def _render(defn: Definition, name: str, scenarios: list[Any], report: dict[str, Any], case_key: str) -> dict[str, Any]:
    d = defn.data
    var = [a for a, s in d["axes"].items() if s["type"] == "var"]
    taken: set[Any] = set()
    abi = {n: c_name(n, taken) for n in [*d["inputs"], *d["outputs"], *var]}
    if any(abi[n] != n for n in abi):
        raise FlashInferImportError(f"{defn.path.name}: names {[n for n in abi if abi[n] != n]} are not C names")
    scalar_inputs = [n for n, s in d["inputs"].items() if s["shape"] is None]
    args_all = [*d["inputs"], *var]
    tables = f"ARGS = {json.dumps(args_all)}\nSCALED = {json.dumps(report.get('scaled', []))}\n"
    reference = REFERENCE_PY.substitute(name=name, definition=d["name"], tables=tables)
    for n, s in d["inputs"].items():
        if s["shape"] is not None:
            reference += MAKE_FUNCTION.substitute(name=n)
    lines = [
        f"# {name}: the FlashInfer-Bench definition {d['name']} ({d['op_type']}), imported by `python -m gpu_harness",
        '# task import-flashinfer` (docs/tasks.md, "Importing a FlashInfer-Bench definition").',
        *DEFENCES_COMMENT,
        f"description = {toml(' '.join(str(d.get('description') or d['name']).split())[:300])}",
        'target = "cuda-sm90"', "", "[kernel]", f'symbol = "kseek_{name}"', "",
    ]  # fmt: skip
    for field, kind in (("inputs", "input"), ("outputs", "output")):
        for n, s in d[field].items():
            if s["shape"] is None:
                continue
            dtype = "uint8" if s["dtype"] == "bool" else s["dtype"]
            dims = [d["axes"][a]["value"] if d["axes"][a]["type"] == "const" else a for a in s["shape"]]
            lines += [
                "[[args]]",
                f"name = {toml(n)}",
                f'kind = "{kind}"',
                f'dtype = "{dtype}"',
                f"shape = {toml(dims)}",
            ]
            if kind == "input":
                lines.append(f'init = {{ function = "make_{n}" }}')
            lines.append("")
    for n in scalar_inputs:
        lines += ["[[args]]  # a scalar input: the workload's value", f"name = {toml(n)}", 'kind = "scalar"',
                  f'dtype = "{SCALARS[d["inputs"][n]["dtype"]]}"', f"value = {toml(n)}", ""]  # fmt: skip
    for a in var:
        lines += [
            "[[args]]  # a var axis",
            f"name = {toml(a)}",
            'kind = "scalar"',
            'dtype = "int64"',
            f"value = {toml(a)}",
            "",
        ]
    terms, dtypes = [], [s["dtype"] for s in [*d["inputs"].values(), *d["outputs"].values()]]
    for k, p in enumerate(scenarios):
        p[case_key] = f"w{k}"
        sizes = [math.prod(d["axes"][a]["value"] if d["axes"][a]["type"] == "const" else p[a] for a in s["shape"])
                 for s in [*d["inputs"].values(), *d["outputs"].values()] if s["shape"] is not None]  # fmt: skip
        outs = sum(math.prod(d["axes"][a]["value"] if d["axes"][a]["type"] == "const" else p[a] for a in s["shape"])
                   for s in d["outputs"].values())  # fmt: skip
        flops = report["flops"][k]
        p["fi_flops"] = flops or max(sizes)
        terms.append(reduction_terms(flops, outs, max(sizes)))
    template = "{" + case_key + "}" + "".join(f"_{a}{{{a}}}" for a in var)
    lines += [
        "[reference]", 'function = "reference"', "",
        "# one scenario per workload (w0, w1, ...: the JSONL's order), its var axes; fi_flops: torch's count of the",
        "# reference's flops, or the largest tensor's elements where it counts none.",
        "[scenarios]", f"id = {toml(template)}", "list = [", *(f"    {toml(p)}," for p in scenarios), "]",
        f"quick = {toml([template.format(**p) for p in scenarios[:3]])}", "",
        "[formulas]", 'flops = "fi_flops"', "",
        *tolerance_lines(case_key, [p[case_key] for p in scenarios], terms, unit_roundoff(dtypes),
                         ("float64", "run_reference"), "the definition's reference"),
        "",
        "[baselines]", 'default = ["run_reference"]', 'run_reference = { function = "run_reference" }',
        'float64 = { function = "float64", may_refuse = true }  # the tolerance\'s measure (never timed)', "",
        "[goal]", 'baseline = "run_reference"', "speedup = 1.0", "",
    ]  # fmt: skip
    return {
        "task.toml": "\n".join(lines),
        "reference.py": reference,
        "definition.json": defn.path.read_bytes(),
        "workloads.jsonl": defn.workloads_path.read_bytes(),
        "definition_reference.py": str(d["reference"]),
    }


def import_flashinfer(
    definition: str | Path, name: str | None = None, parent: str | Path = ".", timeout_s: float = PROBE_TIMEOUT_S,
    cache: bool = True,
) -> Imported:  # fmt: skip
    """Write the task folder `parent/name` for the definition; FlashInferImportError when it cannot be imported,
    with nothing left behind."""
    defn = read_definition(Path(definition))
    name = name or default_name(defn.path)
    parent = Path(parent)
    problem_import.check_destination(parent, name, error=FlashInferImportError)
    case_key = "workload" if "workload" not in defn.data["axes"] else "fi_workload"
    scenarios = _scenarios(defn)
    with tempfile.TemporaryDirectory(prefix="kseek-flashinfer-") as work:
        staged = Path(work) / "task"
        staged.mkdir()
        files = _render(defn, name, [dict(p) for p in scenarios], {"flops": [0] * len(scenarios)}, case_key)
        for rel in ("reference.py", "definition.json", "definition_reference.py"):
            content = files[rel]
            (staged / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
        listed = Path(work) / "scenarios.json"
        listed.write_text(json.dumps(scenarios))
        report = problem_import.run_probe(
            PROBE, [str(staged), str(listed)], [defn.path.read_bytes(), listed.read_bytes()], defn.path.name,
            timeout_s, cache=cache, error=FlashInferImportError,
        )  # fmt: skip
    files = _render(defn, name, scenarios, report, case_key)
    folder = problem_import.write_task_folder(parent, name, files, error=FlashInferImportError)
    return Imported(folder, defn.notes + report.get("notes", []), bool(report.get("cached")))


def definition_files(folder: Path) -> list[Path]:
    """The definitions of a folder: its definitions/ tree (a trace set) or its own *.json, sorted."""
    root = folder / "definitions" if (folder / "definitions").is_dir() else folder
    return sorted(p for p in root.rglob("*.json") if not p.name.startswith("."))


def _held(task: Path) -> bytes | None:
    d, w = task / "definition.json", task / "workloads.jsonl"
    return d.read_bytes() + b"\0" + w.read_bytes() if d.is_file() and w.is_file() else None


def _source(path: Path) -> bytes:
    try:
        w = workloads_file(path, _json(path))
    except FlashInferImportError:
        return path.read_bytes() + b"\0"
    return path.read_bytes() + b"\0" + (w.read_bytes() if w.is_file() else b"")


def _import(path: Path, name: str, parent: Path, timeout_s: float) -> tuple[list[Any], bool]:
    done = import_flashinfer(path, name=name, parent=parent, timeout_s=timeout_s)
    return done.notes, done.cached


SUITE = SuiteFormat(
    name="flashinfer",
    command="python -m gpu_harness task import-flashinfer",
    problems=definition_files,
    default_name=default_name,
    source=_source,
    held=_held,
    import_problem=_import,
)
