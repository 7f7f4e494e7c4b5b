"""A gpu-mode reference-kernels problem at run time (torch only): what an imported task's reference.py and the
import's probe (gpumode_probe.py) both call.

A problem is a folder (the task's `problem/`) holding its reference.py (`ref_kernel(data)`, `generate_input(**test,
seed)`, `check_implementation(data, output)`) and the files it imports by their plain names (task.py, utils.py).
load_problem runs it with those names in sys.modules only while it imports (so two tasks never see each other's
utils). The problem's code writes `device="cuda"`: on_device runs it on the judge's GPU, or on the CPU (task check
on a machine without one, the probe) or the meta device (the probe's shapes) by rewriting every device it names
to that one. docs/tasks.md, "Importing a gpu-mode problem", describes the mapping.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

ENTRY_POINTS = ("ref_kernel", "generate_input", "check_implementation")
_lock = threading.RLock()  # sys.modules, torch.Generator and torch's determinism flags are the process's


class MissingPackage(ImportError):
    """The problem imports a module not installed here (`name`)."""


class _Siblings(importlib.abc.MetaPathFinder):
    """Finds the problem's sibling modules by their plain names (`from utils import ...`), and only those."""

    def __init__(self, siblings: dict[str, Any]) -> None:
        self.siblings = siblings

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name in self.siblings:
            return importlib.util.spec_from_file_location(name, self.siblings[name])
        return None


def load_problem(folder: Path, module_name: str | None = None) -> ModuleType:
    """The problem's reference.py, its sibling modules (every other .py of the folder) importable by their plain
    names while it is executed, and only then (sys.modules as it was for those names afterwards)."""
    folder = Path(folder)
    tag = module_name or "kseek_gpumode_" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    siblings = {p.stem: p for p in sorted(folder.glob("*.py")) if p.name != "reference.py"}
    finder = _Siblings(siblings)
    with _lock:
        saved = {name: sys.modules.pop(name, None) for name in siblings}
        sys.meta_path.insert(0, finder)
        try:
            spec = importlib.util.spec_from_file_location(tag, folder / "reference.py")
            if spec is None or spec.loader is None:  # (a .py file's path always has both)
                raise ImportError("no loadable module spec")
            module = importlib.util.module_from_spec(spec)
            sys.modules[tag] = module  # what dataclasses and torch.compile look modules up by
            try:
                spec.loader.exec_module(module)
            except ModuleNotFoundError as e:
                if e.name and e.name.split(".")[0] in siblings:
                    raise
                raise MissingPackage(e.name or str(e)) from e
            return module
        finally:
            sys.meta_path.remove(finder)
            for name, kept in saved.items():
                if kept is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = kept


def entry_points_missing(module: ModuleType) -> list[str]:
    return [n for n in ENTRY_POINTS if not callable(getattr(module, n, None))]


# ---- the device the problem's code runs on -------------------------------------------------------------------


def _is_cuda(device: object) -> bool:
    try:
        return isinstance(device, (str, torch.device, int)) and torch.device(device).type == "cuda"
    except (RuntimeError, TypeError):
        return False


class _Redirect(TorchFunctionMode):
    """Every device the problem's code names as CUDA becomes `device` (factory functions, .to, .cuda)."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device

    def __torch_function__(
        self, func: Callable[..., Any], types: object, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = dict(kwargs or {})
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = self.device
        if func is torch.Tensor.cuda:
            return args[0].to(self.device)
        if func is torch.Tensor.to:
            args = tuple(self.device if _is_cuda(a) else a for a in args)
        return func(*args, **kwargs)


_REAL_GENERATOR = torch.Generator


class _HostGenerator(_REAL_GENERATOR):
    """torch.Generator while the problem runs off the GPU: a CPU generator whatever device it is asked for (still a
    torch.Generator, so torch's own annotations and checks hold)."""

    def __new__(cls: type, device: object = None) -> Any:
        return _REAL_GENERATOR.__new__(cls, device="cpu")  # type: ignore[call-arg]  # (torch's stub: object's __new__)

    def __init__(self, device: object = None) -> None:
        pass


@contextlib.contextmanager
def on_device(device: torch.device | str) -> Iterator[None]:
    """The problem's code run on `device`: a GPU's own (`cuda` is then that GPU), or CUDA names rewritten to the
    CPU or the meta device (its generators then made on the CPU, whose draws the meta device accepts)."""
    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        with torch.cuda.device(index):
            yield
        return
    with _lock:
        torch.Generator = _HostGenerator  # type: ignore[misc]  # replaced while the problem runs, on purpose
        sync = torch.cuda.synchronize
        torch.cuda.synchronize = lambda *a, **k: None
        try:
            with _Redirect(device):
                yield
        finally:
            torch.Generator = _REAL_GENERATOR  # type: ignore[misc]  # (put back)
            torch.cuda.synchronize = sync


# ---- data and outputs ------------------------------------------------------------------------------------------


def items(data: torch.Tensor | Iterable[Any]) -> list[Any]:
    """The problem's data as a list of its items (a tensor alone is one item)."""
    return [data] if isinstance(data, torch.Tensor) else list(data)


def outputs_of(out: torch.Tensor | Iterable[Any]) -> list[Any]:
    """ref_kernel's result as a list of tensors (a tensor, or a tuple or list of them)."""
    return [out] if isinstance(out, torch.Tensor) else list(out)


def clone(data: object) -> Any:
    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, (tuple, list)):
        return type(data)(clone(x) for x in data)
    if isinstance(data, dict):
        return {k: clone(v) for k, v in data.items()}
    return data


class Problem:
    """The problem of one imported task, as reference.py's tables describe it (gpumode_files.py writes them)."""

    def __init__(self, folder: Path, tables: dict[str, Any]) -> None:
        self.folder = folder
        self.data = tables["DATA"]  # per data item: (role, name): input, output (a buffer), scalar, unused
        self.container = tables["CONTAINER"]  # "tensor", "tuple" or "list": what generate_input returns
        self.outputs = tables["OUTPUTS"]  # ABI names in ref_kernel's order
        self.dims = tables["DIMS"]  # ABI name -> its dimensions (a size symbol or a number each)
        self.dtypes = tables["DTYPES"]  # ABI name -> dtype (tensors)
        self.test_args = tables["TEST_ARGS"]  # generate_input's arguments but seed
        self.scaled = tables["SCALED"]
        self.args = tables["ARGS"]  # every argument but the outputs
        self._module: ModuleType | None = None
        self._made: dict[tuple[int, tuple[tuple[str, str], ...], str], Any] = {}

    def module(self) -> ModuleType:
        with _lock:
            if self._module is None:
                self._module = load_problem(self.folder)
            return self._module

    # -- inputs: the problem's own generate_input, on the judge's seed --

    def make(self, name: str, generator: torch.Generator, shape: tuple[int, ...], params: dict[str, Any]) -> Any:
        seed = generator.initial_seed() % 2**31  # a seed the problem's own generators and numpy take
        data = self._generated(seed, params, generator.device)
        index = next(k for k, (role, n) in enumerate(self.data) if role == "input" and n == name)
        t = items(data)[index].detach()
        if t.dtype == torch.bool:
            t = t.to(torch.uint8)
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"generate_input made {name} of shape {tuple(t.shape)}, the task says {tuple(shape)}")
        if name in self.scaled:
            from gpu_harness.imported_inputs import scale_and_shift

            t = scale_and_shift(t, seed, name, params)
        return t.to(generator.device).contiguous()

    def _generated(self, seed: int, params: dict[str, Any], device: torch.device) -> Any:
        # every input of one seed comes from one call (inputs that must agree, indices and what they index, do)
        key = (seed, tuple(sorted((k, str(v)) for k, v in params.items())), str(device))
        with _lock:
            if key not in self._made:
                with on_device(device):
                    data = self.module().generate_input(**{a: params[a] for a in self.test_args}, seed=seed)
                self._made = {key: data}  # the last seed's only: the harness makes one seed's inputs at a time
            return self._made[key]

    # -- the reference and the baselines --

    def _shape(self, name: str, args: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(int(args[d]) if isinstance(d, str) else d for d in self.dims[name])

    def data_for(self, args: dict[str, Any], wide: bool) -> Any:
        """generate_input's data rebuilt from the task's arguments: inputs in their own dtypes (float64 where
        `wide`), output buffers and unused items made afresh, scalars as given."""
        from gpu_harness.imported_inputs import strict_names

        strict_names(set(args) - set(self.outputs), self.args, "the call's arguments against the task's")
        device = next(v.device for v in args.values() if isinstance(v, torch.Tensor))
        built = []
        for role, name in self.data:
            if role == "scalar":
                built.append(args[name])
                continue
            if role == "input":
                t = args[name].to(_torch_dtype(self.dtypes[name]))
                t = t.bool() if self.dtypes[name] == "bool" else t
            else:  # an output's buffer, or an item the reference does not read: zeros of its shape
                t = torch.zeros(self._shape(name, args), dtype=_torch_dtype(self.dtypes[name]), device=device)
                t = t.bool() if self.dtypes[name] == "bool" else t
            built.append(t.double() if wide and t.is_floating_point() else t)
        if self.container == "tensor":
            return built[0]
        return tuple(built) if self.container == "tuple" else built

    def run(self, args: dict[str, Any], wide: bool = False) -> dict[str, Any]:
        """ref_kernel on the rebuilt data: the outputs by name, each in its ABI dtype unless `wide`."""
        data = self.data_for(args, wide)
        device = next(v.device for v in args.values() if isinstance(v, torch.Tensor))
        with torch.no_grad(), on_device(device):
            out = outputs_of(self.module().ref_kernel(data))
        if len(out) != len(self.outputs):
            raise ValueError(f"ref_kernel returned {len(out)} output(s), the task has {len(self.outputs)}")
        result = {}
        for name, t in zip(self.outputs, out, strict=True):
            t = t.to(device)
            result[name] = t if wide else t.to(_torch_dtype(self.dtypes[name]))
        return result


TORCH_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}


def _torch_dtype(name: str) -> Any:
    return TORCH_DTYPES["uint8" if name == "bool" else name]
