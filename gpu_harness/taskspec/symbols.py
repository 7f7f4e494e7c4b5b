"""`[formulas]` and the symbols every field computes with: each symbol a shape, a scalar's value or a formula uses
is defined by every scenario, each mapping has a choice for every scenario, each formula computes to a number on
every scenario, and no scenario's tensors exceed a scenario's size."""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from typing import Any

from .context import SpecContext
from .formula import Formula, FormulaError, SymbolValueError, parse_formula
from .mapping import check_mapping
from .spec import Arg, ByScenario, ScenarioSpec, value_key
from .vocabulary import DTYPES, FLOAT32_MAX, MAX_SCENARIO_BYTES


def read_formulas(ctx: SpecContext) -> tuple[Formula, Formula | None]:
    f = ctx.table("formulas")
    head = ctx.lines.header("formulas")
    parsed: dict[str, Formula | None] = {}
    for key in ("flops", "bytes"):
        line = ctx.lines.key(key, head)
        if key not in f:
            if key == "flops":
                ctx.problem("formulas.flops", 'the useful operations of one call, e.g. "2*m*n*k"', head)
            parsed[key] = None
            continue
        try:
            parsed[key] = parse_formula(f[key])
        except FormulaError as e:
            ctx.problem(f"formulas.{key}", str(e), line)
            parsed[key] = None
    for key in f:
        if key not in ("flops", "bytes"):
            ctx.problem(f"formulas.{key}", "unknown field (known: flops, bytes)", ctx.lines.key(key, head))
    flops = parsed["flops"] or parse_formula("0")
    return flops, parsed["bytes"]


def _dims(arg: Arg, params: dict[str, Any]) -> list[Any]:
    """The argument's shape on a scenario as written there (a symbol the scenario lacks reads 0), unchecked."""
    return [params.get(d, 0) if isinstance(d, str) else d for d in arg.shape]


def _scalar_problem(dtype: str | ByScenario | None, value: float) -> str | None:
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


def check_choices(ctx: SpecContext, args: list[Arg], scenarios: list[ScenarioSpec]) -> set[str]:
    """Every mapping's `by` is a scenario symbol and has a choice for each scenario's value of it; returns the
    names of the arguments whose mapping is not (their values cannot be computed on every scenario)."""
    bad: set[str] = set()
    if not scenarios:
        return bad
    for i, a in enumerate(args):
        line = ctx.lines.header("args", i)
        for key in ("dtype", "value"):
            mapping = getattr(a, key)
            if not isinstance(mapping, ByScenario):
                continue
            fieldname, kline = f"args.{a.name}.{key}", ctx.lines.key(key, line)
            if not check_mapping(ctx, fieldname, mapping, kline, scenarios):
                bad.add(a.name)
    return bad


def check_symbols(
    ctx: SpecContext, args: list[Arg], scenarios: list[ScenarioSpec], bad_choices: AbstractSet[str] = frozenset()
) -> None:
    if not scenarios:
        return
    scalar_dtypes = {f"args.{a.name}.value": a.dtype for a in args if a.kind == "scalar"}
    for fieldname, line, syms, formula in symbol_users(ctx, args, bad_choices):
        lacking_any = check_defined(ctx, fieldname, line, syms, scenarios)
        if formula is None or lacking_any:
            continue
        check_formula_values(ctx, fieldname, line, formula, scenarios, scalar_dtypes.get(fieldname))
    if check_shapes_sized(ctx, args, scenarios):
        check_sizes(ctx, args, scenarios)


def symbol_users(
    ctx: SpecContext, args: list[Arg], bad_choices: AbstractSet[str]
) -> list[tuple[str, int | None, set[Any], Formula | ByScenario | None]]:
    """Every field that uses scenario symbols: (field, line, its symbols, the formula to compute on every
    scenario or None). Shapes, scalars' values (unless their mapping is unusable), [formulas] flops and bytes."""
    users: list[tuple[str, int | None, set[Any], Formula | ByScenario | None]] = []
    for i, a in enumerate(args):
        line = ctx.lines.header("args", i)
        if a.is_tensor:
            syms = {d for d in a.shape if isinstance(d, str)}
            users.append((f"args.{a.name}.shape", ctx.lines.key("shape", line), syms, None))
        elif a.kind == "scalar":
            formula = None if a.name in bad_choices else a.value
            # (a scalar's value is never None: the reader gives every scalar one)
            users.append((f"args.{a.name}.value", ctx.lines.key("value", line), set(a.value.symbols), formula))  # type: ignore[union-attr]
    f = ctx.data.get("formulas", {}) if isinstance(ctx.data.get("formulas"), dict) else {}
    head = ctx.lines.header("formulas")
    for key in ("flops", "bytes"):
        try:
            formula = parse_formula(f[key]) if key in f else None
        except FormulaError:
            continue
        if formula is not None:
            users.append((f"formulas.{key}", ctx.lines.key(key, head), set(formula.symbols), formula))
    return users


def check_defined(
    ctx: SpecContext, fieldname: str, line: int | None, syms: set[Any], scenarios: list[ScenarioSpec]
) -> bool:
    """Each symbol is defined by every scenario; whether one is lacking anywhere."""
    lacking_any = False
    for s in sorted(syms):
        lacking = [sc.id for sc in scenarios if s not in sc.params]
        lacking_any = lacking_any or bool(lacking)
        if len(lacking) == len(scenarios):
            ctx.problem(fieldname, f"symbol {s!r} is defined by no scenario", line)
        elif lacking:
            ctx.problem(fieldname, f"symbol {s!r} is not defined by scenario(s) {', '.join(lacking[:3])}", line)
    return lacking_any


def check_formula_values(
    ctx: SpecContext,
    fieldname: str,
    line: int | None,
    formula: Formula | ByScenario,
    scenarios: list[ScenarioSpec],
    scalar_dtype: str | ByScenario | None,
) -> None:
    """A formula that cannot be computed on a scenario is the spec's error, found now (the first such
    scenario is said). A scalar's value must also fit its C type."""
    counts = fieldname.startswith("formulas.")  # FLOP and byte counts are never negative
    for sc in scenarios:
        value: Any  # a number, or what was found instead
        try:
            value = formula(sc.params)
            ok = type(value) in (int, float) and math.isfinite(value)
        except SymbolValueError as e:  # text where a number is due: said as the value it is
            value, ok = e.value, False
        except (ArithmeticError, TypeError, ValueError) as e:
            value, ok = f"{type(e).__name__}: {e}", False
        if not ok or (counts and value < 0):
            want = "a number >= 0" if counts else "a number"
            ctx.problem(fieldname, f"{formula.text!r} on scenario {sc.id}: {value!r} is not {want}", line)
            return
        said = _scalar_problem(scalar_dtype, value)
        if said:  # the kernel gets it as its C type: a value that type cannot hold would arrive changed
            ctx.problem(fieldname, f"{formula.text!r} on scenario {sc.id}: {said}", line)
            return


def check_shapes_sized(ctx: SpecContext, args: list[Arg], scenarios: list[ScenarioSpec]) -> bool:
    """Every tensor's sizes on every scenario are integers >= 0 (the first scenario that is not is said)."""
    sized = True
    for a in args:
        if not a.is_tensor:
            continue
        for sc in scenarios:
            dims = _dims(a, sc.params)
            if not all(type(d) is int and d >= 0 for d in dims):
                ctx.problem(f"args.{a.name}.shape", f"scenario {sc.id}: sizes must be integers >= 0, got {dims}")
                sized = False
                break
    return sized


def check_sizes(ctx: SpecContext, args: list[Arg], scenarios: list[ScenarioSpec]) -> None:
    """No scenario's tensors take more than MAX_SCENARIO_BYTES together (a mapped dtype counted as the
    scenario's choice, the largest where it has none); the first scenario beyond is named, with how many are."""

    def itemsize(a: Arg, params: dict[str, Any]) -> int:
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
        ctx.problem(
            "scenarios",
            f"scenario {sid}: its tensors take {total / (1 << 30):.4g} GiB, more than a scenario's"
            f" {MAX_SCENARIO_BYTES >> 30} GiB{more}",
            ctx.lines.header("scenarios"),
        )
