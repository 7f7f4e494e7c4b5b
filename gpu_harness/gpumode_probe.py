"""The observing half of `task import-gpumode`: runs a gpu-mode problem and says what it found.

`python -P gpu_harness/gpumode_probe.py PROBLEM_DIR CASES.json MAX_BYTES RESULT.json`, started by gpumode.py with a
time limit in a child process of its own (the problem is code), CPU only. PROBLEM_DIR holds the problem's files as
the task will (reference.py and its siblings); CASES.json the scenarios: [{"case", "args"}] (generate_input's
arguments but seed). It writes one JSON object: per scenario, generate_input's data items and ref_kernel's outputs
(shapes, dtypes, values of numbers) and the flops torch counts, learnt on the meta device where the code runs
there (nothing computed), else on the CPU; then, on the CPU at the smallest scenario, the data checks: the same
seed makes the same data, ref_kernel is deterministic, another seed keeps every shape, each data item is an input
(ref_kernel reads it), an output's buffer (returned, or of an output's shape and not read) or unused, the
reference passes its own check_implementation, and which inputs scaling suits (imported_inputs.py).
Whatever goes wrong ends as {"ok": false, "error": "...", "cacheable": ...}.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import torch
from torch.utils.flop_counter import FlopCounterMode


def _load_sibling(stem: str) -> ModuleType:
    """A module of gpu_harness beside this file, loaded by path (the probe runs as a script: `python -P`)."""
    spec = importlib.util.spec_from_file_location(f"kseek_{stem}", Path(__file__).with_name(f"{stem}.py"))
    if spec is None or spec.loader is None:  # (a .py file's path always has both)
        raise ImportError("no loadable module spec")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


runtime = _load_sibling("gpumode_runtime")
defences = _load_sibling("imported_inputs")
SEED, OTHER_SEED = 1234, 4321


class Unimportable(Exception):
    def __init__(self, message: str, cacheable: bool = True) -> None:
        super().__init__(message)
        self.cacheable = cacheable


def _where(e: BaseException, folder: Path) -> str:
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if Path(frame.filename).resolve().parent == folder.resolve():
            line = f"{Path(frame.filename).name}:{frame.lineno}"
    return f"{type(e).__name__}: {e}" + (f" ({line})" if line else "")


def load(folder: Path) -> ModuleType:
    try:
        module: ModuleType = runtime.load_problem(folder, "kseek_gpumode_probe")
    except runtime.MissingPackage as e:
        top = str(e).split(".")[0]
        raise Unimportable(f"its reference.py needs {top}: pip install {top} (not installed here)", False) from None
    except BaseException as e:
        raise Unimportable(f"its reference.py fails to import: {_where(e, folder)}") from None
    if missing := runtime.entry_points_missing(module):
        raise Unimportable(
            f"its reference.py defines no {', '.join(missing)}: a gpu-mode problem has ref_kernel(data), "
            "generate_input(**test, seed) and check_implementation(data, output)"
        )
    return module


def describe_item(v: object, what: str) -> dict[str, Any]:
    if isinstance(v, torch.Tensor):
        if v.dtype not in runtime.DTYPE_NAMES:
            known = ", ".join(runtime.DTYPE_NAMES.values())
            raise Unimportable(f"{what} has dtype {v.dtype}, which a task cannot hold (known: {known})")
        return {"kind": "tensor", "dtype": runtime.DTYPE_NAMES[v.dtype], "shape": list(v.shape)}
    if type(v) in (int, float) and math.isfinite(cast(float, v)):
        return {"kind": type(v).__name__, "value": v}
    raise Unimportable(f"{what} is a {type(v).__name__}: only tensors, ints and finite floats can be a task's data")


def observe(
    module: ModuleType, args: dict[str, Any], device: str, seed: int = SEED, keep: bool = False
) -> dict[str, Any]:
    """generate_input and ref_kernel at these arguments on this device, described."""
    with torch.no_grad(), runtime.on_device(device):
        data = module.generate_input(**args, seed=seed)
        if not isinstance(data, (torch.Tensor, tuple, list)):
            raise Unimportable(f"generate_input returns a {type(data).__name__}: a tensor, or a tuple or list of them")
        items = runtime.items(data)
        described = [describe_item(v, f"generate_input's item {k}") for k, v in enumerate(items)]
        with FlopCounterMode(display=False) as counter:
            out = module.ref_kernel(data)
        if not isinstance(out, (torch.Tensor, tuple, list)) or not all(
            isinstance(o, torch.Tensor) for o in runtime.outputs_of(out)
        ):
            raise Unimportable("ref_kernel returns something other than a tensor or a tuple or list of tensors")
        outs = runtime.outputs_of(out)
        returned = {k: next((j for j, v in enumerate(items) if v is o), None) for k, o in enumerate(outs)}
    obs = {
        "container": "tensor" if isinstance(data, torch.Tensor) else type(data).__name__,
        "data": described,
        "outputs": [describe_item(o, f"ref_kernel's output {k}") for k, o in enumerate(outs)],
        "returned": returned,  # output -> the data item ref_kernel wrote it into and returned, or None
        "flops": int(counter.get_total_flops()),
    }
    if keep:
        obs["_data"] = items
    return obs


def shapes(module: ModuleType, case: dict[str, Any], notes: list[Any]) -> dict[str, Any]:
    try:
        return observe(module, case["args"], "meta")
    except Unimportable:
        raise
    except Exception as e:
        where = _where(e, Path(cast(str, module.__file__)).parent)
        notes.append(f"scenario {case['case']} ran on the CPU (the meta device cannot run it: {where})")
    try:
        return observe(module, case["args"], "cpu")
    except Unimportable:
        raise
    except Exception as e:
        raise Unimportable(
            f"generate_input or ref_kernel fails at {case['args']}: {_where(e, Path(cast(str, module.__file__)).parent)}"
        ) from None


def _bytes(obs: dict[str, Any]) -> int:
    tensors = [d for d in obs["data"] if d["kind"] == "tensor"] + obs["outputs"]
    return sum(math.prod(t["shape"]) * torch.empty(0, dtype=runtime.TORCH_DTYPES[t["dtype"]]).element_size()
               for t in tensors)  # fmt: skip


def _equal(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.isnan(), b.isnan()))  # fmt: skip
    return a == b


def _poisoned(t: torch.Tensor) -> torch.Tensor:
    if t.is_floating_point():
        return torch.full_like(t, float("nan"))
    return torch.full_like(t, 7 if t.dtype != torch.bool else True)


def _call_on_clones(module: ModuleType, first: dict[str, Any], replaced: dict[int, Any]) -> tuple[list[Any], list[Any]]:
    """ref_kernel's outputs on a clone of the data (item k replaced by `replaced[k]`), and the clones as the call
    left them (an item it updated in place differs from what it was given)."""
    items = first["_data"]
    cloned = [runtime.clone(replaced.get(k, v)) for k, v in enumerate(items)]
    data = (
        cloned[0]
        if first["container"] == "tensor"
        else type(items)(cloned)
        if first["container"] == "list"
        else tuple(cloned)
    )
    with torch.no_grad(), runtime.on_device("cpu"):
        return [o.clone() for o in runtime.outputs_of(module.ref_kernel(data))], cloned


def roles(module: ModuleType, case: dict[str, Any], first: dict[str, Any]) -> list[Any]:
    """Each data item's role at the smallest scenario: input, output (a buffer), scalar or unused. An item
    ref_kernel reads and writes (returned, or only updated in place: `x.mul_(2); return x.sum()`) is refused."""
    items = first["_data"]
    base, after = _call_on_clones(module, first, {})
    result = []
    for k, v in enumerate(items):
        if not isinstance(v, torch.Tensor):
            result.append("scalar")
            continue
        poisoned, _ = _call_on_clones(module, first, {k: _poisoned(v)})
        read = not all(_equal(a, b) for a, b in zip(base, poisoned, strict=True))
        returned = k in first["returned"].values()
        updated = not _equal(v, after[k])
        shaped = any(o["shape"] == list(v.shape) and o["dtype"] == first["data"][k]["dtype"] for o in first["outputs"])
        if read and (returned or updated):
            raise Unimportable(
                f"generate_input's item {k} is read and written by ref_kernel (an update in place): a task's inputs "
                "are read-only and its outputs written whole"
            )
        result.append("input" if read else "output" if returned or shaped else "unused")
    return result


def check_data(module: ModuleType, case: dict[str, Any], first: dict[str, Any], result: dict[str, Any]) -> None:
    items = first["_data"]
    again = observe(module, case["args"], "cpu", keep=True)["_data"]
    if not all(_equal(a, b) for a, b in zip(items, again, strict=True)):
        raise Unimportable("generate_input is not deterministic: the same seed made different data")
    other = observe(module, case["args"], "cpu", seed=OTHER_SEED)
    if [d.get("shape") for d in other["data"]] != [d.get("shape") for d in first["data"]] or [
        o["shape"] for o in other["outputs"]
    ] != [o["shape"] for o in first["outputs"]]:
        raise Unimportable(
            "the shapes depend on the seed: generate_input or ref_kernel made other shapes from another seed of the "
            "same test (a task's shapes must follow from its scenario)"
        )
    with torch.no_grad(), runtime.on_device("cpu"):
        outs = [runtime.outputs_of(module.ref_kernel(runtime.clone(first["_data_container"]))) for _ in range(2)]
        if not all(_equal(a, b) for a, b in zip(*outs, strict=True)):
            raise Unimportable("ref_kernel is not deterministic: two calls on the same data differ")
        said = module.check_implementation(
            runtime.clone(first["_data_container"]),
            runtime.clone(
                outs[0][0] if len(outs[0]) == 1 and isinstance(first["_out_container"], torch.Tensor) else outs[0]
            ),
        )
    good = said[0] if isinstance(said, (tuple, list)) else said
    if not good:
        message = said[1] if isinstance(said, (tuple, list)) and len(said) > 1 else said
        raise Unimportable(f"the reference fails its own check_implementation: {message}")
    result["roles"] = roles(module, case, first)
    inputs = {str(k): v for k, v in enumerate(items) if result["roles"][k] == "input"}

    def run(given: dict[str, Any]) -> list[Any]:
        given_items = [given.get(str(k), v) for k, v in enumerate(items)]
        data = (
            given_items[0]
            if first["container"] == "tensor"
            else tuple(given_items)
            if first["container"] == "tuple"
            else given_items
        )
        with torch.no_grad(), runtime.on_device("cpu"):
            return [o.clone() for o in runtime.outputs_of(module.ref_kernel(runtime.clone(data)))]

    result["scaled"] = [int(k) for k in defences.scalable_inputs(inputs, run)]


def probe(folder: Path, cases: list[Any], max_bytes: int) -> dict[str, Any]:
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    module = load(folder)
    notes: list[Any] = []
    observed = []
    for case in cases:
        obs = shapes(module, case, notes)
        if _bytes(obs) > max_bytes:
            notes.append(f"scenario {case['case']} dropped: its tensors take more than {max_bytes >> 30} GiB")
            continue
        observed.append({**case, "obs": obs})
    if not observed:
        raise Unimportable("no scenario's tensors fit a task's limit")
    smallest = min(observed, key=lambda c: _bytes(c["obs"]))
    first = observe(module, smallest["args"], "cpu", keep=True)
    with torch.no_grad(), runtime.on_device("cpu"):
        first["_data_container"] = module.generate_input(**smallest["args"], seed=SEED)
        first["_out_container"] = module.ref_kernel(runtime.clone(first["_data_container"]))
    result = {"ok": True, "scenarios": observed, "notes": notes, "data_case": smallest["case"]}
    check_data(module, smallest, first, result)
    return result


def main(argv: list[str]) -> int:
    folder, cases, max_bytes, out = Path(argv[0]), json.loads(Path(argv[1]).read_text()), int(argv[2]), Path(argv[3])
    try:
        result = probe(folder, cases, max_bytes)
    except Unimportable as e:
        result = {"ok": False, "error": str(e), "cacheable": e.cacheable}
    except BaseException as e:  # the problem's code may raise anything, SystemExit included
        result = {"ok": False, "error": f"running it fails: {_where(e, folder)}", "cacheable": False}
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
