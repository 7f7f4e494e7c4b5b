"""What a task is: data (ABI, scenarios, tolerances, baselines, FLOP/byte counts) plus pure functions.

A task object is cached (one per task in a process: the harness service evaluates kernel after kernel with it)
and used on both sides of the process boundary:
- in the child (the candidate's process): make inputs from a seed, poison outputs, call the candidate; the
  child's side of its one evaluation (timing calls, putting outputs into an output slot,
  gpu_harness/exchange.py) is a `ChildSide` (sides.py). Nothing the child says about correctness is trusted.
- in the parent (the judge): regenerate the same inputs from the same seed, compute the reference itself, and
  compare; what one evaluation's judge holds (the parent's end of the exchange, work started ahead, its
  timing figures) is a `JudgeSide` (sides.py), made by `new_judge()` for that evaluation alone.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .sides import Calls, FileOutputs, JudgeSide, OutputExchange

if TYPE_CHECKING:
    from ..verdict import TimingLimits

# An array of a task's target: a numpy.ndarray on the CPU, a torch.Tensor on a GPU (or whatever a task's own
# reference.py returns, checked by the task). The shared code hands arrays to the task's own methods only, so it
# does not name the type; `Arrays` is one call's arrays by name.
Array = Any
Arrays = dict[str, Array]
# a scenario's parameters by symbol
Params = dict[str, Any]
# the kernel's entry point in its built library (ctypes), with argtypes and restype set by `bind`
KernelFunction = Callable[..., Any]

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Scenario:
    id: str
    params: dict[str, Any]
    flops: float  # useful floating-point operations of one call
    bytes: float  # compulsory device-memory traffic of one call (inputs read once, outputs written once)


@dataclass
class Judgement:
    correct: bool
    error: float | None
    tolerance: float | None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class TaskError(RuntimeError):
    """The task's own code failed (its reference raised or returned the wrong shape, a baseline broke): the
    evaluation ends as an error of the task, never as the candidate's fault."""


def derive_seed(seed: int, *parts: object) -> int:
    """A per-scenario/per-run seed, derived so that the parent can regenerate exactly what the child made."""
    text = ":".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & ((1 << 62) - 1)


class Task:
    name: str = ""
    language: str = ""  # "cuda" or "cpp"
    symbol: str = ""  # the exported C function
    abi: str = ""  # the C declaration, shown to agents
    starting_kernel: Path | None = None
    default_baselines: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()  # the baselines that are libraries a user would call instead (taskspec)
    needs_gpu: bool = False
    timing_overrides: dict[str, Any] = {}  # replaces entries of evaluation.TIMING for this task
    output_names: tuple[str, ...] = ()  # the outputs of one call, in the order they are judged
    baseline_threads: int = 0  # threads of the child that own baseline calls (gpu_harness/baseline_threads.py)
    # baselines whose first call of a shape is slow (a plan to build, a kernel to compile): the child calls them
    # once on each scenario it will time them on (their median not cached yet) during the correctness phase,
    # so that this cost overlaps the judging
    baselines_to_warm: tuple[str, ...] = ()
    # per-call time bound in the child: base seconds + flops / this rate
    call_timeout_base_s: float = 20.0
    call_timeout_min_rate: float = 1e9
    goal: dict[str, Any] | None = None  # {"baseline": name, "speedup": x} when the task states its own goal
    # What a reader is shown of the task (gpu_harness/tasks/summary.py, the dashboard's task pages): what it
    # computes, where it runs (a name of gpu_harness.taskspec.TARGETS), how a candidate is judged, how its
    # useful work is counted.
    description: str = ""
    target: str = ""
    tolerance_text: str = ""
    flops_text: str = ""

    # ---- scenario lists (pure data; work everywhere) ----
    def scenarios(self) -> list[Scenario]:
        raise NotImplementedError

    def quick_ids(self) -> list[str]:
        raise NotImplementedError

    def select(self, which: str | list[str]) -> list[Scenario]:
        allsc = self.scenarios()
        by_id = {s.id: s for s in allsc}
        if isinstance(which, str):
            if which == "full":
                return allsc
            if which == "quick":
                return [by_id[i] for i in self.quick_ids()]
            which = [w.strip() for w in which.split(",") if w.strip()]
        # a scenario named twice is one scenario: each id is one outcome of the verdict, so a second would stay
        # "not run" and fail a correct kernel over how its ids were typed
        which = list(dict.fromkeys(which))
        unknown = [w for w in which if w not in by_id]
        if unknown:
            raise ValueError(
                f"unknown scenario id(s) for task {self.name}: {', '.join(unknown[:5])}"
                f" (see `python -m gpu_harness scenarios {self.name}`)"
            )
        if not which:
            raise ValueError("no scenarios selected")
        return [by_id[w] for w in which]

    def baseline_descriptions(self) -> dict[str, str]:
        """name -> what that baseline is, for every baseline the task knows (not only the default ones)."""
        return {name: name for name in self.default_baselines}

    def call_timeout_s(self, sc: Scenario) -> float:
        return self.call_timeout_base_s + sc.flops / self.call_timeout_min_rate

    # ---- environment ----
    def may_run_here(self) -> bool:
        """A cheap guess, before the (slower) runtime check, that candidates can run on this machine: if so,
        the candidate's process is started at once."""
        return not self.needs_gpu or os.path.exists("/dev/nvidiactl")

    def runtime_unavailable(self) -> str | None:
        """None when candidates can run here; else why not (e.g. no GPU)."""
        return None

    def baseline_availability(self, names: list[str]) -> dict[str, str | None]:
        """name -> None if it can run here, else a note saying why it is n/a."""
        return {n: None for n in names}

    def baseline_libs(self, names: list[str]) -> dict[str, str]:
        """Of `names`, the baselines that are compiled kernels: name -> built library path (the parent builds
        them; raises RuntimeError if one does not build)."""
        return {}

    def child_env(self) -> dict[str, str]:
        """Extra environment for the child process."""
        return {}

    def versions(self) -> str:
        """Library versions that baseline timings depend on (the baseline cache key)."""
        return ""

    # ---- child side (pure functions of the scenario and seed; the child's state is a sides.ChildSide) ----
    def bind(self, lib: ctypes.CDLL) -> KernelFunction:
        raise NotImplementedError

    def make_inputs(self, params: dict[str, Any], seed: int) -> Arrays:
        raise NotImplementedError

    def new_outputs(self, params: dict[str, Any]) -> Arrays:
        raise NotImplementedError

    def poison(self, outputs: Arrays) -> None:
        raise NotImplementedError

    def invoke(self, fn: KernelFunction, inputs: Arrays, outputs: Arrays, params: dict[str, Any]) -> int:
        raise NotImplementedError

    def new_calls(self) -> Calls:
        """A fresh device, clock and cache flush for one child process (sides.Calls)."""
        raise NotImplementedError

    # ---- moving outputs from the child to the parent (see gpu_harness/exchange.py) ----
    def output_nbytes(self, params: dict[str, Any]) -> int:
        """Bytes one call's outputs take (sizes the child's output slots)."""
        return 0

    def new_exchange(self) -> OutputExchange:
        """A fresh end of one evaluation's output exchange (each side makes its own). The default goes through
        .npy files in the evaluation's scratch folder; a GPU task's goes through device memory."""
        return FileOutputs(self.output_names)

    def baseline_callables(
        self, names: list[str], params: dict[str, Any], inputs: Arrays, libs: dict[str, Any]
    ) -> dict[str, Callable[[], object] | str]:
        """name -> zero-argument callable running the baseline on `inputs`, or a str saying why n/a."""
        return {}

    # ---- parent side ----
    def parent_prepare(self) -> None:
        """Start the judge's slow one-time preparations in the background (called before the candidate is
        built, so that the two overlap)."""

    def reference_note(self) -> str:
        """What the outputs are judged against (shown with the result)."""
        return ""

    def parent_setup(self) -> dict[str, Any]:
        """Prepare the judge (import torch, pick the device); return facts (device name, peaks)."""
        return {}

    def new_judge(self) -> JudgeSide:
        """The judge's side of one evaluation (its exchange end, its work ahead, its timing figures), made
        when the evaluation starts and closed at its end."""
        return JudgeSide(self)

    def judge(
        self,
        params: dict[str, Any],
        seed: int,
        outputs: Arrays,
        tolerance: float | None = None,
        spot_check: bool = False,
    ) -> Judgement:
        """Regenerate the inputs from `seed`, compute the reference, compare the candidate's outputs (as
        the exchange's `import_` returned them), with nothing of an evaluation but the arguments (a JudgeSide
        calls it; a task whose judge works ahead judges in its JudgeSide, and this is then a judgement by a
        judge made for it alone). `spot_check`: a timed call's output, which a task may judge on a
        random sample (chosen here, after the call) where a full reference would cost too much.
        `tolerance`: reuse a bound found earlier for this scenario instead of measuring the vendor's error."""
        raise NotImplementedError

    def identical(self, outputs_a: Arrays, outputs_b: Arrays) -> bool:
        """Bit for bit the same (numpy arrays; a GPU task compares on the device)."""
        import numpy as np

        return all(
            outputs_a[n].shape == outputs_b[n].shape
            and outputs_a[n].dtype == outputs_b[n].dtype
            and np.array_equal(outputs_a[n].view(np.uint8), outputs_b[n].view(np.uint8))
            for n in outputs_a
        )

    def timing_limits(self) -> TimingLimits:
        from ..verdict import TimingLimits

        return TimingLimits()
