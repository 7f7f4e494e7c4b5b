"""`python -m gpu_harness task import-kernelbench FILE.py`: a KernelBench problem file as a cuda-sm90 task folder.

The problem file is run by gpu_harness/kernelbench_probe.py in a child process with a time limit (it is code),
which reports the inputs, parameters, buffers and outputs it sees and how their sizes follow the problem's
module-level size variables. This module turns that report into the task (plan_task: the ABI, the symbols,
the scenarios) and writes the folder (kernelbench_files.py renders task.toml and reference.py) into a temporary
folder renamed into place once load_spec accepts it, so a failure leaves nothing behind. What cannot come here at
all (a hub download: hub_refusal) is refused from the source before anything runs, and the probe's report is
cached by the problem's source (probe_key). docs/tasks.md, "Importing a KernelBench problem", describes the rules;
what cannot be imported is a KernelBenchImportError whose message names the reason. A folder of problems (a
level) is imported as a suite by kernelbench_suite.py.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import problem_import
from .problem_import import PROBE_TIMEOUT_S, UNIT_ROUNDOFF, ProblemImportError, c_name, task_name, torch_version
from .taskspec import DTYPES, MAX_SCENARIO_BYTES

PROBLEM_FILE = "problem.py"
# scenario values that are not sizes (a problem's size of the same name pushes them aside: kb_flops_2)
FLOPS_SYMBOL = "kb_flops"  # the scenario value [formulas] flops reads: counted per scenario at import
CASE_SYMBOL = "case"  # main, half, odd, double, small: the first field of every scenario id
NOT_QUICK = ("double", "small")  # the quick subset: the problem's sizes, half and odd
BOOL_AS = "uint8"  # the ABI has no bool: bool tensors travel as uint8 (0/1)
_torch_version = torch_version  # the suite's name for it before the formats shared it


class KernelBenchImportError(ProblemImportError):
    """The problem cannot be imported; the message says why (the CLI prints it and exits 2)."""


# ---- what cannot come here, said before anything runs ---------------------------------------------------------

# Calls that download weights or code from a model hub (Hugging Face, torch.hub, a URL): the harness and its
# workers never reach one, so a problem built on them cannot be imported (KernelBench level 4: `from_pretrained`)
HUB_CALLS = {
    "from_pretrained": "downloads a model or its configuration from the Hugging Face hub",
    "hf_hub_download": "downloads from the Hugging Face hub",
    "snapshot_download": "downloads from the Hugging Face hub",
    "load_state_dict_from_url": "downloads weights from a URL",
    "download_url_to_file": "downloads from a URL",
}


def _hub_call(node: ast.AST) -> str | None:
    """The dotted name of a hub-downloading call (`AutoConfig.from_pretrained`, `torch.hub.load`), else None."""
    if not isinstance(node, ast.Call):
        return None
    func: ast.expr = node.func
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.insert(0, func.id)
    if not parts:
        return None
    if parts[-1] in HUB_CALLS or parts[-2:] == ["hub", "load"]:
        return ".".join(parts)
    return None


def hub_refusal(path: Path, source: str) -> str | None:
    """Why the problem cannot come here, read from its source without running it (a hub download), or None."""
    try:
        tree = ast.parse(source, filename=path.name)
    except SyntaxError:
        return None  # the probe's import says where it fails
    calls = [(name, node.lineno) for node in ast.walk(tree) if isinstance(node, ast.Call) and (name := _hub_call(node))]
    if not calls:
        return None
    calls.sort(key=lambda c: c[1])
    shown = ", ".join(f"{name} (line {line})" for name, line in calls[:3]) + (", ..." if len(calls) > 3 else "")
    return (
        f"{path.name} downloads its model from a hub ({shown}): the harness and its workers never reach one, so "
        "it cannot be imported here; a problem must build its model from its own code (nothing was run)"
    )


# ---- running the probe ----------------------------------------------------------------------------------------

PROBE = Path(__file__).with_name("kernelbench_probe.py")


def probe_key(source: bytes) -> str:
    """The probe's report is a function of the problem's source and what problem_import.probe_key adds."""
    return problem_import.probe_key(PROBE, source)


def run_probe(path: Path, timeout_s: float = PROBE_TIMEOUT_S, cache: bool = True) -> dict[str, Any]:
    """The probe's report on the problem file, or KernelBenchImportError naming what went wrong (cached by its
    source: problem_import.run_probe)."""
    argv = [str(path), str(MAX_SCENARIO_BYTES)]
    return problem_import.run_probe(
        PROBE, argv, [path.read_bytes()], path.name, timeout_s, cache=cache, error=KernelBenchImportError
    )


# ---- planning the task ------------------------------------------------------------------------------------


@dataclass
class Tensor:
    name: str  # the ABI name
    role: str  # "input" (of get_inputs), "weight" (a parameter or buffer) or "output"
    dtype: str  # the ABI dtype (bool -> uint8)
    shapes: list[Any]  # one per kept scenario
    index: int = 0  # inputs: position in get_inputs(); outputs: position in the forward's result
    dotted: str = ""  # weights: the state_dict name
    is_bool: bool = False
    dims: list[Any] = field(default_factory=list)  # a symbol or a number per dimension, once named
    adopted: bool = False  # weights: a plain tensor attribute of the model, taken as a buffer


@dataclass
class Plan:
    name: str
    file: str
    init: str
    tensors: list[Any]
    scalars: list[Any]  # dicts: name, dtype, value (a formula), origin ("input" or "size")
    forward: list[Any]  # ABI names in the forward's order
    scenarios: list[Any]  # dicts of params
    quick: list[Any]
    id_template: str
    notes: list[Any]
    size_vars: list[Any]
    case_key: str = CASE_SYMBOL
    flops_key: str = FLOPS_SYMBOL
    reductions: list[Any] = field(default_factory=list)  # per scenario: how many terms one output element sums
    unit_roundoff: float = UNIT_ROUNDOFF["float32"]  # of the problem's lowest float precision
    adopted: list[Any] = field(default_factory=list)  # dotted names of plain tensor attributes taken as buffers
    scaled: list[Any] = field(default_factory=list)  # ABI names of the inputs given as x * s + b (imported_inputs.py)
    cached: bool = False  # the probe's report came from its cache (the problem was not run again)

    def of(self, role: str) -> list[Any]:
        return [t for t in self.tensors if t.role == role]


_c_name = c_name


def _free(base: str, taken: set[Any]) -> str:
    """A scenario key (not a C name: `case` may be one) that no size of the problem has."""
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def scenario_bytes(obs: dict[str, Any]) -> int:
    """What one observation's tensors take together: the inputs, the model's parameters and buffers, the outputs."""
    items = [v for v in obs["inputs"] if v.get("kind") == "tensor"] + obs["state"] + obs["outputs"]["items"]
    return sum(math.prod(t["shape"]) * DTYPES[BOOL_AS if t["dtype"] == "bool" else t["dtype"]].itemsize for t in items)


def _fitting(report: dict[str, Any]) -> dict[str, Any]:
    """The report without the scenarios whose tensors exceed a task's scenario (taskspec.MAX_SCENARIO_BYTES), a
    note saying each one dropped; the main scenario beyond it cannot be imported."""
    kept, notes = [], list(report["notes"])
    limit = MAX_SCENARIO_BYTES >> 30
    for s in report["scenarios"]:
        gib = scenario_bytes(s["obs"]) / (1 << 30)
        if gib <= limit:
            kept.append(s)
        elif s["case"] == "main":
            raise KernelBenchImportError(
                f"{report['file']}: its tensors take {gib:.4g} GiB at its sizes, more than a task's scenario may"
                f" ({limit} GiB): make its sizes smaller"
            )
        else:
            notes.append(f"scenario {s['case']} dropped: its tensors take {gib:.4g} GiB, more than {limit} GiB")
    return {**report, "scenarios": kept, "notes": notes}


def plan_task(report: dict[str, Any], name: str) -> Plan:
    """The task from the probe's report: the ABI in order (tensor inputs, weights, outputs, scalars), each
    dimension named (_name_dimensions), and the scenarios' values (those a task can hold: _fitting)."""
    report = _fitting(report)
    scen = report["scenarios"]
    main = report["main"]
    sizes = report["sizes"]
    taken: set[Any] = set()
    forward_names = report["forward"]
    tensors, scalars, forward = [], [], []
    for i, v in enumerate(main["inputs"]):
        base = forward_names[i] if i < len(forward_names) else f"input{i}"
        abi = _c_name(base, taken)
        forward.append(abi)
        if v["kind"] == "tensor":
            shapes = [s["obs"]["inputs"][i]["shape"] for s in scen]
            tensors.append(_tensor(abi, "input", v["dtype"], shapes, index=i))
        else:
            dtype = "int64" if v["kind"] == "int" else "float64"
            scalars.append({"name": abi, "dtype": dtype, "value": repr(v["value"]), "origin": "input"})
    for k, s in enumerate(main["state"]):
        shapes = [sc["obs"]["state"][k]["shape"] for sc in scen]
        abi = _c_name(s["name"].replace(".", "_"), taken)
        adopted = s["name"] in report.get("adopted", [])
        tensors.append(_tensor(abi, "weight", s["dtype"], shapes, dotted=s["name"], adopted=adopted))
    outs = main["outputs"]["items"]
    for k, o in enumerate(outs):
        shapes = [sc["obs"]["outputs"]["items"][k]["shape"] for sc in scen]
        abi = _c_name("out" if len(outs) == 1 else f"out{k}", taken)
        tensors.append(_tensor(abi, "output", o["dtype"], shapes, index=k))

    reserved = set(report["sizes"])
    case_key, flops_key = _free(CASE_SYMBOL, reserved), _free(FLOPS_SYMBOL, reserved)
    symbols = _name_dimensions(report, tensors, {case_key, flops_key})  # symbol -> its value in each scenario
    for sym in symbols:  # every size the shapes use reaches the kernel as an int64 scalar
        scalars.append({"name": _c_name(sym, taken), "dtype": "int64", "value": sym, "origin": "size"})

    assigned = [v for v in sizes if any(v in s["assignment"] for s in scen)]
    size_vars = [v for v in sizes if v in symbols or v in assigned]
    scenarios = []
    for k, s in enumerate(scen):
        params = {case_key: s["case"]}
        params.update({v: s["assignment"].get(v, sizes[v]) for v in assigned})
        params.update({sym: values[k] for sym, values in symbols.items()})
        params[flops_key] = _flops(s["obs"], tensors, k)
        scenarios.append(params)
    reductions = [_reduction(s["obs"], tensors, k) for k, s in enumerate(scen)]
    precisions = [UNIT_ROUNDOFF[t.dtype] for t in tensors if t.dtype in UNIT_ROUNDOFF]
    template = "{" + case_key + "}" + "".join(f"_{v}{{{v}}}" for v in assigned)
    quick = [template.format(**p) for p in scenarios if p[case_key] not in NOT_QUICK]
    return Plan(
        name=name,
        file=report["file"],
        init=main["init"],
        tensors=tensors,
        scalars=scalars,
        forward=forward,
        scenarios=scenarios,
        quick=quick,
        id_template=template,
        notes=list(report["notes"]),
        size_vars=size_vars,
        case_key=case_key,
        flops_key=flops_key,
        reductions=reductions,
        unit_roundoff=max(precisions, default=UNIT_ROUNDOFF["float32"]),
        adopted=list(report.get("adopted", [])),
        scaled=[t.name for t in tensors if t.role == "input" and t.index in report.get("scaled", [])],
        cached=bool(report.get("cached")),
    )


def _tensor(abi: str, role: str, dtype: str, shapes: list[tuple[int, ...]], **kw: Any) -> Tensor:
    is_bool = dtype == "bool"
    return Tensor(abi, role, BOOL_AS if is_bool else dtype, shapes, is_bool=is_bool, **kw)


def _probe_shape(probe_obs: dict[str, Any] | None, t: Tensor) -> list[Any] | None:
    """The tensor's shape in a probe's observation (None where the probe did not make it)."""
    if probe_obs is None:
        return None
    if t.role == "input":
        v = probe_obs["inputs"][t.index] if t.index < len(probe_obs["inputs"]) else None
        return v.get("shape") if v else None
    if t.role == "weight":
        return next((s["shape"] for s in probe_obs["state"] if s["name"] == t.dotted), None)
    items = probe_obs["outputs"]["items"]
    return items[t.index]["shape"] if t.index < len(items) else None


def _name_dimensions(report: dict[str, Any], tensors: list[Any], reserved: set[Any]) -> dict[str, Any]:
    """Give every dimension a symbol or a number; returns {symbol: [value per scenario]} in order of use.

    A dimension is named after a module-level size variable when its values over the scenarios are that
    variable's and (where the model was traced) doubling that variable alone doubled it: height and width
    both 32 are told apart by which one moves x's dimension 2. A variable the model cannot be built with at
    twice its value (out_channels, when a bias_shape computed from it stays behind) names a dimension on its
    value alone, when no other variable has that value and it is not 1. A dimension no variable names keeps its number
    when it is the same in every scenario, else it gets a symbol of its own (`out_dim2`), its value in each
    scenario as measured."""
    sizes, scen, probes = report["sizes"], report["scenarios"], report["probes"]
    traced = report["traced"]
    var_values = {v: tuple(s["assignment"].get(v, sizes[v]) for s in scen) for v in sizes}
    symbols: dict[str, Any] = {}
    generated: dict[tuple[tuple[Any, ...], frozenset[Any]], str] = {}  # (values, moved-by) -> symbol
    for t in tensors:
        probe_shapes = [(p, _probe_shape(p["obs"], t)) for p in probes]
        for d in range(len(t.shapes[0])):
            values = tuple(shape[d] for shape in t.shapes)
            moved = frozenset(
                p["var"] for p, ps in probe_shapes if ps is not None and len(ps) > d and ps[d] != values[0]
            )
            said = {}  # var -> whether doubling it alone doubled this dimension (absent: its probe failed)
            for p, ps in probe_shapes:
                if ps is not None and len(ps) > d:
                    said[p["var"]] = ps[d] == p["value"] and values[0] == sizes[p["var"]]
            matches = [v for v, vals in var_values.items() if vals == values]
            if traced:
                # a variable whose probe doubled it wins; one whose probe failed (the model would not build
                # at twice its value) is taken on its value alone
                matches = [v for v in matches if said.get(v)] or [
                    v for v in matches if v not in said and values[0] != 1
                ]
            elif values[0] == 1:
                matches = []  # untraced, a 1 says nothing: every broadcast dimension has it
            if len(matches) == 1:
                sym = matches[0]
            elif len(set(values)) == 1:
                t.dims.append(values[0])
                continue
            else:
                key = (values, moved)
                if key not in generated:
                    generated[key] = _c_name(
                        f"{t.name}_dim{d}", set(sizes) | set(symbols) | set(generated.values()) | reserved
                    )
                sym = generated[key]
            symbols.setdefault(sym, list(values))
            t.dims.append(sym)
    return symbols


def _flops(obs: dict[str, Any], tensors: list[Any], k: int) -> int:
    """FlopCounterMode's count (matmuls, convolutions, attention: 2 per multiply-add); where it counts none
    (elementwise, reductions), the elements of the largest tensor, one operation each."""
    counted = int(obs.get("flops") or 0)
    if counted > 0:
        return counted
    largest = 0
    for t in tensors:
        n = 1
        for d in t.shapes[k]:
            n *= d
        largest = max(largest, n)
    return max(1, largest)


def _reduction(obs: dict[str, Any], tensors: list[Any], k: int) -> int:
    """How many terms one output element of scenario k sums, at most: the counted flops per output element, halved
    (a matmul's K, a convolution's in_channels x kernel size), or where none are counted (elementwise, reductions)
    the largest tensor's elements per output element (a sum over a dimension: its length; elementwise: 1)."""
    outputs = sum(math.prod(t.shapes[k]) for t in tensors if t.role == "output") or 1
    counted = int(obs.get("flops") or 0)
    if counted > 0:
        return max(1, round(counted / (2 * outputs)))
    largest = max((math.prod(t.shapes[k]) for t in tensors), default=1)
    return max(1, largest // outputs)


# ---- writing the folder --------------------------------------------------------------------------------------


def default_name(path: Path) -> str:
    """The task's name from the file's: lowercase letters, digits and _, starting with a letter ("19_ReLU.py"
    -> "kb_19_relu")."""
    return task_name(path.stem, "kb")


@dataclass
class Imported:
    folder: Path
    plan: Plan


def import_kernelbench(
    problem: str | Path,
    name: str | None = None,
    parent: str | Path = ".",
    timeout_s: float = PROBE_TIMEOUT_S,
    cache: bool = True,
) -> Imported:
    """Write the task folder `parent/name` for the problem file; KernelBenchImportError (a ValueError) when it
    cannot be imported, with nothing left behind. What cannot come here (a hub download) is refused before
    anything runs; `cache`: reuse the probe's report on the same source (run_probe)."""
    from .kernelbench_files import render_reference, render_toml

    path = Path(problem)
    if not path.is_file():
        raise KernelBenchImportError(f"{problem}: no such file")
    if why := hub_refusal(path, path.read_text(errors="replace")):
        raise KernelBenchImportError(why)
    name = name or default_name(path)
    parent = Path(parent)
    problem_import.check_destination(parent, name, error=KernelBenchImportError)  # before anything runs
    plan = plan_task(run_probe(path.resolve(), timeout_s, cache=cache), name)
    files = {PROBLEM_FILE: path.read_bytes(), "reference.py": render_reference(plan), "task.toml": render_toml(plan)}
    folder = problem_import.write_task_folder(parent, name, files, error=KernelBenchImportError)
    return Imported(folder, plan)
