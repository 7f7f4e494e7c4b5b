"""The ABI, `[[args]]`: the exported function's arguments in order, each an input, an output, a scalar or a
stream, with its dtype (or dtypes chosen by scenario), shape or value. How an input is made is `input_init.py`'s."""

from __future__ import annotations

import re
from typing import Any, cast

from .context import SpecContext
from .formula import Formula, FormulaError, parse_formula
from .input_init import read_init
from .mapping import read_mapping
from .spec import Arg, ByScenario
from .vocabulary import DTYPES, SCALAR_C_TYPES, Target, reserved_by


def read_args(ctx: SpecContext, target: Target) -> list[Arg]:
    raw = ctx.data.get("args")
    if not isinstance(raw, list) or not raw:
        ctx.problem("args", "the kernel's arguments, in order, as [[args]] tables: none given", None)
        return []
    out: list[Arg] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        arg = read_arg(ctx, i, item, target, seen, out)
        if arg is not None:
            out.append(arg)
    if out and not any(a.kind == "output" for a in out):
        ctx.problem("args", "no argument is an output: there would be nothing to judge", None)
    return out


def read_arg(ctx: SpecContext, i: int, item: object, target: Target, seen: set[Any], out: list[Arg]) -> Arg | None:
    """The i-th [[args]] table; None when it is unusable (its problems said). `seen`: the names so far;
    `out`: the arguments read so far."""
    line = ctx.lines.header("args", i)
    if not isinstance(item, dict):
        ctx.problem(f"args[{i}]", "must be a table", line)
        return None
    name = read_arg_name(ctx, f"args[{i}]", item.get("name"), line, seen)
    if name is None:
        return None
    where = f"args.{name}"
    for key in item:
        if key not in ("name", "kind", "dtype", "shape", "init", "value"):
            ctx.problem(f"{where}.{key}", "unknown field", ctx.lines.key(key, line))
    kind = item.get("kind")
    if kind not in ("input", "output", "scalar", "stream"):
        kinds = "input, output, scalar or stream" if target.language == "cuda" else "input, output or scalar"
        ctx.problem(f"{where}.kind", f"{kind!r}: expected {kinds}", ctx.lines.key("kind", line))
        return None
    if kind == "stream":
        return read_stream(ctx, where, item, target, line, out)
    if kind == "scalar":
        return read_scalar_arg(ctx, where, name, item, line)
    return read_tensor_arg(ctx, where, name, kind, item, target, line)


def read_arg_name(ctx: SpecContext, where: str, name: object, line: int | None, seen: set[Any]) -> str | None:
    """An argument's name: a C identifier that is no keyword of C or Python (the kernel and reference.py's
    functions take the arguments by name). A second use of a name is said, and the argument still read."""
    if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        ctx.problem(f"{where}.name", f"{name!r} is not a C identifier", ctx.lines.key("name", line))
        return None
    where = f"args.{name}"
    if lang := reserved_by(name):
        ctx.problem(
            f"{where}.name",
            f"{name!r} is a {lang} keyword or type name: the kernel and reference.py's functions take the"
            " arguments by name",
            ctx.lines.key("name", line),
        )
        return None
    if name in seen:
        ctx.problem(f"{where}.name", "a second argument of this name", ctx.lines.key("name", line))
    seen.add(name)
    return name


def read_scalar_arg(ctx: SpecContext, where: str, name: str, item: dict[str, Any], line: int | None) -> Arg | None:
    """kind = "scalar": a C type of SCALAR_C_TYPES and a value (a formula, or formulas chosen by scenario)."""
    dtype = item.get("dtype")
    if not isinstance(dtype, str) or dtype not in SCALAR_C_TYPES:
        fixed = " (a scalar's C type is fixed: map its value instead)" if isinstance(dtype, dict) else ""
        ctx.problem(
            f"{where}.dtype",
            f"unknown scalar dtype {dtype!r} (known: {', '.join(SCALAR_C_TYPES)}){fixed}",
            ctx.lines.key("dtype", line),
        )
        return None
    if "value" not in item:
        ctx.problem(f"{where}.value", "a scalar needs a value (a formula of the scenario's symbols)", line)
        return None
    value = read_value(ctx, f"{where}.value", item["value"], ctx.lines.key("value", line))
    return Arg(name, "scalar", dtype, value=value) if value is not None else None


def read_tensor_arg(
    ctx: SpecContext, where: str, name: str, kind: str, item: dict[str, Any], target: Target, line: int | None
) -> Arg | None:
    """kind = "input" or "output": a dtype (or dtypes chosen by scenario), a shape of symbols and sizes, and
    for an input how it is made from the seed."""
    dtype = read_tensor_dtype(ctx, where, item.get("dtype"), target, ctx.lines.key("dtype", line))
    if dtype is None:
        return None
    shape = item.get("shape")
    if not isinstance(shape, list) or not all(
        (isinstance(d, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", d)) or (type(d) is int and d >= 0) for d in shape
    ):
        ctx.problem(
            f"{where}.shape",
            f'{shape!r}: expected a list of symbols or sizes, e.g. ["m", "k"]',
            ctx.lines.key("shape", line),
        )
        return None
    init = None
    arg_dtypes = dtype.choices.values() if isinstance(dtype, ByScenario) else (dtype,)
    if kind == "input":
        ctx.where[f"{where}.init"] = ctx.lines.key("init", line) or line
        init = read_init(
            ctx, where, item.get("init"), [DTYPES[d] for d in arg_dtypes], ctx.lines.key("init", line) or line
        )
        if init is None:
            return None
    elif "init" in item:
        ctx.problem(f"{where}.init", "an output is not made from the seed (it is poisoned)", line)
    return Arg(name, kind, dtype, shape=tuple(shape), init=init)


def read_tensor_dtype(
    ctx: SpecContext, where: str, dtype: object, target: Target, dline: int | None
) -> str | ByScenario | None:
    """A tensor's dtype on `target`, or dtypes of one kind (float or integer) chosen by a scenario symbol."""
    if not isinstance(dtype, dict):
        problem = tensor_dtype(ctx, dtype, target)
        if problem:
            ctx.problem(f"{where}.dtype", problem, dline)
            return None
        return cast(str, dtype)  # (a dtype's name: tensor_dtype found no problem)
    mapping = read_mapping(ctx, f"{where}.dtype", dtype, dline, lambda d: tensor_dtype(ctx, d, target))
    if mapping is None:
        return None
    if len({DTYPES[d].kind for d in mapping.choices.values()}) > 1:
        ctx.problem(f"{where}.dtype", "the choices mix float and integer dtypes (one init makes both)", dline)
        return None
    return mapping


def read_stream(
    ctx: SpecContext, where: str, item: dict[str, Any], target: Target, line: int | None, out: list[Any]
) -> Arg | None:
    """kind = "stream": the CUDA stream the kernel runs on, declared cudaStream_t; the harness passes 0, the
    legacy default stream its CUDA events time (a kernel that takes a stream can be called like a library's).
    `out`: the arguments read so far (a kernel runs on one stream)."""
    if target.language != "cuda":
        ctx.problem(f"{where}.kind", f"a stream is a CUDA argument: target {target.name} has none", line)
        return None
    for key in ("dtype", "shape", "init", "value"):
        if key in item:
            ctx.problem(f"{where}.{key}", "a stream has no " + key, ctx.lines.key(key, line))
    if any(a.kind == "stream" for a in out):
        ctx.problem(f"{where}.kind", "a second stream: a kernel runs on one", line)
        return None
    return Arg(item["name"], "stream", "")


def tensor_dtype(ctx: SpecContext, dtype: object, target: Target) -> str | None:
    """What is wrong with a tensor's dtype on `target`; None when nothing is."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        return f"unknown dtype {dtype!r} (known: {', '.join(DTYPES)})"
    if target.name not in DTYPES[dtype].targets:
        return f"{dtype} is not available on target {target.name}"
    return None


def read_value(ctx: SpecContext, fieldname: str, value: object, line: int | None) -> Formula | ByScenario | None:
    """A scalar's value: a formula, or a formula chosen by a scenario symbol ({by = "dtype", bf16 = 0, ...})."""
    if isinstance(value, dict):

        def formula_problem(v: object) -> str | None:
            try:
                parse_formula(v)
            except FormulaError as e:
                return str(e)
            return None

        mapping = read_mapping(ctx, fieldname, value, line, formula_problem)
        if mapping is None:
            return None
        return ByScenario(mapping.by, {k: parse_formula(v) for k, v in mapping.choices.items()})
    try:
        return parse_formula(value)
    except FormulaError as e:
        ctx.problem(fieldname, str(e), line)
        return None
