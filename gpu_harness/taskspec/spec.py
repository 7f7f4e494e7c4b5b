"""The spec as the harness holds it: `TaskSpec` and its parts, frozen dataclasses of a task.toml already read and
checked (the reader in `reader.py` builds them; nothing here reads a file)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .formula import Formula
from .vocabulary import DTYPES, REFERENCE_FILE, SCALAR_C_TYPES, Target


def value_key(value: object) -> str:
    """A scenario value as the keys of id_names and of a mapping write it: booleans as true/false, others as text
    (TOML keys are text: bf16, 64, true)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass(frozen=True, eq=False)
class ByScenario:
    """A field chosen by one scenario symbol's value, e.g. dtype = {by = "dtype", bf16 = "bfloat16", fp16 =
    "float16"} (a tensor's dtype) or value = {by = "dtype", bf16 = 0, fp16 = 1} (a scalar's formula). The loader
    checks that every scenario's value has a choice, so a lookup here does not fail on a loaded spec."""

    by: str  # the scenario symbol
    choices: dict[str, Any]  # value_key(the symbol's value) -> a dtype's name, or a Formula (a scalar's value)

    @property
    def text(self) -> str:
        """As a problem quotes it (a Formula's text, for a scalar's value)."""
        shown = ", ".join(f"{k} = {getattr(v, 'text', v)}" for k, v in self.choices.items())
        return f"{{by = {self.by}, {shown}}}"

    @property
    def symbols(self) -> frozenset[str]:
        """The symbols the choices' formulas use (not `by`, which check_choices checks on its own)."""
        return frozenset().union(*(v.symbols for v in self.choices.values() if isinstance(v, Formula)))

    def __call__(self, params: dict[str, Any]) -> Any:  # the choice: a dtype's name, a number, a formula's value
        chosen = self.choices[value_key(params[self.by])]
        return chosen(params) if isinstance(chosen, Formula) else chosen


@dataclass(frozen=True)
class InputInit:
    dist: str  # "normal", "uniform", "integers", or "function" (reference.py makes it)
    a: float  # mean (normal) or low
    b: float  # std (normal) or high
    function: str = ""  # dist "function": name(rng, shape, params) in reference.py returns the array
    # normal/uniform: drawn in the tensor's own dtype (torch.randn(..., dtype=torch.bfloat16)) rather than in
    # float32 and rounded: another sequence of values for half types, the one a hand-written task may pin
    native: bool = False


@dataclass(frozen=True)
class Arg:
    """One argument of the exported C function, in order."""

    name: str
    kind: str  # "input", "output", "scalar" or "stream" (the CUDA stream the kernel runs on)
    dtype: str | ByScenario  # a stream has none (""); read it through TaskSpec.dtype(arg, params)
    shape: tuple[str, ...] = ()  # tensors: a symbol or a number per dimension
    init: InputInit | None = None  # inputs
    value: Formula | ByScenario | None = None  # scalars: bound to the scenario's symbols

    @property
    def is_tensor(self) -> bool:
        return self.kind in ("input", "output")

    @property
    def dtypes(self) -> tuple[str, ...]:
        """Every dtype the argument may have, in the order written."""
        if isinstance(self.dtype, ByScenario):
            return tuple(dict.fromkeys(self.dtype.choices.values()))
        return (self.dtype,)

    def c_declaration(self) -> str:
        if self.kind == "stream":
            return f"cudaStream_t {self.name}"
        if self.kind == "scalar":
            return f"{SCALAR_C_TYPES[str(self.dtype)]} {self.name}"
        const = "const " if self.kind == "input" else ""
        c_types = dict.fromkeys(DTYPES[d].c_type for d in self.dtypes)
        if not isinstance(self.dtype, ByScenario):
            return f"{const}{next(iter(c_types))}* {self.name}"
        # one pointer type for every scenario where there is one; else void*, the choices said beside it
        c_type = next(iter(c_types)) if len(c_types) == 1 else "void"
        said = ", ".join(f"{k}: {DTYPES[d].c_type}" for k, d in self.dtype.choices.items())
        return f"{const}{c_type}* {self.name} /* {self.dtype.by} {said} */"


@dataclass(frozen=True)
class ScenarioSpec:
    id: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Tolerance:
    """The rule one output (or, written once for the task, every output) is judged by."""

    rule: str  # "baseline" (k x a baseline's own error + floor), "rel_l2" (a fixed bound), "allclose"
    baseline: str = ""
    factor: float = 2.0
    floor: float | ByScenario = 0.0  # a number, or one chosen by a scenario symbol ({by = "dtype", ...})
    default_error: float | ByScenario = 1e-6  # used when no baseline's own error could be measured
    rel_l2: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    # the baseline rule's further choices:
    fallbacks: tuple[str, ...] = ()  # baselines tried in turn when `baseline` cannot run the scenario
    sanity: float | None = None  # an error above sanity x default_error: that baseline cannot do the scenario
    # "each": measured afresh on the inputs of every output judged; "once": on seed a's inputs, the bound then
    # held for seed b and the timed calls' spot checks (what attention_fwd has always done)
    measure: str = "each"
    ceiling: float | None = None  # the bound never exceeds this (an imported KernelBench problem: its own 1e-2)

    @property
    def baselines(self) -> tuple[str, ...]:
        """The baselines whose error may set the bound, in the order they are tried."""
        return (self.baseline, *self.fallbacks)

    def floor_on(self, params: dict[str, Any]) -> float:
        return float(self.floor(params) if isinstance(self.floor, ByScenario) else self.floor)

    def default_error_on(self, params: dict[str, Any]) -> float:
        d = self.default_error
        return float(d(params) if isinstance(d, ByScenario) else d)

    def describe(self) -> str:
        if self.rule == "baseline":
            who = f"{self.baseline}'s" + "".join(f" (else {f}'s)" for f in self.fallbacks)
            where = " on seed a's inputs" if self.measure == "once" else ""
            cap = f", at most {self.ceiling:g}" if self.ceiling is not None else ""
            return f"{self.factor:g} x {who} own error{where} + {_number_text(self.floor)}{cap}"
        if self.rule == "rel_l2":
            return f"relative L2 error <= {self.rel_l2:g}"
        return f"|out - ref| <= {self.atol:g} + {self.rtol:g} x |ref|, element by element"


def _number_text(value: object) -> str:
    """A number, or a mapping of numbers (bf16 2e-04, fp16 3e-05), as a description shows it."""
    if isinstance(value, ByScenario):
        return "(" + ", ".join(f"{k} {v:g}" for k, v in value.choices.items()) + ")"
    return f"{value:g}"


@dataclass(frozen=True)
class SpotCheck:
    """[spot_check]: a timed call's outputs are judged on indices drawn at random (after the call) along one
    scenario symbol's axis, the reference computed on those alone; where `whole` names a function of
    reference.py, it checks the whole outputs without a reference (unwritten elements, misplaced specials)."""

    sample: str  # the scenario symbol whose axis is sampled (in each output's shape that has it)
    fraction: int = 8  # 1 index in `fraction` (at most 8) ...
    min_count: int = 64  # ... and at least this many (at least 64; every index of a short axis)
    whole: str = ""  # reference.py: whole(outputs, params) -> {output: (non-finite where due finite, wrong specials)}


@dataclass(frozen=True)
class JudgeAhead:
    """[judge] ahead = true (cuda-sm90): the references, and the first tolerance baseline's outputs where a bound
    is measured, are computed on CUDA streams of their own while the child runs, in the order they are judged."""

    reference_depth: int = 4  # results held at once (each holds device memory)
    baseline_depth: int = 12
    baseline_threads: int = 8


@dataclass(frozen=True)
class Baseline:
    name: str
    function: str = ""  # a function of reference.py, called like the kernel (writes the outputs)
    kernel: Path | None = None  # a source the harness compiles like a candidate
    warm: bool = False  # its first call of a shape is slow: the child calls it once while the judge works
    # function baselines: modules that must import for it to run (else it is n/a here, with a note saying why);
    # each entry is a tuple of alternatives, any one of which is enough ("flash_attn_interface" or
    # "fa3_fwd_interface": FlashAttention-3 under either of its module names)
    requires: tuple[tuple[str, ...], ...] = ()
    # it may raise on a configuration it cannot run: n/a there for the timing, skipped by a tolerance rule that
    # names it (the next baseline of the rule is tried); the self check reports it instead of failing
    may_refuse: bool = False
    description: str = ""  # what it is, as a reader is shown (default: where it comes from)
    # a library a user would call instead of writing a kernel: the task's "best library" figure is the fastest
    # of these on each scenario (gpu_harness.figures.best_library)
    library: bool = False

    def describe(self, folder: Path) -> str:
        if self.description:
            return self.description
        if self.function:
            return f"{self.name} (reference.py:{self.function})"
        return f"{self.name} (kernel {_relative(self.kernel, folder)})"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    folder: Path
    description: str
    target: Target
    symbol: str
    args: tuple[Arg, ...]
    abi_text: str | None  # [kernel] abi_text: the declaration agents are shown, in place of the generated one
    starting_kernel: Path | None
    reference_function: str
    reference_precision: str  # "float64" or "float32": float inputs reach the reference as copies of it
    reference_fast: str  # [reference] fast: reference.py's faster reference, tried first ("" when none)
    spot_check: SpotCheck | None  # [spot_check]: sampled spot checks (None: a spot check is a full check)
    ahead: JudgeAhead | None  # [judge] ahead: the judge works ahead of the child's outputs
    baseline_threads: int  # [child] baseline_threads: threads of the child that own baseline calls
    versions_function: str  # [baselines] versions: reference.py's function naming the baselines' library versions
    scenarios: tuple[ScenarioSpec, ...]
    quick_ids: tuple[str, ...]
    tolerance: Tolerance | None  # the one rule of every output; None when each output has its own
    tolerances: dict[str, Any]  # output name -> its Tolerance (every output, in ABI order)
    baselines: dict[str, Any]  # name -> Baseline, in the order written
    default_baselines: tuple[str, ...]
    flops: Formula
    bytes: Formula | None  # None: inputs read once + outputs written once, from the ABI
    goal_baseline: str
    goal_speedup: float
    timing: dict[str, Any]  # overrides of evaluation.TIMING
    host_clock: dict[str, Any]  # overrides of verdict.TimingLimits
    call_timeout_base_s: float
    call_timeout_min_rate: float
    child_env: dict[str, Any]
    cheats: Path | None
    # field -> its line in task.toml, for the fields naming a function of reference.py or a kernel file (whose
    # problems are found once reference.py is imported or the kernel built: `task check` names the line then)
    lines: dict[str, Any] = field(default_factory=dict)

    @property
    def libraries(self) -> tuple[str, ...]:
        """The baselines marked `library = true`, in the order written."""
        return tuple(name for name, b in self.baselines.items() if b.library)

    @property
    def inputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "input")

    @property
    def outputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "output")

    @property
    def scalars(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "scalar")

    @property
    def reference_path(self) -> Path:
        return self.folder / REFERENCE_FILE

    def abi(self) -> str:
        """The exported symbol's C declaration: what the agent is shown and the kernel must define (the task's own
        text where it gives one, e.g. with a comment per argument)."""
        return self.abi_text or self.declaration()

    def declaration(self) -> str:
        """The declaration generated from [[args]]: one line of C (the stub kernel is written from it)."""
        return f'extern "C" int {self.symbol}({", ".join(a.c_declaration() for a in self.args)});'

    def shape(self, arg: Arg, params: dict[str, Any]) -> tuple[int, ...]:
        return tuple(int(params[d]) if isinstance(d, str) else int(d) for d in arg.shape)

    def dtype(self, arg: Arg, params: dict[str, Any]) -> str:
        """The argument's dtype in this scenario: its own, or the one its mapping chooses. Every reader of a dtype
        (making inputs and outputs, byte counts, the judge's checks) goes through here."""
        return arg.dtype(params) if isinstance(arg.dtype, ByScenario) else arg.dtype

    def describe_tolerance(self) -> str:
        """The tolerance rule(s) as a reader is shown them: one rule, or each output's."""
        if self.tolerance is not None:
            return self.tolerance.describe()
        return "; ".join(f"{name}: {rule.describe()}" for name, rule in self.tolerances.items())

    def named_functions(self) -> list[tuple[str, str]]:
        """(field, name) of every function of reference.py the spec names, in the order written."""
        named = [("reference.function", self.reference_function)]
        named += [("reference.fast", self.reference_fast)] if self.reference_fast else []
        named += [
            (f"args.{a.name}.init", a.init.function)
            for a in self.inputs
            if a.init is not None and a.init.dist == "function"
        ]
        named += [(f"baselines.{n}.function", b.function) for n, b in self.baselines.items() if b.function]
        named += [("baselines.versions", self.versions_function)] if self.versions_function else []
        if self.spot_check is not None and self.spot_check.whole:
            named.append(("spot_check.whole", self.spot_check.whole))
        return named

    def smallest_scenario(self) -> ScenarioSpec:
        """The scenario with the fewest tensor elements (where the reference is tried first)."""

        def size(sc: ScenarioSpec) -> int:
            return sum(math.prod(self.shape(a, sc.params)) for a in self.args if a.is_tensor)

        return min(self.scenarios, key=size)


def _relative(path: Path | None, folder: Path) -> str:
    if path is None:
        return "-"
    try:
        return str(path.relative_to(folder))
    except ValueError:
        import os

        return os.path.relpath(path, folder)
