"""An input's `init`: how the judge makes it from its seed (a distribution, or a function of reference.py), with
draws every dtype of the input holds."""

from __future__ import annotations

import math
from typing import Any

from .context import SpecContext
from .spec import InputInit
from .vocabulary import DISTRIBUTIONS, FLOAT_MAX, NORMAL_REACH_STD, DType


def read_init(ctx: SpecContext, where: str, init: object, dtypes: list[DType], line: int | None) -> InputInit | None:
    """How the input is made; `dtypes`: every dtype it may have (one kind, float or int)."""
    dtype = dtypes[0]
    if init is None:
        init = {"dist": "normal"} if dtype.kind == "float" else None
    if not isinstance(init, dict):
        ctx.problem(f"{where}.init", 'how the input is made from the seed, e.g. {dist = "normal"}', line)
        return None
    if "function" in init:
        return read_init_function(ctx, where, init, line)
    dist = init.get("dist")
    if dist not in DISTRIBUTIONS:
        known = ", ".join(DISTRIBUTIONS)
        ctx.problem(f"{where}.init.dist", f"{dist!r}: expected one of {known} (or init = {{function = ...}})", line)
        return None
    if dist == "integers" and dtype.kind != "int" or dist != "integers" and dtype.kind != "float":
        ctx.problem(f"{where}.init.dist", f"{dist} does not make {dtype.name} values", line)
        return None
    a_key, b_key = DISTRIBUTIONS[dist]
    vals = read_init_bounds(ctx, where, init, dist, line)
    if vals is None:
        return None
    for key in init:
        if key not in ("dist", a_key, b_key, "native") or key == "native" and dist == "integers":
            ctx.problem(f"{where}.init.{key}", f"unknown field for dist = {dist!r}", line)
    native = init.get("native", False)
    if not isinstance(native, bool):
        ctx.problem(f"{where}.init.native", f"true or false, got {native!r}", line)
        return None
    if dist == "integers":
        said = _integer_range_problem([init[a_key], init[b_key]], dtypes)
        if said:
            ctx.problem(f"{where}.init", said, line)
            return None
        vals = [int(init[a_key]), int(init[b_key])]  # exact: a float would round 2**62 + 1
    if dist == "normal" and not vals[1] > 0 or dist != "normal" and not vals[0] < vals[1]:
        ctx.problem(f"{where}.init", f"an empty range: {a_key} = {vals[0]:g}, {b_key} = {vals[1]:g}", line)
        return None
    if dist != "integers" and (said := _float_range_problem(dist, vals[0], vals[1], dtypes)):
        ctx.problem(f"{where}.init", said, line)
        return None
    return InputInit(dist, vals[0], vals[1], native=native)


def read_init_function(ctx: SpecContext, where: str, init: dict[str, Any], line: int | None) -> InputInit | None:
    """init = {function = "make_x"}: the input is made by a function of reference.py, and by nothing else."""
    fn = init["function"]
    if not isinstance(fn, str) or not fn.isidentifier() or set(init) != {"function"}:
        ctx.problem(f"{where}.init", 'a function of reference.py alone: {function = "make_x"}', line)
        return None
    return InputInit("function", 0.0, 0.0, function=fn)


def read_init_bounds(
    ctx: SpecContext, where: str, init: dict[str, Any], dist: str, line: int | None
) -> list[float] | None:
    """The distribution's two numbers (mean and std, or low and high), its defaults where not given."""
    defaults = {"normal": (0.0, 1.0), "uniform": (0.0, 1.0), "integers": (None, None)}[dist]
    vals = []
    for key, default in zip(DISTRIBUTIONS[dist], defaults, strict=True):
        v = init.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            ctx.problem(f"{where}.init.{key}", f"expected a number, got {v!r}", line)
            return None
        vals.append(float(v))
    return vals


def _float_range_problem(dist: str, a: float, b: float, dtypes: list[DType]) -> str | None:
    """What is wrong with a normal or uniform init for the tensor's dtypes (None: nothing): its draws must stay
    finite in each dtype, or the input holds inf before any kernel runs."""
    reach = abs(a) + NORMAL_REACH_STD * b if dist == "normal" else max(abs(a), abs(b))
    for d in dtypes:
        if reach > FLOAT_MAX[d.name]:
            how = f"mean {a:g} + {NORMAL_REACH_STD} std of {b:g}" if dist == "normal" else f"[{a:g}, {b:g})"
            return f"{how} reaches {reach:g}, beyond {d.name}'s largest finite value {FLOAT_MAX[d.name]:g}"
    return None


def _integer_range_problem(bounds: list[Any], dtypes: list[DType]) -> str | None:
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
