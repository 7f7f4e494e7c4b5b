"""The observing half of `task import-kernelbench`: runs a KernelBench problem file and says what it found.

It runs in a child process of its own (`python -P gpu_harness/kernelbench_probe.py PROBLEM.py MAX_BYTES RESULT.json`,
started by gpu_harness/kernelbench.py with a time limit; MAX_BYTES is a task scenario's limit on its tensors),
because the problem file is code: an import that raises, calls sys.exit, or hangs must not take the importer
with it. It runs on torch CPU (the child sees no GPU) and writes one JSON object: the problem's module-level
sizes, the forward's argument names, and for the main scenario (the sizes as written) the inputs, parameters,
buffers and outputs with their shapes and dtypes.

Sizes are learnt without computing: the model is built and run on the `meta` device (shapes only) at the main
sizes (built on CPU and moved there where its constructor reads a value), then once per module-level int variable
set to twice its value (which dimensions follow which variable), and on the extra scenarios it proposes (the
scalable sizes x0.5, an odd size, the leading one x2, and `small`: the scalable ones halved until no input or
output exceeds SMALL_ELEMENTS), each kept only where the model runs and nothing but input and output sizes
changed. The data itself is looked at on CPU, at the small scenario's sizes, every size above MIN_MODEL_SIZE
(the model's own too) halved further while its tensors exceed DATA_CHECK_BYTES (KernelBench's sizes are a
GPU's): forward twice on the same inputs (it must be deterministic) and once on other inputs and weights (the
outputs' number and shapes must not depend on the data). A plain tensor attribute of the model is registered as
a buffer (adopt_plain_tensors). A model the meta device cannot run (`.item()`, data-dependent branches) is run on
CPU at its own sizes once, and keeps only its main scenario (its data checks at reduced sizes where it runs
there); before that run its inputs and weights are built on the meta device and measured, and a problem whose
inputs and weights alone exceed MAX_BYTES, or half this machine's memory, is refused unrun.

Whatever the problem does wrong ends as {"ok": false, "error": "...", "cacheable": ...}: a sentence naming the
problem, and whether it follows from the file alone (not a package missing here, not this machine's memory).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

MODULE_NAME = "kseek_kernelbench_problem"


def _load_sibling(stem: str) -> ModuleType:
    """A module of gpu_harness beside this file, loaded by path (the probe runs as a script: `python -P`)."""
    spec = importlib.util.spec_from_file_location(f"kseek_{stem}", Path(__file__).with_name(f"{stem}.py"))
    if spec is None or spec.loader is None:  # (a .py file's path always has both)
        raise ImportError("no loadable module spec")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


defences = _load_sibling("imported_inputs")
# torch dtypes a task can hold; bool tensors travel as uint8 (the ABI has no bool) and are turned back into
# bool before the model sees them
DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
}


class Unimportable(Exception):
    """The problem cannot become a task; the message says why, in the user's terms. `cacheable`: whether the
    refusal follows from the file alone (so the same file is refused again, whatever this machine has)."""

    def __init__(self, message: str, cacheable: bool = True) -> None:
        super().__init__(message)
        self.cacheable = cacheable


# The pip package of a module whose name is not its package's (the rest: pip install <module>)
PIP_NAMES = {"sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "Pillow", "yaml": "PyYAML"}


# ---- loading the problem -------------------------------------------------------------------------------------


def load_problem(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise Unimportable(f"{path.name} cannot be loaded as a Python module")
    if spec is None or spec.loader is None:  # (a .py file's path always has both)
        raise ImportError("no loadable module spec")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit and KeyboardInterrupt from the user's file are its failure too
        raise _missing_package(e, path) or Unimportable(
            f"{path.name} fails to import: {_last_frame(e, path)}"
        ) from None
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(module, n, None))]
    if missing:
        raise Unimportable(
            f"{path.name} defines no {', '.join(missing)}: a KernelBench problem has class Model(nn.Module), "
            "get_inputs() and get_init_inputs()"
        )
    if not (isinstance(module.Model, type) and issubclass(module.Model, nn.Module)):
        raise Unimportable(f"{path.name}: Model is not a subclass of torch.nn.Module")
    return module


def _last_frame(e: BaseException, path: Path) -> str:
    """The exception, with the line of the problem file it came from when there is one."""
    line = _line_of(e, path)
    where = f" (line {line})" if line else ""
    return f"{type(e).__name__}: {e}{where}"


def _missing_package(e: BaseException, path: Path) -> Unimportable | None:
    """The refusal naming the package to install, when `e` is an import of a module that is not installed here
    (not cached: it imports once the package is there)."""
    if not isinstance(e, ModuleNotFoundError) or not e.name:
        return None
    top = e.name.split(".")[0]
    if top != e.name and importlib.util.find_spec(top) is not None:
        return None  # a submodule missing from an installed package: the package's own failure
    line = _line_of(e, path)
    where = f"; imported at line {line}" if line else ""
    return Unimportable(
        f"{path.name} needs {top}: pip install {PIP_NAMES.get(top, top)} (not installed here{where})",
        cacheable=False,
    )


def _line_of(e: BaseException, path: Path) -> int | None:
    """The last line of the problem file in the exception's traceback."""
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    return line


def size_variables(module: ModuleType) -> dict[str, Any]:
    """Module-level ints (not bools), in the order written: the problem's sizes and settings."""
    return {k: v for k, v in vars(module).items() if type(v) is int and not k.startswith("_")}


def forward_names(model_cls: type[nn.Module]) -> tuple[list[str], bool]:
    """The forward's positional parameter names after self, and whether it takes *args."""
    params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    names, var = [], False
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            var = True
        elif p.kind == p.KEYWORD_ONLY and p.default is p.empty:
            raise Unimportable(
                f"Model.forward has a keyword-only argument {p.name!r}: only positional arguments can be imported"
            )
    return names, var


@contextlib.contextmanager
def sizes_set(module: ModuleType, assignment: dict[str, Any]) -> Iterator[None]:
    """The problem's module-level sizes changed for the block (get_inputs reads them when called)."""
    saved = {k: getattr(module, k) for k in assignment}
    try:
        for k, v in assignment.items():
            setattr(module, k, v)
        yield
    finally:
        for k, v in saved.items():
            setattr(module, k, v)


# ---- one observation: build, make inputs, run -------------------------------------------------------------------


def _describe_tensor(t: torch.Tensor, what: str) -> dict[str, Any]:
    if t.dtype not in DTYPE_NAMES:
        raise Unimportable(f"{what} has dtype {t.dtype}, which a task cannot hold (known: {_known_dtypes()})")
    return {"kind": "tensor", "dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape)}


def _known_dtypes() -> str:
    return ", ".join(DTYPE_NAMES.values())


def _describe_input(v: object, i: int) -> dict[str, Any]:
    if isinstance(v, torch.Tensor):
        return _describe_tensor(v, f"get_inputs()[{i}]")
    if type(v) is int:
        return {"kind": "int", "value": v}
    if type(v) is float:
        if not math.isfinite(v):
            raise Unimportable(f"get_inputs()[{i}] is {v!r}: a scalar input must be finite")
        return {"kind": "float", "value": v}
    raise Unimportable(
        f"get_inputs()[{i}] is a {type(v).__name__}: only tensors, ints and floats can be the forward's inputs"
    )


def describe_outputs(out: object) -> dict[str, Any]:
    if isinstance(out, torch.Tensor):
        return {"container": "tensor", "items": [_describe_tensor(out, "the forward's output")]}
    if isinstance(out, (tuple, list)):
        kind = type(out).__name__
        items = []
        for i, o in enumerate(out):
            if not isinstance(o, torch.Tensor):
                raise Unimportable(
                    f"the forward returns a {kind} whose item {i} is a {type(o).__name__}: only tensors can be "
                    "outputs (a tuple or list of tensors, nothing nested)"
                )
            items.append(_describe_tensor(o, f"the forward's output {i}"))
        if not items:
            raise Unimportable(f"the forward returns an empty {kind}: there would be nothing to judge")
        return {"container": kind, "items": items}
    raise Unimportable(
        f"the forward returns a {type(out).__name__}: only a tensor or a tuple/list of tensors can be imported"
    )


def model_state(model: nn.Module) -> list[tuple[str, str, torch.Tensor]]:
    """(dotted name, "parameter" or "buffer", tensor), each tensor once (a shared one under its first name)."""
    out: list[tuple[str, str, torch.Tensor]] = [(n, "parameter", p) for n, p in model.named_parameters()]
    out += [(n, "buffer", b) for n, b in model.named_buffers()]
    return out


def adopt_plain_tensors(model: nn.Module) -> list[str]:
    """Register every plain tensor attribute of the model and its submodules (`self.h0 = torch.randn(...)` in the
    constructor) as a buffer, as reference.py does with the names listed; returns their dotted names. A kernel is
    given it as an input like any buffer, made by the model's own constructor, and the forward still finds it
    where it was (a forward that assigns it again, a recurrent model's state, assigns the buffer)."""
    adopted = []
    for prefix, sub in model.named_modules():
        for leaf, value in list(vars(sub).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
                delattr(sub, leaf)
                sub.register_buffer(leaf, value)
                adopted.append(f"{prefix}.{leaf}" if prefix else leaf)
    return adopted


# The model built on CPU and moved to the meta device, where building it there fails (a constructor that reads a
# value, `torch.linspace(...)[i].item()`): its forward still runs on the meta device, at shapes only
META_FROM_CPU = "meta-from-cpu"


def build(module: ModuleType, device: str, seed: int, assignment: dict[str, Any]) -> tuple[Any, ...]:
    """(init arguments, model, inputs, adopted plain tensors) at these sizes on this device, as the problem makes
    them."""
    model_device = "cpu" if device == META_FROM_CPU else device
    device = "meta" if device == META_FROM_CPU else device
    with sizes_set(module, assignment):
        torch.manual_seed(seed)
        init = module.get_init_inputs()
        if not isinstance(init, (list, tuple)):
            raise Unimportable(f"get_init_inputs() returns a {type(init).__name__}, not a list of arguments")
        with torch.device(model_device):
            model = module.Model(*init)
        adopted = adopt_plain_tensors(model)
        model.to(device)
        with torch.device(device):
            inputs = module.get_inputs()
    return init, model, inputs, adopted


def observe(
    module: ModuleType, device: str, seed: int, assignment: dict[str, Any], keep: bool = False
) -> dict[str, Any]:
    """Build the model and its inputs at these sizes on this device, run forward once, describe it all."""
    init, model, inputs, adopted = build(module, device, seed, assignment)
    device = "meta" if device == META_FROM_CPU else device
    if not isinstance(inputs, (list, tuple)):
        raise Unimportable(f"get_inputs() returns a {type(inputs).__name__}, not a list of the forward's inputs")
    inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]
    described = [_describe_input(v, i) for i, v in enumerate(inputs)]
    state = [{"name": n, "kind": k, **_describe_tensor(t, f"the model's {k} {n}")} for n, k, t in model_state(model)]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs])
    obs = {
        "init": repr(init),
        "inputs": described,
        "state": state,
        "outputs": describe_outputs(out),
        "flops": int(counter.get_total_flops()),
        "adopted": adopted,
    }
    if keep:
        obs["_model"], obs["_inputs"], obs["_out"] = model, inputs, out
    return obs


def _try_observe(
    module: ModuleType, device: str, seed: int, assignment: dict[str, Any]
) -> tuple[dict[str, Any] | None, str]:
    try:
        return observe(module, device, seed, assignment), ""
    except Unimportable as e:
        return None, str(e)
    except Exception as e:
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _as_tuple(out: torch.Tensor | Iterable[Any]) -> tuple[Any, ...]:
    return (out,) if isinstance(out, torch.Tensor) else tuple(out)


def _shapes(obs: dict[str, Any]) -> list[Any]:
    return [o["shape"] for o in obs["outputs"]["items"]]


def _same_tensors(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):
        return True
    # NaN != NaN: equal where both are NaN
    return a.is_floating_point() and torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())


# ---- the data checks, on CPU at the main sizes -----------------------------------------------------------------


def check_data(module: ModuleType, main: dict[str, Any], assignment: dict[str, Any], notes: list[str]) -> None:
    """`main` was observed on CPU at these sizes (kept tensors): forward again on the same inputs must give the
    same outputs bit for bit, and on other inputs and weights outputs of the same number, shapes and dtypes."""
    model, inputs, first = main["_model"], main["_inputs"], _as_tuple(main["_out"])
    clones = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
    state_before = {n: t.clone() for n, _, t in model_state(model)}
    with torch.no_grad():
        again = _as_tuple(model(*clones))
    if len(again) != len(first) or not all(_same_tensors(a, b) for a, b in zip(first, again, strict=True)):
        raise Unimportable(
            "the forward is not deterministic: two calls on the same inputs differ (dropout in training mode, "
            "or random numbers drawn in forward?), so no kernel could be judged against it"
        )
    changed = [f"get_inputs()[{i}]" for i, (a, b) in enumerate(zip(inputs, clones, strict=True)) if
               isinstance(a, torch.Tensor) and not _same_tensors(a, b)]  # fmt: skip
    if changed:
        notes.append(f"the forward modifies {', '.join(changed)} in place; a kernel's inputs are read-only")
    moved = [n for n, _, t in model_state(model) if not _same_tensors(state_before[n], t)]
    if moved:
        notes.append(
            f"the forward updates {', '.join(moved)} in place (e.g. BatchNorm's running statistics in training "
            "mode): that update is not an output of the task, only the returned value is judged"
        )
    other = observe(module, "cpu", 1, assignment)
    if len(other["outputs"]["items"]) != len(first):
        raise Unimportable(
            f"the forward returns a {main['outputs']['container']} of unknown arity: {len(first)} outputs on one "
            f"input, {len(other['outputs']['items'])} on another"
        )
    if _shapes(other) != _shapes(main) or [o["dtype"] for o in other["outputs"]["items"]] != [
        o["dtype"] for o in main["outputs"]["items"]
    ]:
        raise Unimportable(
            f"data-dependent output shape: the outputs are {_shapes(main)} on one input and {_shapes(other)} on "
            "another of the same sizes (e.g. torch.nonzero): a task's output shapes must follow from its sizes"
        )


def scaled_inputs(data: dict[str, Any], notes: list[str]) -> list[int]:
    """The positions in get_inputs() of the inputs given as x * s + b (imported_inputs.py): signed float tensors
    whose scaled values leave every finite output finite, on the data checks' observation."""
    model, inputs = data["_model"], data["_inputs"]
    tensors = {str(i): v for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)}

    def run(given: dict[str, Any]) -> list[Any]:
        with torch.no_grad():
            args = [given[str(i)].clone() if str(i) in given else v for i, v in enumerate(inputs)]
            return list(_as_tuple(model(*args)))

    scaled = [int(i) for i in defences.scalable_inputs(tensors, run)]
    kept = [f"get_inputs()[{i}]" for i, v in tensors.items() if defences.signed_float(v) and int(i) not in scaled]
    if kept:
        notes.append(
            f"{', '.join(kept)} not scaled and shifted: its scaled values make an output non-finite (it keeps the "
            "problem's own distribution)"
        )
    return scaled


# ---- the sizes: which variable moves which dimension, which ones scale -------------------------------------


def _structure(obs: dict[str, Any]) -> list[Any]:
    return [(o["dtype"], len(o["shape"])) for o in obs["outputs"]["items"]]


def _scalar_values(obs: dict[str, Any]) -> list[Any]:
    return [v.get("value") for v in obs["inputs"]]


def _input_shapes(obs: dict[str, Any]) -> list[Any]:
    return [v.get("shape") for v in obs["inputs"]]


def same_model(base: dict[str, Any], other: dict[str, Any]) -> str:
    """Why `other` is not the same model on other input sizes ("" when it is)."""
    if other["init"] != base["init"]:
        return "get_init_inputs() changes"
    if [(s["name"], s["shape"], s["dtype"]) for s in other["state"]] != [
        (s["name"], s["shape"], s["dtype"]) for s in base["state"]
    ]:
        return "a parameter's or buffer's shape changes"
    if [v["kind"] for v in other["inputs"]] != [v["kind"] for v in base["inputs"]]:
        return "get_inputs() returns other kinds of values"
    if [v.get("dtype") for v in other["inputs"]] != [v.get("dtype") for v in base["inputs"]]:
        return "an input's dtype changes"
    if _scalar_values(other) != _scalar_values(base):
        return "a scalar input of get_inputs() changes"
    if len(other["outputs"]["items"]) != len(base["outputs"]["items"]):
        raise Unimportable(
            f"the forward returns a {base['outputs']['container']} of unknown arity: "
            f"{len(base['outputs']['items'])} outputs at the problem's sizes, {len(other['outputs']['items'])} at "
            "others"
        )
    if _structure(other) != _structure(base):
        return "an output's dtype or rank changes"
    return ""


def half(v: int) -> int:
    return max(1, v // 2)


def odd(v: int) -> int:
    return (3 * v // 4) | 1  # an odd size below the original: no power-of-two tile divides it


def propose_scenarios(sizes: dict[str, Any], scalable: list[str], lead: str) -> list[tuple[str, dict[str, Any]]]:
    cands = [
        ("half", {k: half(sizes[k]) for k in scalable}),
        ("odd", {k: odd(sizes[k]) for k in scalable}),
        ("double", {lead: 2 * sizes[lead]}),
    ]
    seen: list[dict[str, Any]] = [{}]
    out: list[tuple[str, dict[str, Any]]] = []
    for case, assignment in cands:
        changed = {k: v for k, v in assignment.items() if v != sizes[k]}
        if changed not in seen:
            seen.append(changed)
            out.append((case, changed))
    return out


def trace_sizes(
    module: ModuleType, meta: str, sizes: dict[str, Any], main: dict[str, Any], result: dict[str, Any], notes: list[str]
) -> None:
    """On the meta device: which sizes scale (doubling one alone moves an input's shape and nothing of the
    model), and the extra scenarios that keep the model (`main` is the meta observation of the main sizes;
    `meta`: "meta", or META_FROM_CPU where the model must be built on CPU)."""
    probes, scalable = [], []
    for name, value in sizes.items():
        if value < 1:
            continue
        obs, why = _try_observe(module, meta, 0, {name: 2 * value})
        probes.append({"var": name, "value": 2 * value, "obs": _public(obs), "error": why})
        if obs is None:
            continue
        if not same_model(main, obs) and _input_shapes(obs) != _input_shapes(main):
            scalable.append(name)
    result["probes"] = probes
    result["scalable"] = scalable
    if not scalable:
        notes.append("no size can be scaled without changing the model's parameters: only the main scenario")
        return
    lead = _lead(main, probes, sizes, scalable)
    for case, assignment in propose_scenarios(sizes, scalable, lead):
        obs, why = _try_observe(module, meta, 0, assignment)
        reason = why or same_model(main, cast("dict[str, Any]", obs))  # (an observation where no why)
        if reason:
            result["dropped"].append({"case": case, "assignment": assignment, "reason": reason})
            notes.append(f"scenario {case} ({_show(assignment)}) dropped: {reason}")
            continue
        result.setdefault("extra", []).append({"case": case, "assignment": assignment, "obs": _public(obs)})


def _lead(main: dict[str, Any], probes: list[dict[str, Any]], sizes: dict[str, Any], scalable: list[str]) -> str:
    """The scalable size of the first tensor input's first dimension (the batch, usually)."""
    first = next((i for i, v in enumerate(main["inputs"]) if v["kind"] == "tensor" and v["shape"]), None)
    for p in probes:
        if p["var"] in scalable and first is not None and p["obs"]["inputs"][first]["shape"][0] == p["value"]:
            if main["inputs"][first]["shape"][0] == sizes[p["var"]]:
                return str(p["var"])
    return scalable[0]


def _show(assignment: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in assignment.items())


def _public(obs: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if obs is None else {k: v for k, v in obs.items() if not k.startswith("_")}


# ---- the whole probe ------------------------------------------------------------------------------------------


SMALL_ELEMENTS = 1 << 20  # the small scenario's largest input or output, where the scalable sizes shrink to it
DATA_CHECK_BYTES = 64 << 20  # the CPU data checks' tensors together, beyond which the model's own sizes shrink
MIN_MODEL_SIZE = 16  # a size at or below it (a kernel size, a stride, a class count) is never shrunk for them
ITEMSIZE = {name: torch.empty(0, dtype=dtype).element_size() for dtype, name in DTYPE_NAMES.items()}


def _largest(obs: dict[str, Any]) -> int:
    tensors = [v["shape"] for v in obs["inputs"] if v["kind"] == "tensor"] + _shapes(obs)
    return max((math.prod(shape) for shape in tensors), default=0)


def _bytes(obs: dict[str, Any]) -> int:
    """What the observation's tensors take together: inputs, parameters and buffers, outputs."""
    tensors = [v for v in obs["inputs"] if v["kind"] == "tensor"] + obs["state"] + obs["outputs"]["items"]
    return sum(math.prod(t["shape"]) * ITEMSIZE[t["dtype"]] for t in tensors)


def small_sizes(
    module: ModuleType, meta: str, sizes: dict[str, Any], scalable: list[str], main: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scalable sizes halved together until no input or output exceeds SMALL_ELEMENTS (or one more halving
    would change the model or fail): KernelBench's sizes are a GPU's; the small scenario, and `task check` on a
    machine without one, need not be."""
    assignment: dict[str, Any] = {}
    obs = main
    while _largest(obs) > SMALL_ELEMENTS:
        now = {k: assignment.get(k, sizes[k]) for k in scalable}
        smaller = {k: half(v) for k, v in now.items()}
        if smaller == now:
            break
        cand, _ = _try_observe(module, meta, 0, smaller)
        if cand is None or same_model(main, cand):
            break
        assignment, obs = smaller, cand
    return assignment, obs


def _shape_free(obs: dict[str, Any]) -> tuple[Any, ...]:
    """What an observation is apart from its sizes: the inputs' kinds, dtypes and ranks, the parameters' and
    buffers' names, dtypes and ranks, the outputs' dtypes and ranks."""
    return (
        [(v["kind"], v.get("dtype"), len(v.get("shape", []))) for v in obs["inputs"]],
        [(s["name"], s["dtype"], len(s["shape"])) for s in obs["state"]],
        _structure(obs),
    )


def _shrunk(sizes: dict[str, Any], assignment: dict[str, Any]) -> dict[str, Any]:
    """The assignment with every size above MIN_MODEL_SIZE halved (not below it), as changes from `sizes`."""
    now = {k: assignment.get(k, v) for k, v in sizes.items()}
    smaller = {k: max(MIN_MODEL_SIZE, v // 2) if v > MIN_MODEL_SIZE else v for k, v in now.items()}
    return {k: v for k, v in smaller.items() if v != sizes[k]}


def data_sizes(
    module: ModuleType, meta: str, sizes: dict[str, Any], assignment: dict[str, Any], obs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Where the CPU data checks run (determinism, data-independent output shapes: properties of the code, not
    of its sizes): at `assignment` (the small scenario's sizes, `obs` its meta observation), with every size above
    MIN_MODEL_SIZE halved together, the model's own included, while the tensors take more than DATA_CHECK_BYTES
    and the model keeps what it is apart from its sizes on the meta device (a 2 GiB weight is not computed)."""
    while _bytes(obs) > DATA_CHECK_BYTES:
        smaller = _shrunk(sizes, assignment)
        if smaller == assignment:
            break
        cand, _ = _try_observe(module, meta, 0, smaller)
        if cand is None or _shape_free(cand) != _shape_free(obs):
            break
        assignment, obs = smaller, cand
    return assignment, obs


def _agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same shapes and dtypes everywhere (a CPU run and a meta run of the same sizes)."""
    return (
        a["inputs"] == b["inputs"]
        and a["outputs"]["items"] == b["outputs"]["items"]
        and [(s["name"], s["shape"], s["dtype"]) for s in a["state"]]
        == [(s["name"], s["shape"], s["dtype"]) for s in b["state"]]
    )


def _cpu_observe(module: ModuleType, path: Path, assignment: dict[str, Any]) -> dict[str, Any]:
    try:
        return observe(module, "cpu", 0, assignment, keep=True)
    except Unimportable:
        raise
    except Exception as e:
        raise _missing_package(e, path) or Unimportable(
            f"{path.name}: building the model or running its forward fails: {_last_frame(e, path)}"
        ) from None


def _meta_footprint(module: ModuleType, assignment: dict[str, Any]) -> int | None:
    """Bytes of the model's parameters and buffers and of the inputs at these sizes, built on the meta device
    without running the forward (None where even that fails: the CPU run then says why)."""
    try:
        _, model, inputs, _ = build(module, "meta", 0, assignment)
        tensors = [t for _, _, t in model_state(model)] + [v for v in inputs if isinstance(v, torch.Tensor)]
        return sum(t.numel() * t.element_size() for t in tensors)
    except Exception:
        return None


def check_cpu_run_fits(module: ModuleType, path: Path, max_bytes: int, why: str) -> None:
    """Refuse, before allocating anything, a CPU run at the problem's own sizes that a task could not hold or that
    would exhaust this machine (the OOM killer would end the probe with no sentence)."""
    need = _meta_footprint(module, {})
    if need is None:
        return
    gib = need / (1 << 30)
    if need > max_bytes:
        raise Unimportable(
            f"{path.name}: its inputs and weights take {gib:.4g} GiB at its sizes, more than a task's scenario may"
            f" ({max_bytes >> 30} GiB): make its sizes smaller"
        )
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if 2 * need > memory:
        raise Unimportable(
            f"{path.name}: the model could not be run on the meta device ({why}), so it would run on CPU at its own"
            f" sizes, where its inputs and weights take {gib:.4g} GiB, more than half of this machine's"
            f" {memory / (1 << 30):.4g} GiB: make its sizes smaller",
            cacheable=False,
        )


DATA_CHECK_COPIES = 8  # what the data checks hold at once, in multiples of the tensors: clones, the forward's own


def _available_memory() -> int:
    """Bytes this machine can give now (MemAvailable), else its physical memory."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_data_fits(path: Path, at: dict[str, Any], tensors: int) -> None:
    """Refuse, before allocating anything, data checks whose tensors (`tensors` bytes at the sizes `at`, which no
    smaller sizes could replace) would exhaust this machine: the OOM killer would end the probe with no sentence.
    Not cached: a machine with more memory imports it."""
    available = _available_memory()
    if DATA_CHECK_COPIES * tensors <= available:
        return
    where = f"at {_show(at)}" if at else "at its own sizes"
    raise Unimportable(
        f"{path.name}: its data checks run on CPU {where} (no smaller sizes keep the model), where its inputs,"
        f" weights and outputs take {tensors / (1 << 30):.3g} GiB, about {DATA_CHECK_COPIES * tensors / (1 << 30):.3g}"
        f" GiB with the forward's and the checks' copies: more than the {available / (1 << 30):.3g} GiB this machine"
        " has available. Import it on a machine with more memory, or make its sizes smaller",
        cacheable=False,
    )


def untraced_data(
    module: ModuleType, sizes: dict[str, Any], main: dict[str, Any], notes: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the CPU observation the data checks use, its sizes) for a model the meta device cannot run (`main`: its
    CPU run at its own sizes): one at every size above MIN_MODEL_SIZE halved together until its inputs and
    weights (built on the meta device, not run) take at most DATA_CHECK_BYTES, where it runs there and is the
    same model apart from its sizes; else `main`."""
    assignment: dict[str, Any] = {}
    need = _meta_footprint(module, {})
    while need is not None and need > DATA_CHECK_BYTES:
        smaller = _shrunk(sizes, assignment)
        if smaller == assignment:
            break
        assignment, need = smaller, _meta_footprint(module, smaller)
    if not assignment or need is None:
        return main, {}
    try:
        data = observe(module, "cpu", 0, assignment, keep=True)
    except Exception:
        return main, {}
    if _shape_free(data) != _shape_free(main):
        return main, {}
    notes.append(f"the data checks ran on CPU at {_show(assignment)} (the problem's sizes, the model's too, reduced)")
    return data, assignment


def meta_main(module: ModuleType) -> tuple[str, dict[str, Any] | None, str]:
    """(the meta device to trace on, the meta observation of the main sizes or None, why not): the model built
    on the meta device, else built on CPU and moved there (a constructor that reads a value)."""
    main, why = _try_observe(module, "meta", 0, {})
    if main is not None or _meta_footprint(module, {}) is not None:
        return "meta", main, why  # built there: its forward is what the meta device cannot run
    on_cpu, _ = _try_observe(module, META_FROM_CPU, 0, {})
    return META_FROM_CPU, on_cpu, why


def traced(
    module: ModuleType, path: Path, meta: str, main: dict[str, Any], result: dict[str, Any]
) -> dict[str, Any] | None:
    """Sizes and scenarios from the meta device, the small scenario, and the CPU observation the data checks use
    (None where a CPU run disagrees with the meta device's shapes)."""
    sizes, notes = result["sizes"], result["notes"]
    result["traced"] = True
    trace_sizes(module, meta, sizes, main, result, notes)
    small, small_meta = small_sizes(module, meta, sizes, result["scalable"], main)
    extra = result.setdefault("extra", [])
    if small and all(small != e["assignment"] for e in extra):
        extra.append({"case": "small", "assignment": small, "obs": _public(small_meta)})
    at, at_meta = data_sizes(module, meta, sizes, small, small_meta)
    check_data_fits(path, at, _bytes(at_meta))
    data = _cpu_observe(module, path, at)
    if not _agree(cast("dict[str, Any]", _public(data)), at_meta):  # (an observation: a dict)
        return None
    if at and at == small:
        notes.append(f"the data checks ran on CPU at {_show(small)} (the problem's sizes, reduced: scenario small)")
    elif at:
        gib = _bytes(small_meta) / (1 << 30)
        notes.append(
            f"the data checks ran on CPU at {_show(at)} (the problem's sizes, the model's too, reduced: its tensors"
            f" take {gib:.3g} GiB at {'scenario small' if small else 'its sizes'})"
        )
    result["data_sizes"] = at
    return data


def probe(path: Path, max_bytes: int) -> dict[str, Any]:
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    module = load_problem(path)
    names, var_args = forward_names(module.Model)
    sizes = size_variables(module)
    notes: list[str] = []
    result: dict[str, Any] = {
        "ok": True,
        "file": path.name,
        "sizes": sizes,
        "forward": names,
        "dropped": [],
        "probes": [],
        "scalable": [],
        "traced": False,
        "notes": notes,
        "data_sizes": {},
    }
    # Shapes first, on the meta device (nothing computed); then the data, on CPU at sizes small enough.
    meta, main, why = meta_main(module)
    data = None
    if main is not None:
        data = traced(module, path, meta, main, result)
        if data is None:
            why = "its shapes there differ from a CPU run's"
    if data is None:  # untraced: shapes from a CPU run at the problem's own sizes, one scenario
        del notes[:]
        result.update(dropped=[], probes=[], scalable=[], traced=False, data_sizes={})
        result.pop("extra", None)
        check_cpu_run_fits(module, path, max_bytes, why)
        main = _cpu_observe(module, path, {})
        data, result["data_sizes"] = untraced_data(module, sizes, main, notes)
        notes.append(f"the model could not be run on the meta device ({why}): only the main scenario is made")
    assert main is not None  # (traced, or observed on CPU just above)
    if len(main["inputs"]) > len(names) and not var_args:
        raise Unimportable(
            f"get_inputs() returns {len(main['inputs'])} values but Model.forward takes {len(names)} argument(s)"
        )
    check_data(module, data, result["data_sizes"], notes)
    result["scaled"] = scaled_inputs(data, notes)
    adopted = main.get("adopted") or []
    if adopted:
        notes.append(
            f"the model's plain tensor attribute(s) {', '.join(adopted)} (neither parameters nor buffers) are taken"
            " as buffers: inputs of the kernel, made by the model's own constructor"
        )
    result["adopted"] = adopted
    result["main"] = _public(main)
    result["scenarios"] = [{"case": "main", "assignment": {}, "obs": _public(main)}] + result.pop("extra", [])
    return result


def main(argv: list[str]) -> int:
    problem, max_bytes, out = Path(argv[0]), int(argv[1]), Path(argv[2])
    try:
        result = probe(problem, max_bytes)
    except Unimportable as e:
        result = {"ok": False, "error": str(e), "cacheable": e.cacheable}
    except BaseException as e:  # the user's code may raise anything, SystemExit included
        result = {"ok": False, "error": f"{problem.name}: {_last_frame(e, problem)}", "cacheable": False}
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
