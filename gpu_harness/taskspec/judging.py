"""What the judge computes the truth with: `[reference]` (its function, precision and faster path),
`[spot_check]` (timed calls judged on sampled indices) and `[judge]` (working ahead of the child's outputs)."""

from __future__ import annotations

from .context import SpecContext
from .spec import Arg, JudgeAhead, ScenarioSpec, SpotCheck
from .vocabulary import REFERENCE_FILE, REFERENCE_PRECISIONS, Target


def read_reference(ctx: SpecContext) -> tuple[str, str, str]:
    ref = ctx.table("reference")
    head = ctx.lines.header("reference")
    ctx.only(ref, head, {"function", "precision", "fast"}, section="reference", why="unknown field")
    names = {}
    for key, default in (("function", "reference"), ("fast", "")):
        fn = ref.get(key, default)
        if not isinstance(fn, str) or not (fn.isidentifier() or fn == default):
            ctx.problem(f"reference.{key}", f"{fn!r} is not a function name", ctx.lines.key(key, head))
            fn = default
        names[key] = fn
        ctx.where[f"reference.{key}"] = ctx.lines.key(key, head) or head
    precision = ref.get("precision", "float64")
    if precision not in REFERENCE_PRECISIONS:
        ctx.problem(
            "reference.precision",
            f"{precision!r}: expected one of {', '.join(REFERENCE_PRECISIONS)}",
            ctx.lines.key("precision", head),
        )
        precision = "float64"
    if not (ctx.folder / REFERENCE_FILE).is_file():
        ctx.problem("reference", f"{REFERENCE_FILE} is missing from {ctx.folder}", None)
    return names["function"], precision, names["fast"]


def read_spot_check(ctx: SpecContext, args: list[Arg], scenarios: list[ScenarioSpec]) -> SpotCheck | None:
    """[spot_check]: within bounds that keep a spot check a check (at least 1 index in 8 of the axis, and at
    least 64 of them)."""
    t = ctx.table("spot_check")
    if not t:
        return None
    head = ctx.lines.header("spot_check")
    ctx.only(t, head, {"sample", "fraction", "min_count", "whole"}, section="spot_check", why="unknown field")
    sample = t.get("sample")
    in_outputs = [a.name for a in args if a.kind == "output" and sample in a.shape]
    if not isinstance(sample, str) or not in_outputs:
        outputs_symbols = sorted({d for a in args if a.kind == "output" for d in a.shape if isinstance(d, str)})
        ctx.problem(
            "spot_check.sample",
            f"{sample!r}: name a symbol of an output's shape (known: {', '.join(outputs_symbols)})",
            ctx.lines.key("sample", head) or head,
        )
        return None
    if any(a.name == "sampled" for a in args):
        ctx.problem("spot_check", "an argument is named sampled: the reference gets the sampled indices so", head)
    bounded = {}
    # never sparser than attention_fwd's own (1 row in 8, at least 64): the floor a task cannot lower
    for key, default, lo, hi in (("fraction", 8, 1, 8), ("min_count", 64, 64, 1 << 20)):
        v = t.get(key, default)
        if type(v) is not int or not lo <= v <= hi:
            ctx.problem(f"spot_check.{key}", f"{v!r}: an integer in [{lo}, {hi}]", ctx.lines.key(key, head))
            v = default
        bounded[key] = v
    whole = t.get("whole", "")
    ctx.where["spot_check.whole"] = ctx.lines.key("whole", head)
    if not isinstance(whole, str) or (whole and not whole.isidentifier()):
        ctx.problem("spot_check.whole", f"{whole!r} is not a function name", ctx.lines.key("whole", head))
        whole = ""
    return SpotCheck(sample, bounded["fraction"], bounded["min_count"], whole)


def read_judge(ctx: SpecContext, target: Target) -> JudgeAhead | None:
    t = ctx.table("judge")
    if not t:
        return None
    head = ctx.lines.header("judge")
    allowed = {"ahead": None, "reference_depth": (1, 64), "baseline_depth": (1, 64), "baseline_threads": (1, 32)}
    ctx.only(t, head, set(allowed), section="judge", why="unknown field")
    ahead = t.get("ahead", False)
    if not isinstance(ahead, bool):
        ctx.problem("judge.ahead", "true or false", ctx.lines.key("ahead", head))
        return None
    if ahead and target.arrays != "torch":
        ctx.problem("judge.ahead", f"the judge works ahead on CUDA streams: target {target.name} has none", head)
        return None
    values = {}
    for key, bounds in allowed.items():
        if bounds is None or key not in t:
            continue
        v = t[key]
        if type(v) is not int or not bounds[0] <= v <= bounds[1]:
            ctx.problem(f"judge.{key}", f"{v!r}: an integer in [{bounds[0]}, {bounds[1]}]", ctx.lines.key(key, head))
            continue
        values[key] = v
    return JudgeAhead(**values) if ahead else None
