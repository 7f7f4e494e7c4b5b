"""The files of an imported KernelBench task: task.toml and reference.py, rendered from a kernelbench.Plan.

reference.py is the same code for every problem (REFERENCE_PY), with tables naming the problem's inputs,
weights and outputs, and one make_<input> function per input; task.toml is written field by field with a
comment saying where each choice comes from (docs/tasks.md, "Importing a KernelBench problem").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from string import Template
from typing import Any

from .problem_import import DEFENCES_COMMENT, TOLERANCE, scenario_floor, tolerance_lines, toml

# a kernelbench.Plan, named but not imported, not even for the type checker: kernelbench imports this module, and
# tests/foundation/test_layering.py refuses the cycle
Plan = Any


__all__ = ["TOLERANCE", "render_reference", "render_toml", "scenario_floor"]

REFERENCE_PY = Template('''\
"""$name: the KernelBench problem $file as a cuda-sm90 task, written by `python -m gpu_harness task
import-kernelbench` (docs/tasks.md, "Importing a KernelBench problem"). problem.py is the problem, copied
unchanged; this file only wires it to the task's arguments. Regenerate rather than edit the tables below.

What the harness calls here, every argument by its name in task.toml's [[args]]:
- reference(**inputs, **scalars): the model in float32 ([reference] precision), on the judge's device; returns
  the outputs by name;
- eager / compiled(**inputs, **outputs, **scalars): the model in the inputs' own dtypes (torch eager, and
  torch.compile), writing the outputs in place;
- make_<input>(generator, shape, params): each input, made on generator.device for the scenario's sizes.
"""

import contextlib
import hashlib
import importlib.util
import sys
import threading
from pathlib import Path

import torch

from gpu_harness.imported_inputs import scale_and_shift, strict_names

PROBLEM_FILE = Path(__file__).resolve().with_name("problem.py")
$tables
_lock = threading.RLock()  # the problem's globals and the cached models are shared by every caller
_problem = None
_models = {}  # (device, purpose) -> [model, {abi name: [(submodule, leaf, is_parameter)]}, compiled or None]


def problem():
    """problem.py, loaded by path under a name of its own (no sys.path entry that another task could shadow)."""
    global _problem
    with _lock:
        if _problem is None:
            name = "kseek_kernelbench_" + hashlib.sha256(str(PROBLEM_FILE).encode()).hexdigest()[:16]
            spec = importlib.util.spec_from_file_location(name, PROBLEM_FILE)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # what dataclasses and torch.compile look modules up by
            spec.loader.exec_module(module)
            _problem = module
        return _problem


@contextlib.contextmanager
def _sizes(params):
    """problem.py's sizes set to the scenario's for the block (get_inputs and get_init_inputs read them)."""
    module = problem()
    with _lock:
        saved = {k: getattr(module, k) for k in SIZE_VARS}
        try:
            for k in SIZE_VARS:
                if k in params:
                    setattr(module, k, int(params[k]))
            yield module
        finally:
            for k, v in saved.items():
                setattr(module, k, v)


@contextlib.contextmanager
def _forked(device):
    """torch's global random state (the CPU's and this device's) restored after the block."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        with torch.random.fork_rng(devices=[index]), torch.cuda.device(index):
            yield
    else:
        with torch.random.fork_rng(devices=[]):
            yield


@contextlib.contextmanager
def _seeded(generator):
    """torch's global random state seeded from the generator for the block, restored afterwards: the problem's
    own code draws from it (torch.randn in get_inputs, nn.init in Model's constructor)."""
    device = generator.device
    seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=device).item())
    with _forked(device):
        torch.default_generator.manual_seed(seed)
        if device.type == "cuda":
            torch.cuda.manual_seed(seed)
        yield


def _as_abi(name, t, device, shape):
    t = t.detach().to(device)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"problem.py made {name} of shape {tuple(t.shape)}, the task says {tuple(shape)}")
    return t.contiguous()


def _make_input(name, generator, shape, params):
    # The problem's own get_inputs() at the scenario's sizes: its inputs keep the distribution it gives them
    # (torch.rand for a log, randint for class labels, a softmax for probabilities), which no fitted
    # distribution would reproduce.
    with _sizes(params) as module, _seeded(generator), torch.device(generator.device):
        values = module.get_inputs()
    made = _as_abi(name, values[INPUT_INDEX[name]], generator.device, shape)
    # A signed float input is scaled and shifted (x * s + b, s and b from the judge's seed): its mean and variance
    # are then not 0 and 1, so a kernel that copies it cannot pass as its normalisation (imported_inputs.py).
    return scale_and_shift(made, generator.initial_seed(), name, params) if name in SCALED else made


def _make_weight(name, generator, shape, params):
    # A fresh Model built on the device: each weight has exactly the distribution the model's own
    # initialisation gives it (PyTorch's default init, or the problem's own, e.g. torch.randn(shape) * 0.02).
    with _sizes(params) as module, _seeded(generator), torch.device(generator.device):
        model = _adopt(module.Model(*module.get_init_inputs()))
    state = dict(model.named_parameters()) | dict(model.named_buffers())
    return _as_abi(name, state[WEIGHTS[name]], generator.device, shape)


def _model(device, purpose):
    """A model per device and purpose, built once; every call binds its own weights into it (_bind)."""
    key = (str(device), purpose)
    with _lock:
        if key not in _models:
            module = problem()
            with _forked(torch.device(device)), torch.device(device):
                model = _adopt(module.Model(*module.get_init_inputs()))
            model.to(device)
            _models[key] = [model, _slots(model), None]
        return _models[key]


def _adopt(model):
    """The model with its plain tensor attributes named in PLAIN registered as buffers, as the import found them
    (a kernel is given them as inputs like any buffer)."""
    for dotted in PLAIN:
        prefix, _, leaf = dotted.rpartition(".")
        submodule = model.get_submodule(prefix)
        value = submodule.__dict__.pop(leaf, None)
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"problem.py's model has no plain tensor attribute {dotted} (the import found one)")
        submodule.register_buffer(leaf, value)
    return model


def _slots(model):
    """Where each weight input goes: its parameter or buffer, and every other name the same tensor has."""
    places, first = {}, {}
    for kind, items in (
        (True, model.named_parameters(remove_duplicate=False)),
        (False, model.named_buffers(remove_duplicate=False)),
    ):
        for dotted, t in items:
            canonical = first.setdefault(id(t), dotted)
            prefix, _, leaf = dotted.rpartition(".")
            places.setdefault(canonical, []).append((model.get_submodule(prefix), leaf, kind))
    # Strictly: a parameter or buffer the task does not bind would keep the model's own initialisation, which no
    # kernel is given; a weight the model lacks would be bound nowhere. Either one is refused.
    strict_names(WEIGHTS.values(), places, "the task's weights against the model's parameters and buffers")
    return {abi: places[dotted] for abi, dotted in WEIGHTS.items()}


def _bind(slots, args):
    # The call's own tensors go in place of the model's (no copy, so a timed baseline pays nothing for it;
    # the reference's float32 copies make the model compute in float32), every one of them: the call is given
    # exactly the task's arguments.
    strict_names(set(args) - set(OUTPUTS), ARGS, "the call's arguments against the task's")
    for abi, where in slots.items():
        t = args[abi].bool() if abi in BOOL else args[abi]
        for submodule, leaf, is_parameter in where:
            (submodule._parameters if is_parameter else submodule._buffers)[leaf] = t


def _forward_args(args):
    return [args[n].bool() if n in BOOL else args[n] for n in FORWARD]


def _device(args):
    return next(v.device for v in args.values() if isinstance(v, torch.Tensor))


def _run(purpose, args):
    entry = _model(_device(args), purpose)
    model, slots = entry[0], entry[1]
    if purpose == "compiled":
        if entry[2] is None:
            entry[2] = torch.compile(model)
        model = entry[2]
    with _lock, torch.no_grad():
        _bind(slots, args)
        result = model(*_forward_args(args))
    result = (result,) if isinstance(result, torch.Tensor) else tuple(result)
    if len(result) != len(OUTPUTS):
        raise ValueError(f"the model returned {len(result)} output(s), the task has {len(OUTPUTS)}")
    return result


@contextlib.contextmanager
def _no_tf32():
    """The reference's float32 is float32: no TF32 in matmuls and convolutions (the harness asks the same)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def reference(**args):
    """The model on the harness's copies of the inputs (float32 tensors: [reference] precision)."""
    with _no_tf32():
        result = _run("reference", args)
    return {n: (r.to(torch.uint8) if r.dtype == torch.bool else r) for n, r in zip(OUTPUTS, result, strict=True)}


def eager(**args):
    """torch eager in the inputs' own dtypes, writing the outputs in place like the kernel."""
    for n, r in zip(OUTPUTS, _run("eager", args), strict=True):
        args[n].copy_(r)


def float64(**args):
    """The model in float64 on the same inputs (float tensors widened, writing the outputs rounded to their dtype):
    its distance from the float32 reference is the reference's own rounding error, which [tolerance] scales."""
    wide = {
        n: (v.double() if n not in OUTPUTS and isinstance(v, torch.Tensor) and v.is_floating_point() else v)
        for n, v in args.items()
    }
    for n, r in zip(OUTPUTS, _run("float64", wide), strict=True):
        args[n].copy_(r)


def compiled(**args):
    """torch.compile of the same model (its first call of a shape compiles: warm = true in task.toml)."""
    for n, r in zip(OUTPUTS, _run("compiled", args), strict=True):
        args[n].copy_(r)


# ---- the inputs, one function each (task.toml's init = {function = ...}) ----
''')


_toml = toml


def _description(plan: Plan) -> str:
    init = plan.init if len(plan.init) <= 120 else plan.init[:117] + "..."
    outs = ", ".join(t.name for t in plan.of("output"))
    text = f"KernelBench {plan.file}: Model(*{init}).forward({', '.join(plan.forward)}) -> {outs}"
    return " ".join(text.split())


def render_toml(plan: Plan) -> str:
    lines = [
        f"# {plan.name}: the KernelBench problem {plan.file}, imported by `python -m gpu_harness task",
        '# import-kernelbench` (docs/tasks.md, "Importing a KernelBench problem"). problem.py is the problem as',
        "# given; reference.py runs it for the reference, the baselines and the inputs.",
        *DEFENCES_COMMENT,
        f"description = {_toml(_description(plan))}",
        'target = "cuda-sm90"',
        "",
        "[kernel]",
        f'symbol = "kseek_{plan.name}"  # no starting kernel: the agent starts from a stub that says "not supported"',
        "",
        "# The ABI: the tensors get_inputs() returns, the model's parameters and buffers (weights arrive as inputs,",
        "# made by the model's own initialisation), the forward's outputs, then scalars: the forward's non-tensor",
        "# inputs (fixed values) and every size the shapes use. Shapes name the problem's module-level sizes.",
    ]
    for t in plan.tensors:
        kind = "output" if t.role == "output" else "input"
        what = {"input": f"get_inputs()[{t.index}]", "weight": f"the model's {t.dotted}", "output": ""}[t.role]
        if t.adopted:
            what += " (a plain tensor attribute, taken as a buffer)"
        if t.role == "output":
            what = "the forward's output" + (f" {t.index}" if len(plan.of("output")) > 1 else "")
        if t.is_bool:
            what += " (bool in the problem: 0/1 as uint8)"
        lines += ["", f"[[args]]  # {what}", f"name = {_toml(t.name)}", f'kind = "{kind}"', f'dtype = "{t.dtype}"']
        lines.append(f"shape = {_toml(t.dims)}")
        if kind == "input":
            lines.append(f"init = {{ function = {_toml('make_' + t.name)} }}")
    for s in plan.scalars:
        what = "an input of the forward (get_inputs' value)" if s["origin"] == "input" else "a size"
        lines += ["", f"[[args]]  # {what}", f"name = {_toml(s['name'])}", 'kind = "scalar"']
        lines += [f'dtype = "{s["dtype"]}"', f"value = {_toml(s['value'])}"]
    lines += [
        "",
        "[reference]",
        'function = "reference"',
        'precision = "float32"  # KernelBench\'s reference: the model in float32 (inputs as float32 copies, no TF32)',
        "",
        "# main: the problem's own sizes; half, odd, double: the sizes no parameter depends on, scaled, where the",
        "# model runs on them with only its input and output sizes changed; small (not quick): those sizes reduced",
        "# until no input or output exceeds 2^20 elements, where `task check` runs the reference without a GPU.",
        f"# {plan.flops_key} is the count [formulas] uses.",
        "[scenarios]",
        f"id = {_toml(plan.id_template)}",
        "list = [",
    ]
    lines += [f"    {_toml(p)}," for p in plan.scenarios]
    lines += [
        "]",
        f"quick = {_toml(plan.quick)}",
        "",
        f"# Edit this: {plan.flops_key} is torch's FlopCounterMode count on each scenario (matmuls and convolutions, 2 per",
        "# multiply-add), or one operation per element of the largest tensor where it counts none. bytes is left to",
        "# the default: every tensor read or written once.",
        "[formulas]",
        f'flops = "{plan.flops_key}"',
        "",
        *_tolerance_lines(plan),
        "",
        "[baselines]",
        'default = ["eager", "compiled"]',
        "# library: what a user would run instead of writing a kernel; best_library is the faster of them per scenario",
        'eager = { function = "eager", library = true }',
        'compiled = { function = "compiled", warm = true, library = true }  # torch.compile: its first call compiles',
        "# the model in float64: the tolerance's measure of the float32 reference's own error (never timed)",
        'float64 = { function = "float64", may_refuse = true }',
        "",
        "# the default goal: as fast as the faster of torch eager and torch.compile on each scenario (a suite's",
        "# scoreboard still gives KernelBench's fast_p over eager, beside the speed-up over torch.compile)",
        "[goal]",
        'baseline = "best_library"',
        "speedup = 1.0",
        "",
    ]
    return "\n".join(lines)


def _tolerance_lines(plan: Plan) -> list[str]:
    """[tolerance]: twice the float32 reference's own error + a floor per scenario from its size, at most 1e-2."""
    cases = [p[plan.case_key] for p in plan.scenarios]
    return tolerance_lines(
        plan.case_key, cases, plan.reductions, plan.unit_roundoff, ("float64", "eager"), "the float32 reference"
    )


MAKE_FUNCTION = Template("""

def make_$name(generator, shape, params):
    return $maker("$name", generator, shape, params)
""")


def _py(value: dict[str, Any] | Iterable[Any]) -> str:
    """A tuple of strings or a dict of strings/ints as Python source in the repository's format (double quotes;
    one item a line, with a trailing comma, when it would not fit on one)."""
    if isinstance(value, dict):
        items, ends = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()], "{}"
    else:
        items, ends = [json.dumps(v) for v in value], "()"
    one = ", ".join(items) + ("," if len(items) == 1 and ends == "()" else "")
    if len(one) <= 90:
        return ends[0] + one + ends[1]
    return ends[0] + "\n" + "".join(f"    {item},\n" for item in items) + ends[1]


def _tables(plan: Plan) -> str:
    tables = [
        ("FORWARD", tuple(plan.forward), "the forward's arguments, in order (ABI names: tensor inputs and scalars)"),
        ("INPUT_INDEX", {t.name: t.index for t in plan.of("input")}, "tensor input -> its place in get_inputs()"),
        ("WEIGHTS", {t.name: t.dotted for t in plan.of("weight")}, "ABI input -> the model's parameter or buffer"),
        ("OUTPUTS", tuple(t.name for t in plan.of("output")), "the forward's outputs, in order"),
        (
            "BOOL",
            tuple(t.name for t in plan.tensors if t.is_bool and t.role != "output"),
            "bool in the problem: uint8 in the ABI, bool again for the model",
        ),
        ("SIZE_VARS", tuple(plan.size_vars), "problem.py's module-level sizes a scenario sets"),
        ("PLAIN", tuple(plan.adopted), "the model's plain tensor attributes, registered as buffers (weights)"),
        ("SCALED", tuple(plan.scaled), "signed float inputs given as x * s + b (gpu_harness/imported_inputs.py)"),
        (
            "ARGS",
            tuple(t.name for t in plan.tensors if t.role != "output") + tuple(s["name"] for s in plan.scalars),
            "every argument but the outputs, each given to every call",
        ),
    ]
    return "".join(f"# {comment}\n{name} = {_py(value)}\n" for name, value, comment in tables)


def render_reference(plan: Plan) -> str:
    inputs = plan.of("input")
    weights = plan.of("weight")
    text = REFERENCE_PY.substitute(name=plan.name, file=plan.file, tables=_tables(plan))
    for t in inputs:
        text += MAKE_FUNCTION.substitute(name=t.name, maker="_make_input")
    for t in weights:
        text += MAKE_FUNCTION.substitute(name=t.name, maker="_make_weight")
    return text
