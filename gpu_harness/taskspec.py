"""A task as data: read `tasks/<name>/task.toml`, check it, and hold it in frozen dataclasses.

This module only parses and validates (standard library only: tomllib, ast, string); running a task's
reference and judging a candidate is gpu_harness/tasks/data_task.py's job. Every problem found is reported
with the file, the field and, where the text shows it, the line, all at once (`TaskSpecError`), so that a
task author fixes a spec in one pass. docs/tasks.md describes the format field by field.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import math
import re
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .figures import BEST_LIBRARY

SPEC_FILE = "task.toml"
REFERENCE_FILE = "reference.py"
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# names a C/C++/CUDA argument may not take, though Python allows them (an argument is also a parameter of
# reference.py's functions, so Python's keywords are refused too: keyword.iskeyword)
C_RESERVED = frozenset(
    "auto bool break case catch char class const constexpr continue default delete do double else enum "
    "extern float for goto if inline int long namespace new operator private protected public register "
    "return short signed sizeof static struct switch template this throw try typedef union unsigned "
    "using virtual void volatile while half dim3 int8_t int16_t int32_t int64_t uint8_t size_t".split()
)


# ---- problems ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecProblem:
    file: str
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}"


class TaskSpecError(ValueError):
    """A task folder that cannot be used; `problems` says every reason (file, field, line)."""

    def __init__(self, problems: list[SpecProblem]):
        self.problems = list(problems)
        super().__init__("invalid task:\n" + "\n".join(f"  {p}" for p in self.problems))


# ---- the vocabulary: targets and dtypes -------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    language: str  # what gpu_harness.build compiles: "cpp" or "cuda"
    needs_gpu: bool
    source_suffix: str
    arrays: str  # what reference.py's functions get: "numpy" arrays or "torch" tensors


TARGETS = {
    "cpu": Target("cpu", "cpp", needs_gpu=False, source_suffix=".cpp", arrays="numpy"),
    "cuda-sm90": Target("cuda-sm90", "cuda", needs_gpu=True, source_suffix=".cu", arrays="torch"),
}
# the precision the reference computes in: float inputs reach it as copies of this dtype
REFERENCE_PRECISIONS = ("float64", "float32")


@dataclass(frozen=True)
class DType:
    name: str
    c_type: str  # as written in the generated C declaration
    numpy: str | None  # numpy's name for it (None: no numpy type, e.g. bfloat16)
    itemsize: int
    kind: str  # "float" or "int"
    targets: tuple[str, ...]  # where it may be a tensor's element type


DTYPES = {
    d.name: d
    for d in (
        DType("float32", "float", "float32", 4, "float", ("cpu", "cuda-sm90")),
        DType("float64", "double", "float64", 8, "float", ("cpu", "cuda-sm90")),
        DType("float16", "__half", "float16", 2, "float", ("cuda-sm90",)),
        DType("bfloat16", "__nv_bfloat16", None, 2, "float", ("cuda-sm90",)),
        DType("int8", "int8_t", "int8", 1, "int", ("cpu", "cuda-sm90")),
        DType("uint8", "uint8_t", "uint8", 1, "int", ("cpu", "cuda-sm90")),
        DType("int32", "int32_t", "int32", 4, "int", ("cpu", "cuda-sm90")),
        DType("int64", "int64_t", "int64", 8, "int", ("cpu", "cuda-sm90")),
    )
}
# scalars are passed by value; `int` and `float` read as the C declaration every kernel writer expects
SCALAR_C_TYPES = {"int32": "int", "int64": "int64_t", "float32": "float", "float64": "double"}
DISTRIBUTIONS = {"normal": ("mean", "std"), "uniform": ("low", "high"), "integers": ("low", "high")}

# what a task may change of the harness's timing, and within which bounds: a task tunes for its machine's
# noise, it never switches a check off (the bounds keep the host clock, the spot checks and the repeats)
TIMING_KEYS = {  # key of gpu_harness/evaluation.py's TIMING -> (lowest, highest)
    "budget_ms": (1.0, 2000.0),
    "min_reps": (1, 100),
    "max_reps": (1, 200),
    "early_min": (3, 100),
    "ci_rel": (0.001, 0.05),
    "checks": (1, 3),  # < exchange.SLOTS: the child never waits for a slot in the middle of timing
    "batch_ms": (1.0, 500.0),
    "batch_max": (10, 10000),
}
HOST_CLOCK_KEYS = {  # verdict.TimingLimits field -> (lowest, highest)
    "host_ratio": (1.0, 2.0),
    "host_overhead_ms": (0.0, 1.0),
    "batch_latency_ms": (0.0, 50.0),
}
CALL_TIMEOUT_KEYS = {"base_s": (1.0, 600.0), "min_rate": (1e6, 1e15)}
# a task's size: scenarios (each is built, checked and, on a full run, judged) and one scenario's tensors (the
# inputs, outputs and the judge's copies live at once; an H200 holds 141 GB)
MAX_SCENARIOS = 10000
MAX_SCENARIO_BYTES = 128 << 30
# the child's environment: a task may add variables, never these (the loader, Python, the harness's own)
FORBIDDEN_ENV_PREFIXES = ("LD_", "PYTHON", "KSEEK_", "CUDA_", "NVIDIA_", "PATH")


# ---- formulas: arithmetic on scenario symbols, parsed with ast, never eval'd ------------------------------

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: _power(a, b),
}


def _power(a, b):
    if abs(b) > 64:  # a spec's formula counts operations; "9**9**9" would only stall the loader
        raise ValueError(f"exponent {b} is too large")
    # "((9**64)**64)**64...": the same (integers; a float's power overflows on its own)
    if isinstance(a, int) and isinstance(b, int) and abs(a) > 1 and abs(b) * math.log2(abs(a)) > FORMULA_MAX_BITS:
        raise ValueError(f"{a!r}**{b!r} is too large")
    return a**b


class SymbolValueError(TypeError):
    """A formula's symbol whose scenario value is no number (`value`: what it is)."""

    def __init__(self, name: str, value):
        self.value = value
        super().__init__(f"symbol {name!r} is {value!r}, not a number")


def _symbol_value(params: dict, name: str):
    """A symbol's value as a formula uses it: a number (a boolean counts 1 or 0), never text ("bf16"*2)."""
    value = params[name]
    if not isinstance(value, (int, float)):
        raise SymbolValueError(name, value)
    return value


_FUNCS = {"min": min, "max": max}
FORMULA_HELP = "numbers, scenario symbols, + - * / // ** ( ) and min()/max()"
# a formula's size: its text, how deep it nests (each operator, call and parenthesis a level), the magnitude
# of a power; a formula counts the operations of one call, and these bound the loader's time on it
FORMULA_MAX_CHARS = 1000
FORMULA_MAX_DEPTH = 100
FORMULA_MAX_BITS = 1024


@dataclass(frozen=True, eq=False)
class Formula:
    """An arithmetic expression of scenario symbols, e.g. "2*m*n*k"."""

    text: str
    symbols: frozenset[str]
    _fn: object = field(repr=False, compare=False)

    def __call__(self, params: dict):
        return self._fn(params)


class FormulaError(ValueError):
    pass


def parse_formula(text) -> Formula:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise FormulaError(f"expected a formula (a string or a number), got {type(text).__name__}")
    src = str(text)
    if len(src) > FORMULA_MAX_CHARS:
        raise FormulaError(f"{src[:40]!r}... is {len(src)} characters long: at most {FORMULA_MAX_CHARS}")
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as e:
        raise FormulaError(f"{src!r} does not parse: {e.msg}") from None
    except (RecursionError, MemoryError):
        raise FormulaError(f"{src[:40]!r}... nests too deep (at most {FORMULA_MAX_DEPTH} levels)") from None
    symbols: set[str] = set()
    fn = _compile(tree.body, src, symbols)
    return Formula(src, frozenset(symbols), fn)


def _compile(node, src: str, symbols: set, depth: int = 0):
    """The node as a closure over params (a tree of small functions: fast to call, nothing eval'd)."""
    if depth > FORMULA_MAX_DEPTH:
        raise FormulaError(f"{src[:40]!r}... nests too deep (at most {FORMULA_MAX_DEPTH} levels)")
    depth += 1
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        return lambda p: value
    if isinstance(node, ast.Name):
        name = node.id
        symbols.add(name)
        return lambda p: _symbol_value(p, name)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        op = _BINOPS[type(node.op)]
        left, right = _compile(node.left, src, symbols, depth), _compile(node.right, src, symbols, depth)
        return lambda p: op(left(p), right(p))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner, sign = _compile(node.operand, src, symbols, depth), -1 if isinstance(node.op, ast.USub) else 1
        return lambda p: sign * inner(p)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and node.args
        and not node.keywords
    ):
        f, args = _FUNCS[node.func.id], [_compile(a, src, symbols, depth) for a in node.args]
        return lambda p: f(*(a(p) for a in args))
    piece = ast.get_source_segment(src.strip(), node) or type(node).__name__
    raise FormulaError(f"{src!r}: {piece!r} is not allowed (a formula may use {FORMULA_HELP})")


# ---- the spec --------------------------------------------------------------------------------------------


def value_key(value) -> str:
    """A scenario value as the keys of id_names and of a mapping write it: booleans as true/false, others as text
    (TOML keys are text: bf16, 64, true)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _id_text(symbol: str, value, id_names: dict):
    """A scenario's value as its id writes it: the name id_names gives it (KeyError when it gives none)."""
    if symbol not in id_names:
        return value
    key = value_key(value)
    if key not in id_names[symbol]:
        raise KeyError(f"{symbol} = {key}")
    return id_names[symbol][key]


@dataclass(frozen=True, eq=False)
class ByScenario:
    """A field chosen by one scenario symbol's value, e.g. dtype = {by = "dtype", bf16 = "bfloat16", fp16 =
    "float16"} (a tensor's dtype) or value = {by = "dtype", bf16 = 0, fp16 = 1} (a scalar's formula). The loader
    checks that every scenario's value has a choice, so a lookup here does not fail on a loaded spec."""

    by: str  # the scenario symbol
    choices: dict  # value_key(the symbol's value) -> a dtype's name, or a Formula (a scalar's value)

    @property
    def text(self) -> str:
        """As a problem quotes it (a Formula's text, for a scalar's value)."""
        shown = ", ".join(f"{k} = {getattr(v, 'text', v)}" for k, v in self.choices.items())
        return f"{{by = {self.by}, {shown}}}"

    @property
    def symbols(self) -> frozenset[str]:
        """The symbols the choices' formulas use (not `by`, which check_choices checks on its own)."""
        return frozenset().union(*(v.symbols for v in self.choices.values() if isinstance(v, Formula)))

    def __call__(self, params: dict):
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
            return f"{SCALAR_C_TYPES[self.dtype]} {self.name}"
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
    params: dict


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

    def floor_on(self, params: dict) -> float:
        return float(self.floor(params) if isinstance(self.floor, ByScenario) else self.floor)

    def default_error_on(self, params: dict) -> float:
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


def _number_text(value) -> str:
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
    tolerances: dict  # output name -> its Tolerance (every output, in ABI order)
    baselines: dict  # name -> Baseline, in the order written
    default_baselines: tuple[str, ...]
    flops: Formula
    bytes: Formula | None  # None: inputs read once + outputs written once, from the ABI
    goal_baseline: str
    goal_speedup: float
    timing: dict  # overrides of evaluation.TIMING
    host_clock: dict  # overrides of verdict.TimingLimits
    call_timeout_base_s: float
    call_timeout_min_rate: float
    child_env: dict
    cheats: Path | None
    # field -> its line in task.toml, for the fields naming a function of reference.py or a kernel file (whose
    # problems are found once reference.py is imported or the kernel built: `task check` names the line then)
    lines: dict = field(default_factory=dict)

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

    def shape(self, arg: Arg, params: dict) -> tuple[int, ...]:
        return tuple(int(params[d]) if isinstance(d, str) else int(d) for d in arg.shape)

    def dtype(self, arg: Arg, params: dict) -> str:
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
        named += [(f"args.{a.name}.init", a.init.function) for a in self.inputs if a.init.dist == "function"]
        named += [(f"baselines.{n}.function", b.function) for n, b in self.baselines.items() if b.function]
        named += [("baselines.versions", self.versions_function)] if self.versions_function else []
        if self.spot_check is not None and self.spot_check.whole:
            named.append(("spot_check.whole", self.spot_check.whole))
        return named

    def smallest_scenario(self) -> ScenarioSpec:
        """The scenario with the fewest tensor elements (where the reference is tried first)."""

        def size(sc):
            return sum(math.prod(self.shape(a, sc.params)) for a in self.args if a.is_tensor)

        return min(self.scenarios, key=size)


def _dims(arg: Arg, params: dict) -> list:
    """The argument's shape on a scenario as written there (a symbol the scenario lacks reads 0), unchecked."""
    return [params.get(d, 0) if isinstance(d, str) else d for d in arg.shape]


def _scalar_problem(dtype: str | None, value) -> str | None:
    """What is wrong with a scalar's value for its dtype (None: nothing): an integer's is a whole number its C
    type holds, a float32's is finite in float32."""
    if dtype in ("int32", "int64"):
        bits = 32 if dtype == "int32" else 64
        if value != int(value):
            return f"{value!r} is not a whole number ({dtype})"
        if not -(1 << (bits - 1)) <= int(value) < 1 << (bits - 1):
            return f"{int(value)} does not fit in {dtype}"
    if dtype == "float32" and abs(value) > FLOAT32_MAX:
        return f"{value!r} does not fit in float32 (at most {FLOAT32_MAX:.7g})"
    return None


FLOAT32_MAX = 3.4028234663852886e38
# the largest finite value of each float dtype, and how far a normal init may reach: mean + 8 std (a draw beyond
# it has odds of about 1e-15, so a task's largest tensor would hold one about once in a million runs)
FLOAT_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": FLOAT32_MAX,
    "float64": 1.7976931348623157e308,
}
NORMAL_REACH_STD = 8


def _float_range_problem(dist: str, a: float, b: float, dtypes: list[DType]) -> str | None:
    """What is wrong with a normal or uniform init for the tensor's dtypes (None: nothing): its draws must stay
    finite in each dtype, or the input holds inf before any kernel runs."""
    reach = abs(a) + NORMAL_REACH_STD * b if dist == "normal" else max(abs(a), abs(b))
    for d in dtypes:
        if reach > FLOAT_MAX[d.name]:
            how = f"mean {a:g} + {NORMAL_REACH_STD} std of {b:g}" if dist == "normal" else f"[{a:g}, {b:g})"
            return f"{how} reaches {reach:g}, beyond {d.name}'s largest finite value {FLOAT_MAX[d.name]:g}"
    return None


def _integer_range_problem(bounds: list, dtypes: list[DType]) -> str | None:
    """What is wrong with an integers init's [low, high) for the tensor's dtypes (None: nothing): whole numbers,
    every value drawn held by each dtype (high is excluded, so high may be the largest value + 1)."""
    low, high = bounds
    if any(type(b) is not int and b != int(b) for b in bounds):
        return f"low = {low!r}, high = {high!r}: integers' bounds are whole numbers"
    low, high = int(low), int(high)
    for d in dtypes:
        bits, signed = d.itemsize * 8, d.name.startswith("int")
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        if low < lo or high > hi:
            return f"[{low}, {high}) does not fit in {d.name} ([{lo}, {hi}) does)"
    return None


def _relative(path: Path | None, folder: Path) -> str:
    if path is None:
        return "-"
    try:
        return str(path.relative_to(folder))
    except ValueError:
        import os

        return os.path.relpath(path, folder)


# ---- finding lines: tomllib gives none, so the text is scanned for the key ----------------------------------


_HEADER_RE = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")  # [name] or [[name]]


class _Lines:
    def __init__(self, text: str):
        self.lines = text.splitlines()

    def header(self, name: str, index: int = 0) -> int | None:
        """Line of the index-th `[name]` or `[[name]]` header."""
        pat = re.compile(r"^\s*\[\[?\s*" + re.escape(name) + r"\s*\]\]?\s*(#.*)?$")
        hits = [i + 1 for i, line in enumerate(self.lines) if pat.match(line)]
        return hits[index] if index < len(hits) else None

    def key(self, key: str, after: int | None = 0, containing: str | None = None) -> int | None:
        """First line at or after `after` that sets `key` (as `key =` or `key = ...` inline) and contains
        `containing`; `after` (the line) when not found, None without `after`. When `after` is a table's
        header, only that table (and its sub-tables) is searched: a key missing from one [[args]] table is
        not found in the next one."""
        pat = re.compile(r"(^|[\s{,])" + re.escape(key) + r"\s*=")
        start = after or 0
        table = _HEADER_RE.match(self.lines[start - 1]) if 0 < start <= len(self.lines) else None
        for i in range(max(0, start - 1), len(self.lines)):
            line = self.lines[i]
            if table and i >= start and (other := _HEADER_RE.match(line)):
                if not other.group(1).startswith(table.group(1) + "."):
                    break
            if pat.search(line.split("#", 1)[0]) and (containing is None or containing in line):
                return i + 1
        return after or None

    def containing(self, text: str, after: int | None = 0) -> int | None:
        for i in range(max(0, (after or 0) - 1), len(self.lines)):
            if text in self.lines[i]:
                return i + 1
        return after or None


# ---- loading ---------------------------------------------------------------------------------------------


def load_spec(folder: str | Path) -> TaskSpec:
    """Read and check the task folder; raises TaskSpecError naming every problem found."""
    folder = Path(folder).resolve()
    path = folder / SPEC_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TaskSpecError([SpecProblem(str(path), "task.toml", f"cannot read it: {e}")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise TaskSpecError(
            [SpecProblem(str(path), "task.toml", f"not valid TOML: {e}", int(m.group(1)) if m else None)]
        ) from None
    return _SpecReader(folder, path, text, data).read()


@dataclass(frozen=True)
class _IdTemplate:
    """scenarios.id as read: the template, its line, and its fields (None when the template is unusable)."""

    template: object
    line: int | None
    fields: list[str] | None


class _SpecReader:
    """One pass over the parsed TOML, collecting problems rather than stopping at the first."""

    def __init__(self, folder: Path, path: Path, text: str, data: dict):
        self.folder, self.path, self.data = folder, path, data
        self.lines = _Lines(text)
        self.problems: list[SpecProblem] = []
        self.where: dict[str, int | None] = {}  # TaskSpec.lines

    def problem(self, fieldname: str, message: str, line: int | None = None) -> None:
        self.problems.append(SpecProblem(str(self.path), fieldname, message, line))

    def table(self, key: str) -> dict:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            self.problem(key, f"must be a table ([{key}])", self.lines.key(key))
            return {}
        return value

    def read(self) -> TaskSpec:
        name = self.folder.name
        if not NAME_RE.match(name):
            self.problem("name", f"the folder's name {name!r} is the task's name: use lowercase letters, digits, _")
        known = {
            "description",
            "target",
            "kernel",
            "args",
            "reference",
            "scenarios",
            "tolerance",
            "baselines",
            "formulas",
            "goal",
            "timing",
            "host_clock",
            "call_timeout",
            "child",
            "cheats",
            "spot_check",
            "judge",
        }
        for key in self.data:
            if key not in known:
                line = self.lines.header(key) or self.lines.key(key)
                self.problem(key, f"unknown field (known: {', '.join(sorted(known))})", line)
        if not isinstance(self.data.get("description", ""), str):
            self.problem("description", "one line of text", self.lines.key("description"))
        target = self.read_target()
        symbol, starting, abi_text = self.read_kernel(target)
        args = self.read_args(target)
        self.check_abi_text(abi_text, symbol, args)
        reference_function, reference_precision, reference_fast = self.read_reference()
        scenarios, quick = self.read_scenarios(args)
        flops, nbytes = self.read_formulas(scenarios)
        baselines, defaults, versions_function = self.read_baselines()
        tolerances, uniform = self.read_tolerance(baselines, args, scenarios)
        goal_baseline, goal_speedup = self.read_goal(baselines)
        timing, host_clock, (base_s, min_rate) = self.read_timing()
        child_env, baseline_threads = self.read_child()
        spot_check = self.read_spot_check(args, scenarios)
        ahead = self.read_judge(target)
        cheats = self.read_cheats()
        self.check_symbols(args, scenarios, self.check_choices(args, scenarios))
        if self.problems:
            raise TaskSpecError(self.problems)
        return TaskSpec(
            name=name,
            folder=self.folder,
            description=str(self.data.get("description", "")),
            target=target,
            symbol=symbol,
            args=tuple(args),
            abi_text=abi_text,
            starting_kernel=starting,
            reference_function=reference_function,
            reference_precision=reference_precision,
            reference_fast=reference_fast,
            spot_check=spot_check,
            ahead=ahead,
            baseline_threads=baseline_threads,
            versions_function=versions_function,
            scenarios=tuple(scenarios),
            quick_ids=tuple(quick),
            tolerance=uniform,
            tolerances=tolerances,
            baselines=baselines,
            default_baselines=tuple(defaults),
            flops=flops,
            bytes=nbytes,
            goal_baseline=goal_baseline,
            goal_speedup=goal_speedup,
            timing=timing,
            host_clock=host_clock,
            call_timeout_base_s=base_s,
            call_timeout_min_rate=min_rate,
            child_env=child_env,
            cheats=cheats,
            lines=dict(self.where),
        )

    # -- target and kernel --
    def read_target(self) -> Target:
        value = self.data.get("target")
        if value not in TARGETS:
            self.problem("target", f"{value!r} is not a target (known: {', '.join(TARGETS)})", self.lines.key("target"))
            return TARGETS["cpu"]
        return TARGETS[value]

    def read_kernel(self, target: Target) -> tuple[str, Path | None, str | None]:
        kernel = self.table("kernel")
        line = self.lines.header("kernel")
        self.only(kernel, line, {"symbol", "abi_text", "starting"}, section="kernel", why="unknown field")
        symbol = kernel.get("symbol")
        if (
            not isinstance(symbol, str)
            or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", symbol or "")
            or symbol in C_RESERVED
        ):
            self.problem("kernel.symbol", f"{symbol!r} is not a C identifier", self.lines.key("symbol", line) or line)
            symbol = "kernel"
        abi_text = kernel.get("abi_text")
        if abi_text is not None and (not isinstance(abi_text, str) or not abi_text.strip()):
            self.problem(
                "kernel.abi_text", "the declaration agents are shown, as text", self.lines.key("abi_text", line)
            )
            abi_text = None
        starting = kernel.get("starting")
        if starting is None:
            return symbol, None, abi_text
        path = self.file_field("kernel.starting", starting, self.lines.key("starting", line))
        self.where["kernel.starting"] = self.lines.key("starting", line)
        if path is not None and path.suffix != target.source_suffix:
            self.problem(
                "kernel.starting",
                f"{path.name}: a {target.name} kernel is a {target.source_suffix} file",
                self.lines.key("starting", line),
            )
        return symbol, path, abi_text

    def check_abi_text(self, abi_text: str | None, symbol: str, args: list[Arg]) -> None:
        """A declaration written by hand still names the symbol and every argument: the agent is shown it, and
        a text that drifted from [[args]] would describe another ABI than the one the harness calls."""
        if abi_text is None:
            return
        line = self.lines.key("abi_text", self.lines.header("kernel"))
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", abi_text))
        if 'extern "C"' not in abi_text or symbol not in words:
            self.problem("kernel.abi_text", f'declares no extern "C" {symbol} (the symbol [kernel] names)', line)
        missing = [a.name for a in args if a.name not in words]
        if missing:
            self.problem("kernel.abi_text", f"does not name argument(s) {', '.join(missing)} of [[args]]", line)

    def file_field(self, fieldname: str, value, line) -> Path | None:
        if not isinstance(value, str) or not value:
            self.problem(fieldname, f"expected a path (relative to the task folder), got {value!r}", line)
            return None
        path = (self.folder / value).resolve()
        if not path.is_file():
            self.problem(fieldname, f"{value}: no such file ({path})", line)
            return None
        return path

    # -- the ABI --
    def read_args(self, target: Target) -> list[Arg]:
        raw = self.data.get("args")
        if not isinstance(raw, list) or not raw:
            self.problem("args", "the kernel's arguments, in order, as [[args]] tables: none given", None)
            return []
        out, seen = [], set()
        for i, item in enumerate(raw):
            arg = self.read_arg(i, item, target, seen, out)
            if arg is not None:
                out.append(arg)
        if out and not any(a.kind == "output" for a in out):
            self.problem("args", "no argument is an output: there would be nothing to judge", None)
        return out

    def read_arg(self, i: int, item, target: Target, seen: set, out: list[Arg]) -> Arg | None:
        """The i-th [[args]] table; None when it is unusable (its problems said). `seen`: the names so far;
        `out`: the arguments read so far."""
        line = self.lines.header("args", i)
        if not isinstance(item, dict):
            self.problem(f"args[{i}]", "must be a table", line)
            return None
        name = self.read_arg_name(f"args[{i}]", item.get("name"), line, seen)
        if name is None:
            return None
        where = f"args.{name}"
        for key in item:
            if key not in ("name", "kind", "dtype", "shape", "init", "value"):
                self.problem(f"{where}.{key}", "unknown field", self.lines.key(key, line))
        kind = item.get("kind")
        if kind not in ("input", "output", "scalar", "stream"):
            kinds = "input, output, scalar or stream" if target.language == "cuda" else "input, output or scalar"
            self.problem(f"{where}.kind", f"{kind!r}: expected {kinds}", self.lines.key("kind", line))
            return None
        if kind == "stream":
            return self.read_stream(where, item, target, line, out)
        if kind == "scalar":
            return self.read_scalar_arg(where, name, item, line)
        return self.read_tensor_arg(where, name, kind, item, target, line)

    def read_arg_name(self, where: str, name, line, seen: set) -> str | None:
        """An argument's name: a C identifier that is no keyword of C or Python (the kernel and reference.py's
        functions take the arguments by name). A second use of a name is said, and the argument still read."""
        if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            self.problem(f"{where}.name", f"{name!r} is not a C identifier", self.lines.key("name", line))
            return None
        where = f"args.{name}"
        if keyword.iskeyword(name) or name in C_RESERVED:
            lang = "Python" if keyword.iskeyword(name) else "C/C++"
            self.problem(
                f"{where}.name",
                f"{name!r} is a {lang} keyword or type name: the kernel and reference.py's functions take the"
                " arguments by name",
                self.lines.key("name", line),
            )
            return None
        if name in seen:
            self.problem(f"{where}.name", "a second argument of this name", self.lines.key("name", line))
        seen.add(name)
        return name

    def read_scalar_arg(self, where: str, name: str, item: dict, line) -> Arg | None:
        """kind = "scalar": a C type of SCALAR_C_TYPES and a value (a formula, or formulas chosen by scenario)."""
        dtype = item.get("dtype")
        if not isinstance(dtype, str) or dtype not in SCALAR_C_TYPES:
            fixed = " (a scalar's C type is fixed: map its value instead)" if isinstance(dtype, dict) else ""
            self.problem(
                f"{where}.dtype",
                f"unknown scalar dtype {dtype!r} (known: {', '.join(SCALAR_C_TYPES)}){fixed}",
                self.lines.key("dtype", line),
            )
            return None
        if "value" not in item:
            self.problem(f"{where}.value", "a scalar needs a value (a formula of the scenario's symbols)", line)
            return None
        value = self.read_value(f"{where}.value", item["value"], self.lines.key("value", line))
        return Arg(name, "scalar", dtype, value=value) if value is not None else None

    def read_tensor_arg(self, where: str, name: str, kind: str, item: dict, target: Target, line) -> Arg | None:
        """kind = "input" or "output": a dtype (or dtypes chosen by scenario), a shape of symbols and sizes, and
        for an input how it is made from the seed."""
        dtype = self.read_tensor_dtype(where, item.get("dtype"), target, self.lines.key("dtype", line))
        if dtype is None:
            return None
        shape = item.get("shape")
        if not isinstance(shape, list) or not all(
            (isinstance(d, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", d)) or (type(d) is int and d >= 0)
            for d in shape
        ):
            self.problem(
                f"{where}.shape",
                f'{shape!r}: expected a list of symbols or sizes, e.g. ["m", "k"]',
                self.lines.key("shape", line),
            )
            return None
        init = None
        arg_dtypes = dtype.choices.values() if isinstance(dtype, ByScenario) else (dtype,)
        if kind == "input":
            self.where[f"{where}.init"] = self.lines.key("init", line) or line
            init = self.read_init(
                where, item.get("init"), [DTYPES[d] for d in arg_dtypes], self.lines.key("init", line) or line
            )
            if init is None:
                return None
        elif "init" in item:
            self.problem(f"{where}.init", "an output is not made from the seed (it is poisoned)", line)
        return Arg(name, kind, dtype, shape=tuple(shape), init=init)

    def read_tensor_dtype(self, where: str, dtype, target: Target, dline) -> str | ByScenario | None:
        """A tensor's dtype on `target`, or dtypes of one kind (float or integer) chosen by a scenario symbol."""
        if not isinstance(dtype, dict):
            problem = self.tensor_dtype(dtype, target)
            if problem:
                self.problem(f"{where}.dtype", problem, dline)
                return None
            return dtype
        mapping = self.read_mapping(f"{where}.dtype", dtype, dline, lambda d: self.tensor_dtype(d, target))
        if mapping is None:
            return None
        if len({DTYPES[d].kind for d in mapping.choices.values()}) > 1:
            self.problem(f"{where}.dtype", "the choices mix float and integer dtypes (one init makes both)", dline)
            return None
        return mapping

    def read_stream(self, where: str, item: dict, target: Target, line, out: list) -> Arg | None:
        """kind = "stream": the CUDA stream the kernel runs on, declared cudaStream_t; the harness passes 0, the
        legacy default stream its CUDA events time (a kernel that takes a stream can be called like a library's).
        `out`: the arguments read so far (a kernel runs on one stream)."""
        if target.language != "cuda":
            self.problem(f"{where}.kind", f"a stream is a CUDA argument: target {target.name} has none", line)
            return None
        for key in ("dtype", "shape", "init", "value"):
            if key in item:
                self.problem(f"{where}.{key}", "a stream has no " + key, self.lines.key(key, line))
        if any(a.kind == "stream" for a in out):
            self.problem(f"{where}.kind", "a second stream: a kernel runs on one", line)
            return None
        return Arg(item["name"], "stream", "")

    def tensor_dtype(self, dtype, target: Target) -> str | None:
        """What is wrong with a tensor's dtype on `target`; None when nothing is."""
        if not isinstance(dtype, str) or dtype not in DTYPES:
            return f"unknown dtype {dtype!r} (known: {', '.join(DTYPES)})"
        if target.name not in DTYPES[dtype].targets:
            return f"{dtype} is not available on target {target.name}"
        return None

    def read_value(self, fieldname: str, value, line) -> Formula | ByScenario | None:
        """A scalar's value: a formula, or a formula chosen by a scenario symbol ({by = "dtype", bf16 = 0, ...})."""
        if isinstance(value, dict):

            def formula_problem(v):
                try:
                    parse_formula(v)
                except FormulaError as e:
                    return str(e)
                return None

            mapping = self.read_mapping(fieldname, value, line, formula_problem)
            if mapping is None:
                return None
            return ByScenario(mapping.by, {k: parse_formula(v) for k, v in mapping.choices.items()})
        try:
            return parse_formula(value)
        except FormulaError as e:
            self.problem(fieldname, str(e), line)
            return None

    def read_mapping(self, fieldname: str, mapping: dict, line, problem_of) -> ByScenario | None:
        """{by = "symbol", value = choice, ...}: each choice checked by problem_of (None: fine). Whether every
        scenario's value has a choice is checked once the scenarios are read (check_choices)."""
        by = mapping.get("by")
        choices = {k: v for k, v in mapping.items() if k != "by"}
        ok = True
        if not isinstance(by, str) or not by.isidentifier():
            self.problem(
                fieldname, f'by = {by!r}: name the scenario symbol that chooses, e.g. {{by = "dtype", ...}}', line
            )
            ok = False
        if not choices:
            self.problem(fieldname, "no choices: give value = choice for each value of the symbol", line)
            ok = False
        for key, choice in choices.items():
            said = problem_of(choice)
            if said:
                self.problem(fieldname, f"{key}: {said}", line)
                ok = False
        return ByScenario(by, choices) if ok else None

    def read_init(self, where: str, init, dtypes: list[DType], line) -> InputInit | None:
        """How the input is made; `dtypes`: every dtype it may have (one kind, float or int)."""
        dtype = dtypes[0]
        if init is None:
            init = {"dist": "normal"} if dtype.kind == "float" else None
        if not isinstance(init, dict):
            self.problem(f"{where}.init", 'how the input is made from the seed, e.g. {dist = "normal"}', line)
            return None
        if "function" in init:
            return self.read_init_function(where, init, line)
        dist = init.get("dist")
        if dist not in DISTRIBUTIONS:
            known = ", ".join(DISTRIBUTIONS)
            self.problem(
                f"{where}.init.dist", f"{dist!r}: expected one of {known} (or init = {{function = ...}})", line
            )
            return None
        if dist == "integers" and dtype.kind != "int" or dist != "integers" and dtype.kind != "float":
            self.problem(f"{where}.init.dist", f"{dist} does not make {dtype.name} values", line)
            return None
        a_key, b_key = DISTRIBUTIONS[dist]
        vals = self.read_init_bounds(where, init, dist, line)
        if vals is None:
            return None
        for key in init:
            if key not in ("dist", a_key, b_key, "native") or key == "native" and dist == "integers":
                self.problem(f"{where}.init.{key}", f"unknown field for dist = {dist!r}", line)
        native = init.get("native", False)
        if not isinstance(native, bool):
            self.problem(f"{where}.init.native", f"true or false, got {native!r}", line)
            return None
        if dist == "integers":
            said = _integer_range_problem([init[a_key], init[b_key]], dtypes)
            if said:
                self.problem(f"{where}.init", said, line)
                return None
            vals = [int(init[a_key]), int(init[b_key])]  # exact: a float would round 2**62 + 1
        if dist == "normal" and not vals[1] > 0 or dist != "normal" and not vals[0] < vals[1]:
            self.problem(f"{where}.init", f"an empty range: {a_key} = {vals[0]:g}, {b_key} = {vals[1]:g}", line)
            return None
        if dist != "integers" and (said := _float_range_problem(dist, vals[0], vals[1], dtypes)):
            self.problem(f"{where}.init", said, line)
            return None
        return InputInit(dist, vals[0], vals[1], native=native)

    def read_init_function(self, where: str, init: dict, line) -> InputInit | None:
        """init = {function = "make_x"}: the input is made by a function of reference.py, and by nothing else."""
        fn = init["function"]
        if not isinstance(fn, str) or not fn.isidentifier() or set(init) != {"function"}:
            self.problem(f"{where}.init", 'a function of reference.py alone: {function = "make_x"}', line)
            return None
        return InputInit("function", 0.0, 0.0, function=fn)

    def read_init_bounds(self, where: str, init: dict, dist: str, line) -> list[float] | None:
        """The distribution's two numbers (mean and std, or low and high), its defaults where not given."""
        defaults = {"normal": (0.0, 1.0), "uniform": (0.0, 1.0), "integers": (None, None)}[dist]
        vals = []
        for key, default in zip(DISTRIBUTIONS[dist], defaults, strict=True):
            v = init.get(key, default)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                self.problem(f"{where}.init.{key}", f"expected a number, got {v!r}", line)
                return None
            vals.append(float(v))
        return vals

    def read_reference(self) -> tuple[str, str, str]:
        ref = self.table("reference")
        head = self.lines.header("reference")
        self.only(ref, head, {"function", "precision", "fast"}, section="reference", why="unknown field")
        names = {}
        for key, default in (("function", "reference"), ("fast", "")):
            fn = ref.get(key, default)
            if not isinstance(fn, str) or not (fn.isidentifier() or fn == default):
                self.problem(f"reference.{key}", f"{fn!r} is not a function name", self.lines.key(key, head))
                fn = default
            names[key] = fn
            self.where[f"reference.{key}"] = self.lines.key(key, head) or head
        precision = ref.get("precision", "float64")
        if precision not in REFERENCE_PRECISIONS:
            self.problem(
                "reference.precision",
                f"{precision!r}: expected one of {', '.join(REFERENCE_PRECISIONS)}",
                self.lines.key("precision", head),
            )
            precision = "float64"
        if not (self.folder / REFERENCE_FILE).is_file():
            self.problem("reference", f"{REFERENCE_FILE} is missing from {self.folder}", None)
        return names["function"], precision, names["fast"]

    def read_spot_check(self, args: list[Arg], scenarios) -> SpotCheck | None:
        """[spot_check]: within bounds that keep a spot check a check (at least 1 index in 8 of the axis, and at
        least 64 of them)."""
        t = self.table("spot_check")
        if not t:
            return None
        head = self.lines.header("spot_check")
        self.only(t, head, {"sample", "fraction", "min_count", "whole"}, section="spot_check", why="unknown field")
        sample = t.get("sample")
        in_outputs = [a.name for a in args if a.kind == "output" and sample in a.shape]
        if not isinstance(sample, str) or not in_outputs:
            outputs_symbols = sorted({d for a in args if a.kind == "output" for d in a.shape if isinstance(d, str)})
            self.problem(
                "spot_check.sample",
                f"{sample!r}: name a symbol of an output's shape (known: {', '.join(outputs_symbols)})",
                self.lines.key("sample", head) or head,
            )
            return None
        if any(a.name == "sampled" for a in args):
            self.problem("spot_check", "an argument is named sampled: the reference gets the sampled indices so", head)
        bounded = {}
        # never sparser than attention_fwd's own (1 row in 8, at least 64): the floor a task cannot lower
        for key, default, lo, hi in (("fraction", 8, 1, 8), ("min_count", 64, 64, 1 << 20)):
            v = t.get(key, default)
            if type(v) is not int or not lo <= v <= hi:
                self.problem(f"spot_check.{key}", f"{v!r}: an integer in [{lo}, {hi}]", self.lines.key(key, head))
                v = default
            bounded[key] = v
        whole = t.get("whole", "")
        self.where["spot_check.whole"] = self.lines.key("whole", head)
        if not isinstance(whole, str) or (whole and not whole.isidentifier()):
            self.problem("spot_check.whole", f"{whole!r} is not a function name", self.lines.key("whole", head))
            whole = ""
        return SpotCheck(sample, bounded["fraction"], bounded["min_count"], whole)

    def read_judge(self, target: Target) -> JudgeAhead | None:
        t = self.table("judge")
        if not t:
            return None
        head = self.lines.header("judge")
        allowed = {"ahead": None, "reference_depth": (1, 64), "baseline_depth": (1, 64), "baseline_threads": (1, 32)}
        self.only(t, head, set(allowed), section="judge", why="unknown field")
        ahead = t.get("ahead", False)
        if not isinstance(ahead, bool):
            self.problem("judge.ahead", "true or false", self.lines.key("ahead", head))
            return None
        if ahead and target.arrays != "torch":
            self.problem("judge.ahead", f"the judge works ahead on CUDA streams: target {target.name} has none", head)
            return None
        values = {}
        for key, bounds in allowed.items():
            if bounds is None or key not in t:
                continue
            v = t[key]
            if type(v) is not int or not bounds[0] <= v <= bounds[1]:
                self.problem(
                    f"judge.{key}", f"{v!r}: an integer in [{bounds[0]}, {bounds[1]}]", self.lines.key(key, head)
                )
                continue
            values[key] = v
        return JudgeAhead(**values) if ahead else None

    # -- scenarios --
    def read_scenarios(self, args: list[Arg]) -> tuple[list[ScenarioSpec], list[str]]:
        sc = self.table("scenarios")
        head = self.lines.header("scenarios")
        known = {"id", "list", "product", "id_names", "derived", "quick"}
        self.only(sc, head, known, section="scenarios", why="unknown field")
        ids = self.read_id_template(sc.get("id"), self.lines.key("id", head), head)
        params_list = self.read_scenario_params(sc, head)
        derived = self.read_derived(head)
        id_names = self.read_id_names(head)
        out, where_id = [], {}
        for params, line in params_list:
            sid = self.scenario_id(params, line, derived, ids, id_names, head)
            if sid is None:
                continue
            if sid in where_id:
                self.problem(
                    "scenarios.id",
                    f"duplicate scenario id {sid!r} ({params} and {where_id[sid]}): the template must tell them apart",
                    line,
                )
                continue
            where_id[sid] = params
            out.append(ScenarioSpec(sid, params))
        self.check_id_names_used(id_names, params_list, head)
        quick = self.read_quick(sc, head, ids, where_id)
        return out, quick

    def read_id_template(self, template, tline, head) -> _IdTemplate:
        """scenarios.id: a format string of scenario symbols ("m{m}_n{n}"); its fields are None when unusable."""
        ids = _IdTemplate(template, tline, None)
        if not isinstance(template, str) or not template:
            self.problem("scenarios.id", 'an id template such as "m{m}_n{n}" is needed (stable ids)', tline or head)
            return ids
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        except ValueError as e:
            self.problem("scenarios.id", f"{template!r}: {e}", tline)
            return ids
        if not fields or not all(f.isidentifier() for f in fields):
            self.problem("scenarios.id", f"{template!r}: each {{field}} must be one symbol's name", tline)
            return ids
        return _IdTemplate(template, tline, fields)

    def read_scenario_params(self, sc: dict, head) -> list[tuple[dict, int | None]]:
        """Each scenario's symbols from scenarios.list, then from each [[scenarios.product]], with the line that
        gave it; at most MAX_SCENARIOS in all."""
        listed = sc.get("list", [])
        lline = self.lines.key("list", head)
        if not isinstance(listed, list) or not all(isinstance(p, dict) for p in listed):
            self.problem("scenarios.list", "expected a list of tables, e.g. [{m = 1, n = 2}]", lline)
            listed = []
        if len(listed) > MAX_SCENARIOS:
            self.problem("scenarios.list", f"{len(listed)} scenarios: at most {MAX_SCENARIOS}", lline)
            listed = []
        params_list: list[tuple[dict, int | None]] = [(dict(p), lline) for p in listed]
        products = sc.get("product", [])
        if isinstance(products, dict):
            products = [products]
        if not isinstance(products, list):
            self.problem("scenarios.product", "expected [[scenarios.product]] tables of axes", None)
            products = []
        for i, axes in enumerate(products):
            params_list += self.read_product(
                i, axes, len(params_list), self.lines.header("scenarios.product", i) or lline
            )
        if not params_list:
            self.problem("scenarios", "no scenarios: give scenarios.list and/or [[scenarios.product]]", head)
        return params_list

    def read_product(self, i: int, axes, before: int, pline) -> list[tuple[dict, int | None]]:
        """The i-th [[scenarios.product]]: every combination of its axes' values; none when it is unusable or
        would take the count (`before` of them so far) past MAX_SCENARIOS."""
        if not isinstance(axes, dict) or not axes or not all(isinstance(v, list) and v for v in axes.values()):
            self.problem(f"scenarios.product[{i}]", "each axis is a non-empty list of values", pline)
            return []
        count = math.prod(len(v) for v in axes.values())
        if before + count > MAX_SCENARIOS:  # counted before it is made: 1000 x 1000 x 1000 is not
            self.problem(
                f"scenarios.product[{i}]",
                f"{before + count} scenarios with this product: at most {MAX_SCENARIOS}",
                pline,
            )
            return []
        keys = list(axes)
        return [(dict(zip(keys, combo, strict=True)), pline) for combo in itertools.product(*axes.values())]

    def scenario_id(self, params: dict, line, derived, ids: _IdTemplate, id_names: dict, head) -> str | None:
        """One scenario's id from the template, once its derived symbols are added to `params`; None when the
        scenario is unusable (said) or the template is."""
        bad = [k for k, v in params.items() if not isinstance(v, (int, float, str))]
        if bad or not all(isinstance(k, str) and k.isidentifier() for k in params):
            self.problem("scenarios", f"{params!r}: values must be numbers, booleans or strings keyed by symbol", line)
            return None
        if not self.add_derived(params, derived) or ids.fields is None:
            return None
        missing = [f for f in ids.fields if f not in params]
        if missing:
            self.problem("scenarios.id", f"{ids.template!r} needs {', '.join(missing)}, which {params} lacks", ids.line)
            return None
        try:
            return ids.template.format(**{k: _id_text(k, v, id_names) for k, v in params.items()})
        except KeyError as e:
            self.problem("scenarios.id_names", f"{params}: no name for {e.args[0]}", self.lines.key("id_names", head))
        except (ValueError, TypeError) as e:
            self.problem("scenarios.id", f"{ids.template!r} with {params}: {e}", ids.line)
        return None

    def check_id_names_used(self, id_names: dict, params_list: list[tuple[dict, int | None]], head) -> None:
        """Each symbol scenarios.id_names names values of is a scenario symbol."""
        unnamed = [k for k in id_names if params_list and not any(k in p for p, _ in params_list)]
        if unnamed:  # a typo of a symbol would leave its values unnamed in every id
            known = ", ".join(dict.fromkeys(k for p, _ in params_list for k in p))
            self.problem(
                "scenarios.id_names",
                f"{', '.join(unnamed)}: no scenario symbol (known: {known})",
                self.lines.key("id_names", head),
            )

    def read_quick(self, sc: dict, head, ids: _IdTemplate, where_id: dict) -> list[str]:
        """scenarios.quick: the ids of the quick subset, each a scenario's (checked when the ids could be made)."""
        quick = sc.get("quick", [])
        qline = self.lines.key("quick", head)
        if not isinstance(quick, list) or not all(isinstance(q, str) for q in quick) or not quick:
            self.problem("scenarios.quick", "a non-empty list of scenario ids (the quick subset)", qline or head)
            quick = []
        for q in quick:
            if ids.fields is not None and q not in where_id:
                self.problem(
                    "scenarios.quick", f"{q!r} is not a scenario id", self.lines.containing(f'"{q}"', qline) or qline
                )
        if len(set(quick)) != len(quick):
            self.problem("scenarios.quick", "an id is listed twice", qline)
        return quick

    def read_derived(self, head) -> list[tuple[str, Formula, int | None]]:
        """`[scenarios.derived]`: symbols computed from each scenario's own (name = formula, in order; a later one
        may use an earlier one), e.g. softmax_scale = "1/head_dim**0.5"."""
        self.derived_said: set[str] = set()  # derived symbols whose problem was said (once, not per scenario)
        table = self.table("scenarios").get("derived", {})
        dhead = self.lines.header("scenarios.derived") or head
        if not isinstance(table, dict):
            self.problem("scenarios.derived", 'expected a table of name = "formula"', dhead)
            return []
        out = []
        for name, text in table.items():
            line = self.lines.key(name, dhead)
            if not name.isidentifier():
                self.problem(f"scenarios.derived.{name}", "a derived symbol's name must be an identifier", line)
                continue
            try:
                out.append((name, parse_formula(text), line))
            except FormulaError as e:
                self.problem(f"scenarios.derived.{name}", str(e), line)
        return out

    def add_derived(self, params: dict, derived) -> bool:
        """Adds the derived symbols to one scenario's params; False when one cannot be (its problem is said for
        the first scenario it happens on only)."""
        for name, formula, fline in derived:
            if name in params:
                self.derived_problem(name, f"{params}: {name} is given by the scenario too", fline)
                return False
            try:
                value = formula(params)
                ok = type(value) in (int, float) and math.isfinite(value)
            except KeyError as e:
                value, ok = f"no symbol {e.args[0]!r}", False
            except SymbolValueError as e:  # text where a number is due: said as the value it is
                value, ok = e.value, False
            except (ArithmeticError, TypeError, ValueError) as e:
                value, ok = f"{type(e).__name__}: {e}", False
            if not ok:
                self.derived_problem(name, f"{formula.text!r} on {params}: {value!r} is not a number", fline)
                return False
            params[name] = value
        return True

    def derived_problem(self, name: str, message: str, line) -> None:
        if name not in self.derived_said:
            self.derived_said.add(name)
            self.problem(f"scenarios.derived.{name}", message, line)

    def read_id_names(self, head) -> dict[str, dict[str, str]]:
        """`[scenarios] id_names`: how a symbol's value is written in ids, e.g. causal = {true = "causal",
        false = "full"} (keys: the value as text, booleans as true/false)."""
        names = self.table("scenarios").get("id_names", {})
        line = self.lines.key("id_names", head)
        if not isinstance(names, dict) or not all(
            isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in names.values()
        ):
            self.problem("scenarios.id_names", 'expected symbol = {value = "name", ...} tables', line)
            return {}
        return names

    def read_formulas(self, scenarios) -> tuple[Formula, Formula | None]:
        f = self.table("formulas")
        head = self.lines.header("formulas")
        parsed = {}
        for key in ("flops", "bytes"):
            line = self.lines.key(key, head)
            if key not in f:
                if key == "flops":
                    self.problem("formulas.flops", 'the useful operations of one call, e.g. "2*m*n*k"', head)
                parsed[key] = None
                continue
            try:
                parsed[key] = parse_formula(f[key])
            except FormulaError as e:
                self.problem(f"formulas.{key}", str(e), line)
                parsed[key] = None
        for key in f:
            if key not in ("flops", "bytes"):
                self.problem(f"formulas.{key}", "unknown field (known: flops, bytes)", self.lines.key(key, head))
        flops = parsed["flops"] or parse_formula("0")
        return flops, parsed["bytes"]

    # -- judging --
    def read_baselines(self) -> tuple[dict, list[str], str]:
        b = self.table("baselines")
        head = self.lines.header("baselines")
        out = {}
        versions = b.get("versions", "")
        self.where["baselines.versions"] = self.lines.key("versions", head)
        if not isinstance(versions, str) or (versions and not versions.isidentifier()):
            self.problem("baselines.versions", f"{versions!r} is not a function name", self.lines.key("versions", head))
            versions = ""
        for name, item in b.items():
            if name in ("default", "versions"):
                continue
            line = self.lines.key(name, head) or self.lines.header(f"baselines.{name}")
            where = f"baselines.{name}"
            if not isinstance(item, dict):
                self.problem(where, 'expected a table: {function = "..."} or {kernel = "file"}', line)
                continue
            if name == BEST_LIBRARY:
                self.problem(where, f"{BEST_LIBRARY!r} is the harness's own figure (the fastest library): rename", line)
                continue
            baseline = self.read_baseline(name, item, where, line)
            if baseline is not None:
                out[name] = baseline
        defaults = b.get("default", list(out))
        dline = self.lines.key("default", head)
        if not isinstance(defaults, list) or not all(isinstance(d, str) for d in defaults):
            self.problem("baselines.default", "a list of baseline names", dline)
            defaults = []
        for d in defaults:
            if d not in out:
                self.problem("baselines.default", f"{d!r} is not a baseline (known: {', '.join(out)})", dline)
        return out, defaults, versions

    def read_baseline(self, name: str, item: dict, where: str, line: int | None) -> Baseline | None:
        """One entry of [baselines]: a function of reference.py or a kernel file, with its flags."""
        known = ("function", "kernel", "warm", "requires", "may_refuse", "description", "library")
        unknown = [k for k in item if k not in known]
        if unknown:
            self.problem(where, f"unknown field(s) {', '.join(unknown)}", line)
        if ("function" in item) == ("kernel" in item):
            self.problem(where, "give exactly one of function (in reference.py) or kernel (a source file)", line)
            return None
        flags = {}
        for key in ("warm", "may_refuse", "library"):
            flags[key] = item.get(key, False)
            if not isinstance(flags[key], bool):
                self.problem(f"{where}.{key}", "true or false", line)
                flags[key] = False
        description = item.get("description", "")
        if not isinstance(description, str):
            self.problem(f"{where}.description", "a line of text", line)
            description = ""
        requires = self.read_requires(item.get("requires", []), where, line)
        if "function" in item:
            fn = item["function"]
            self.where[f"{where}.function"] = line
            if not isinstance(fn, str) or not fn.isidentifier():
                self.problem(f"{where}.function", f"{fn!r} is not a function name", line)
                return None
            return Baseline(name, function=fn, requires=requires, description=description, **flags)
        if requires or flags["may_refuse"]:
            self.problem(where, "requires and may_refuse are a function baseline's", line)
        path = self.file_field(f"{where}.kernel", item["kernel"], line)
        self.where[f"{where}.kernel"] = line
        if path is None:
            return None
        return Baseline(name, kernel=path, warm=flags["warm"], description=description, library=flags["library"])

    def read_requires(self, requires, where: str, line: int | None) -> tuple[tuple[str, ...], ...]:
        """`requires`: a module name, or a list whose entries are module names or lists of alternatives (any one
        of which is enough: ["flash_attn_interface", "fa3_fwd_interface"] inside the list)."""

        def module(m) -> bool:
            return isinstance(m, str) and all(p.isidentifier() for p in m.split("."))

        requires = [requires] if isinstance(requires, str) else requires
        entries = [tuple(e) if isinstance(e, list) else (e,) for e in requires] if isinstance(requires, list) else None
        if entries is None or not all(e and all(module(m) for m in e) for e in entries):
            self.problem(
                f"{where}.requires",
                'module names, e.g. ["flash_attn_interface"], or alternatives: [["flash_attn_interface", "fa3_fwd_interface"]]',
                line,
            )
            return ()
        return tuple(entries)

    def read_tolerance(self, baselines: dict, args: list[Arg], scenarios) -> tuple[dict, Tolerance | None]:
        """[tolerance]: one rule for every output, or a table per output ([tolerance.o], [tolerance.lse]).
        Returns (output name -> rule, the one rule or None)."""
        t = self.table("tolerance")
        head = self.lines.header("tolerance")
        outputs = [a.name for a in args if a.kind == "output"]
        # a table is an output's rule; one with `by` is a field chosen by scenario (floor = {by = "case", ...})
        per_output = {k: v for k, v in t.items() if isinstance(v, dict) and "by" not in v}
        if not per_output:
            rule = self.read_rule(t, "tolerance", head, baselines, scenarios)
            return {name: rule for name in outputs}, rule
        for key in t:
            if key not in per_output:
                self.problem(
                    f"tolerance.{key}",
                    "either one rule for every output or a table per output ([tolerance.<output>]), not both",
                    self.lines.key(key, head),
                )
        rules = {}
        for name, table in per_output.items():
            section = f"tolerance.{name}"
            line = self.lines.header(section) or self.lines.key(name, head)
            if name not in outputs:
                self.problem(section, f"{name!r} is not an output (outputs: {', '.join(outputs)})", line)
                continue
            rules[name] = self.read_rule(table, section, line, baselines, scenarios)
        missing = [n for n in outputs if n not in per_output]
        if missing:
            self.problem("tolerance", f"no rule for output(s) {', '.join(missing)}: each output needs one", head)
        held = [n for n, r in rules.items() if r.measure == "once"]
        if len(held) > 1:
            self.problem(
                "tolerance",
                f'measure = "once" on {", ".join(held)}: one output at most (its bound is the one seed b and the'
                " timed calls are held to)",
                head,
            )
        return {n: rules[n] for n in outputs if n in rules}, None

    def read_rule(self, t: dict, section: str, head, baselines: dict, scenarios) -> Tolerance:
        """One tolerance rule from its table (`section` names it in problems)."""
        if "baseline" in t:
            return self.read_baseline_rule(t, section, head, baselines, scenarios)
        if "rel_l2" in t:
            self.only(t, head, {"rel_l2"}, section=section)
            return Tolerance("rel_l2", rel_l2=self.rule_number(t, section, head, "rel_l2"))
        if "atol" in t or "rtol" in t:
            self.only(t, head, {"atol", "rtol"}, section=section)
            return Tolerance(
                "allclose",
                atol=self.rule_number(t, section, head, "atol", 0.0),
                rtol=self.rule_number(t, section, head, "rtol", 0.0),
            )
        self.problem(section, "give baseline (+ factor, floor), rel_l2, or atol/rtol", head)
        return Tolerance("rel_l2", rel_l2=0.0)

    def read_baseline_rule(self, t: dict, section: str, head, baselines: dict, scenarios) -> Tolerance:
        """baseline = "name" (or names tried in turn): an output is held to `factor` times the baseline's own
        error against the reference, never below `floor`."""
        names = self.read_rule_baselines(t["baseline"], section, self.lines.key("baseline", head), baselines)
        factor = self.rule_number(t, section, head, "factor", 2.0)
        if factor < 1.0:
            self.problem(f"{section}.factor", "below 1: the baseline itself would fail", self.lines.key("factor", head))
        measure = t.get("measure", "each")
        if measure not in ("each", "once"):
            self.problem(
                f"{section}.measure",
                f'{measure!r}: "each" (on every output judged) or "once" (on seed a, then held)',
                self.lines.key("measure", head),
            )
            measure = "each"
        sanity = None
        if "sanity" in t:
            sanity = self.rule_number(t, section, head, "sanity")
            if sanity < 1.0:
                self.problem(
                    f"{section}.sanity",
                    "below 1: a baseline as good as default_error would be refused",
                    self.lines.key("sanity", head),
                )
        self.only(
            t,
            head,
            {"baseline", "factor", "floor", "default_error", "measure", "sanity", "ceiling"},
            section=section,
        )
        return Tolerance(
            "baseline",
            baseline=str(names[0]),
            factor=factor,
            floor=self.rule_number_or_mapping(t, section, head, "floor", 0.0, scenarios),
            default_error=self.rule_number_or_mapping(t, section, head, "default_error", 1e-6, scenarios),
            fallbacks=tuple(str(n) for n in names[1:]),
            sanity=sanity,
            measure=measure,
            ceiling=self.rule_number(t, section, head, "ceiling") if "ceiling" in t else None,
        )

    def read_rule_baselines(self, named, section: str, bline, baselines: dict) -> list:
        """A rule's baseline names (each must be a function baseline); [""] when none is usable."""
        names = named if isinstance(named, list) else [named]
        functions = [n for n, b in baselines.items() if b.function]
        if not names or not all(isinstance(n, str) for n in names):
            self.problem(f"{section}.baseline", "a baseline's name, or a list of names tried in turn", bline)
            names = [""]
        for name in names:
            if name not in baselines or not baselines[name].function:
                self.problem(
                    f"{section}.baseline",
                    f"{name!r} is not a function baseline (known: {', '.join(functions) or 'none'})",
                    bline,
                )
        return names

    def rule_number(self, t: dict, section: str, head, key: str, default=None) -> float:
        """A rule's number >= 0 (0.0 when it is not one, said)."""
        v = t.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            self.problem(f"{section}.{key}", f"expected a number >= 0, got {v!r}", self.lines.key(key, head) or head)
            return 0.0
        return float(v)

    def rule_number_or_mapping(self, t: dict, section: str, head, key: str, default, scenarios) -> float | ByScenario:
        """A number >= 0, or numbers chosen by a scenario symbol ({by = "dtype", bf16 = 2e-4, ...})."""
        v = t.get(key, default)
        if not isinstance(v, dict):
            return self.rule_number(t, section, head, key, default)
        line = self.lines.key(key, head) or head

        def problem_of(choice):
            ok = not isinstance(choice, bool) and isinstance(choice, (int, float)) and math.isfinite(choice)
            return None if ok and choice >= 0 else f"expected a number >= 0, got {choice!r}"

        mapping = self.read_mapping(f"{section}.{key}", v, line, problem_of)
        if mapping is None or not self.check_mapping(f"{section}.{key}", mapping, line, scenarios):
            return 0.0
        return ByScenario(mapping.by, {k: float(c) for k, c in mapping.choices.items()})

    def only(
        self, table: dict, head, allowed: set, section: str = "tolerance", why: str = "not used with this rule"
    ) -> None:
        for key in table:
            if key not in allowed:
                self.problem(
                    f"{section}.{key}",
                    f"{why} (its fields: {', '.join(sorted(allowed))})",
                    self.lines.key(key, head),
                )

    def read_goal(self, baselines: dict) -> tuple[str, float]:
        g = self.table("goal")
        head = self.lines.header("goal")
        self.only(g, head, {"baseline", "speedup"}, section="goal", why="unknown field")
        base, speedup = g.get("baseline"), g.get("speedup")
        libraries = [name for name, b in baselines.items() if b.library]
        if base == BEST_LIBRARY and not libraries:
            self.problem(
                "goal.baseline",
                f"{BEST_LIBRARY!r} needs baselines marked library = true (none is)",
                self.lines.key("baseline", head) or head,
            )
        elif base not in baselines and base != BEST_LIBRARY:
            self.problem(
                "goal.baseline",
                f"{base!r} is not a baseline (known: {', '.join([*baselines, *([BEST_LIBRARY] if libraries else [])])})",
                self.lines.key("baseline", head) or head,
            )
        if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not speedup > 0:
            self.problem(
                "goal.speedup", f"expected a number > 0, got {speedup!r}", self.lines.key("speedup", head) or head
            )
            speedup = 1.0
        return str(base), float(speedup)

    def read_timing(self) -> tuple[dict, dict, tuple[float, float]]:
        def bounded(section: str, allowed: dict) -> dict:
            table = self.table(section)
            head = self.lines.header(section)
            out = {}
            for key, v in table.items():
                line = self.lines.key(key, head)
                if key not in allowed:
                    self.problem(f"{section}.{key}", f"unknown field (known: {', '.join(allowed)})", line)
                    continue
                lo, hi = allowed[key]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                    self.problem(f"{section}.{key}", f"{v!r}: must lie in [{lo:g}, {hi:g}]", line)
                    continue
                if isinstance(lo, int) and v != int(v):  # a count: 5.5 repeats would be cut to 5 unsaid
                    self.problem(f"{section}.{key}", f"{v!r}: a whole number in [{lo:g}, {hi:g}]", line)
                    continue
                out[key] = type(lo)(v) if isinstance(lo, int) else float(v)
            return out

        timing = bounded("timing", TIMING_KEYS)
        host = bounded("host_clock", HOST_CLOCK_KEYS)
        call = bounded("call_timeout", CALL_TIMEOUT_KEYS)
        return timing, host, (call.get("base_s", 20.0), call.get("min_rate", 1e9))

    def read_child(self) -> tuple[dict, int]:
        child = self.table("child")
        head = self.lines.header("child")
        env = child.get("env", {})
        threads = child.get("baseline_threads", 0)
        for key in child:
            if key not in ("env", "baseline_threads"):
                self.problem(f"child.{key}", "unknown field (known: env, baseline_threads)", self.lines.key(key, head))
        if type(threads) is not int or not 0 <= threads <= 32:
            self.problem(
                "child.baseline_threads",
                f"{threads!r}: an integer in [0, 32]",
                self.lines.key("baseline_threads", head),
            )
            threads = 0
        if not isinstance(env, dict):
            self.problem("child.env", "a table of environment variables", self.lines.key("env", head))
            return {}, threads
        out = {}
        for k, v in env.items():
            if not isinstance(v, str) or not re.match(r"^[A-Z_][A-Z0-9_]*$", k):
                self.problem(f"child.env.{k}", "names are UPPER_CASE, values strings", self.lines.key(k, head))
            elif k.startswith(FORBIDDEN_ENV_PREFIXES):
                self.problem(
                    f"child.env.{k}",
                    "a task may not set this variable (the loader's or the harness's own)",
                    self.lines.key(k, head),
                )
            else:
                out[k] = v
        return out, threads

    def read_cheats(self) -> Path | None:
        value = self.data.get("cheats")
        if value is None:
            default = self.folder / "cheats"
            return default if default.is_dir() else None
        path = (self.folder / str(value)).resolve()
        if not path.is_dir():
            self.problem("cheats", f"{value}: no such folder", self.lines.key("cheats"))
            return None
        return path

    # -- symbols: every symbol a shape, scalar or formula uses must be defined by every scenario --
    def check_choices(self, args: list[Arg], scenarios: list[ScenarioSpec]) -> set[str]:
        """Every mapping's `by` is a scenario symbol and has a choice for each scenario's value of it; returns the
        names of the arguments whose mapping is not (their values cannot be computed on every scenario)."""
        bad = set()
        if not scenarios:
            return bad
        for i, a in enumerate(args):
            line = self.lines.header("args", i)
            for key in ("dtype", "value"):
                mapping = getattr(a, key)
                if not isinstance(mapping, ByScenario):
                    continue
                fieldname, kline = f"args.{a.name}.{key}", self.lines.key(key, line)
                if not self.check_mapping(fieldname, mapping, kline, scenarios):
                    bad.add(a.name)
        return bad

    def check_mapping(self, fieldname: str, mapping: ByScenario, line, scenarios: list[ScenarioSpec]) -> bool:
        """The mapping's `by` is a symbol every scenario defines, and each scenario's value of it has a choice."""
        known = list(dict.fromkeys(k for sc in scenarios for k in sc.params))
        if not scenarios:
            return True
        if mapping.by not in known:
            self.problem(fieldname, f"by = {mapping.by!r} is no scenario symbol (known: {', '.join(known)})", line)
            return False
        ok = True
        unseen = [sc.id for sc in scenarios if mapping.by not in sc.params]
        if unseen:
            self.problem(
                fieldname, f"symbol {mapping.by!r} is not defined by scenario(s) {', '.join(unseen[:3])}", line
            )
            ok = False
        lacking = [sc for sc in scenarios if mapping.by in sc.params]
        lacking = [sc for sc in lacking if value_key(sc.params[mapping.by]) not in mapping.choices]
        if lacking:
            values = ", ".join(dict.fromkeys(value_key(sc.params[mapping.by]) for sc in lacking))
            self.problem(
                fieldname,
                f"{mapping.by} = {values} (scenario {lacking[0].id}) has no choice "
                f"(the mapping gives {', '.join(mapping.choices)})",
                line,
            )
            ok = False
        return ok

    def check_symbols(
        self, args: list[Arg], scenarios: list[ScenarioSpec], bad_choices: set[str] = frozenset()
    ) -> None:
        if not scenarios:
            return
        scalar_dtypes = {f"args.{a.name}.value": a.dtype for a in args if a.kind == "scalar"}
        for fieldname, line, syms, formula in self.symbol_users(args, bad_choices):
            lacking_any = self.check_defined(fieldname, line, syms, scenarios)
            if formula is None or lacking_any:
                continue
            self.check_formula_values(fieldname, line, formula, scenarios, scalar_dtypes.get(fieldname))
        if self.check_shapes_sized(args, scenarios):
            self.check_sizes(args, scenarios)

    def symbol_users(
        self, args: list[Arg], bad_choices: set[str]
    ) -> list[tuple[str, int | None, set, Formula | ByScenario | None]]:
        """Every field that uses scenario symbols: (field, line, its symbols, the formula to compute on every
        scenario or None). Shapes, scalars' values (unless their mapping is unusable), [formulas] flops and bytes."""
        users = []
        for i, a in enumerate(args):
            line = self.lines.header("args", i)
            if a.is_tensor:
                syms = {d for d in a.shape if isinstance(d, str)}
                users.append((f"args.{a.name}.shape", self.lines.key("shape", line), syms, None))
            elif a.kind == "scalar":
                formula = None if a.name in bad_choices else a.value
                users.append((f"args.{a.name}.value", self.lines.key("value", line), set(a.value.symbols), formula))
        f = self.data.get("formulas", {}) if isinstance(self.data.get("formulas"), dict) else {}
        head = self.lines.header("formulas")
        for key in ("flops", "bytes"):
            try:
                formula = parse_formula(f[key]) if key in f else None
            except FormulaError:
                continue
            if formula is not None:
                users.append((f"formulas.{key}", self.lines.key(key, head), set(formula.symbols), formula))
        return users

    def check_defined(self, fieldname: str, line, syms: set, scenarios: list[ScenarioSpec]) -> bool:
        """Each symbol is defined by every scenario; whether one is lacking anywhere."""
        lacking_any = False
        for s in sorted(syms):
            lacking = [sc.id for sc in scenarios if s not in sc.params]
            lacking_any = lacking_any or bool(lacking)
            if len(lacking) == len(scenarios):
                self.problem(fieldname, f"symbol {s!r} is defined by no scenario", line)
            elif lacking:
                self.problem(fieldname, f"symbol {s!r} is not defined by scenario(s) {', '.join(lacking[:3])}", line)
        return lacking_any

    def check_formula_values(
        self, fieldname: str, line, formula, scenarios: list[ScenarioSpec], scalar_dtype: str | None
    ) -> None:
        """A formula that cannot be computed on a scenario is the spec's error, found now (the first such
        scenario is said). A scalar's value must also fit its C type."""
        counts = fieldname.startswith("formulas.")  # FLOP and byte counts are never negative
        for sc in scenarios:
            try:
                value = formula(sc.params)
                ok = type(value) in (int, float) and math.isfinite(value)
            except SymbolValueError as e:  # text where a number is due: said as the value it is
                value, ok = e.value, False
            except (ArithmeticError, TypeError, ValueError) as e:
                value, ok = f"{type(e).__name__}: {e}", False
            if not ok or (counts and value < 0):
                want = "a number >= 0" if counts else "a number"
                self.problem(fieldname, f"{formula.text!r} on scenario {sc.id}: {value!r} is not {want}", line)
                return
            said = _scalar_problem(scalar_dtype, value)
            if said:  # the kernel gets it as its C type: a value that type cannot hold would arrive changed
                self.problem(fieldname, f"{formula.text!r} on scenario {sc.id}: {said}", line)
                return

    def check_shapes_sized(self, args: list[Arg], scenarios: list[ScenarioSpec]) -> bool:
        """Every tensor's sizes on every scenario are integers >= 0 (the first scenario that is not is said)."""
        sized = True
        for a in args:
            if not a.is_tensor:
                continue
            for sc in scenarios:
                dims = _dims(a, sc.params)
                if not all(type(d) is int and d >= 0 for d in dims):
                    self.problem(f"args.{a.name}.shape", f"scenario {sc.id}: sizes must be integers >= 0, got {dims}")
                    sized = False
                    break
        return sized

    def check_sizes(self, args: list[Arg], scenarios: list[ScenarioSpec]) -> None:
        """No scenario's tensors take more than MAX_SCENARIO_BYTES together (a mapped dtype counted as the
        scenario's choice, the largest where it has none); the first scenario beyond is named, with how many are."""

        def itemsize(a: Arg, params: dict) -> int:
            if isinstance(a.dtype, ByScenario) and value_key(params.get(a.dtype.by)) in a.dtype.choices:
                return DTYPES[a.dtype(params)].itemsize
            return max(DTYPES[d].itemsize for d in a.dtypes)

        tensors = [a for a in args if a.is_tensor]
        too_large = []
        for sc in scenarios:
            total = sum(math.prod(_dims(a, sc.params)) * itemsize(a, sc.params) for a in tensors)
            if total > MAX_SCENARIO_BYTES:
                too_large.append((sc.id, total))
        if too_large:
            sid, total = too_large[0]
            more = f" (and {len(too_large) - 1} more scenario(s))" if len(too_large) > 1 else ""
            self.problem(
                "scenarios",
                f"scenario {sid}: its tensors take {total / (1 << 30):.4g} GiB, more than a scenario's"
                f" {MAX_SCENARIO_BYTES >> 30} GiB{more}",
                self.lines.header("scenarios"),
            )
