"""The observing half of `task import-flashinfer`: runs a FlashInfer-Bench definition's reference and says what it
found.

`python -P gpu_harness/flashinfer_probe.py TASK_DIR SCENARIOS.json RESULT.json`, started by flashinfer.py with a time limit in a
child process of its own (the reference is code), CPU only. TASK_DIR is the staged task folder: its reference.py
(the generated one, whose make_<input> functions and `reference` the harness calls) and the definition's code. On
each scenario it runs the reference on the meta device for torch's flop count (nothing computed); on the smallest
it runs it on the CPU on inputs made as the task makes them: the outputs must be the definition's (number, shapes,
dtypes), the same on the same inputs, and finite; and it says which inputs scaling suits (imported_inputs.py).
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
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # (a .py file's path always has both)
        raise ImportError("no loadable module spec")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


defences = _load("kseek_imported_inputs", Path(__file__).with_name("imported_inputs.py"))


class Unimportable(Exception):
    def __init__(self, message: str, cacheable: bool = True) -> None:
        super().__init__(message)
        self.cacheable = cacheable


def _where(e: BaseException) -> str:
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if Path(frame.filename).name == "definition_reference.py":
            line = frame.lineno
    return f"{type(e).__name__}: {e}" + (f" (the reference's line {line})" if line else "")


def _raised_by_definition(e: BaseException) -> bool:
    """Whether the definition's code (definition_reference.py) was running when `e` was raised."""
    return any(Path(f.filename).name == "definition_reference.py" for f in traceback.extract_tb(e.__traceback__))


def load(folder: Path) -> ModuleType:
    try:
        task = _load("kseek_flashinfer_task", folder / "reference.py")
        task.run_function()  # the definition's code imported now: a package it needs is said as such
        return task
    except ModuleNotFoundError as e:
        top = (e.name or "?").split(".")[0]
        raise Unimportable(f"its reference needs {top}: pip install {top} (not installed here)", False) from None
    except BaseException as e:
        raise Unimportable(f"its reference fails to load: {_where(e)}") from None


def _args(task: ModuleType, params: dict[str, Any], device: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    args = {}
    for name, spec in task.INPUTS.items():
        if spec["shape"] is None:
            args[name] = params[name]
        else:
            shape = tuple(task.size(d, params) for d in spec["shape"])
            made = getattr(task, f"make_{name}")(gen, shape, params)
            args[name] = made.to(device) if device == "meta" else made
    for axis in task.SIZES:
        args[axis] = params[axis]
    return args


def flops(task: ModuleType, params: dict[str, Any]) -> int:
    meta = {k: (torch.empty(v.shape, dtype=v.dtype, device="meta") if isinstance(v, torch.Tensor) else v)
            for k, v in _args(task, params, "cpu", 0).items()}  # fmt: skip
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            task.reference(**meta)
        return int(counter.get_total_flops())
    except Exception:
        return 0


def check(task: ModuleType, params: dict[str, Any], result: dict[str, Any]) -> None:
    args = _args(task, params, "cpu", 1)
    try:
        with torch.no_grad():
            first = task.reference(**args)
            again = task.reference(**args)
    except ValueError as e:
        if _raised_by_definition(e):  # the definition's own ValueError: its bare message could be just "1"
            raise Unimportable(f"its reference fails on the smallest workload: {_where(e)}") from None
        raise Unimportable(str(e)) from None  # the generated reference's own sentence (outputs, arguments)
    except Exception as e:
        raise Unimportable(f"its reference fails on the smallest workload: {_where(e)}") from None
    for name, spec in task.OUTPUTS.items():
        got = first[name]
        want = tuple(task.size(d, params) for d in spec["shape"])
        if tuple(got.shape) != want:
            raise Unimportable(f"its reference returns {name} of shape {tuple(got.shape)}; the definition says {want}")
        if not torch.equal(got.nan_to_num(), again[name].nan_to_num()):
            raise Unimportable("its reference is not deterministic: two calls on the same inputs differ")
        if got.is_floating_point() and not bool(torch.isfinite(got).all()):
            raise Unimportable(f"its reference returns non-finite values in {name} on the definition's inputs")
    tensors = {n: v for n, v in args.items() if isinstance(v, torch.Tensor)}

    def run(given: dict[str, Any]) -> list[Any]:
        with torch.no_grad():
            out = task.reference(**{**args, **given})
        return [out[n] for n in task.OUTPUTS]

    result["scaled"] = defences.scalable_inputs(tensors, run)


def probe(folder: Path, scenarios: list[Any]) -> dict[str, Any]:
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    task = load(folder)
    smallest = min(scenarios, key=lambda p: sum(math.prod(s) for s in task.shapes(p)))
    result = {"ok": True, "flops": [flops(task, p) for p in scenarios], "notes": []}
    check(task, smallest, result)
    return result


def main(argv: list[str]) -> int:
    folder, scenarios, out = Path(argv[0]), json.loads(Path(argv[1]).read_text()), Path(argv[2])
    try:
        result = probe(folder, scenarios)
    except Unimportable as e:
        result = {"ok": False, "error": str(e), "cacheable": e.cacheable}
    except BaseException as e:  # the reference may raise anything, SystemExit included
        result = {"ok": False, "error": f"running it fails: {_where(e)}", "cacheable": False}
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
