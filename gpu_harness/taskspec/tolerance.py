"""`[tolerance]`: one rule for every output or one per output (`[tolerance.<output>]`): a baseline's own error
times a factor plus a floor, a fixed relative L2 bound, or atol/rtol."""

from __future__ import annotations

import math
from typing import Any

from .context import SpecContext
from .mapping import check_mapping, read_mapping
from .spec import Arg, ByScenario, ScenarioSpec, Tolerance


def read_tolerance(
    ctx: SpecContext, baselines: dict[str, Any], args: list[Arg], scenarios: list[ScenarioSpec]
) -> tuple[dict[str, Any], Tolerance | None]:
    """[tolerance]: one rule for every output, or a table per output ([tolerance.o], [tolerance.lse]).
    Returns (output name -> rule, the one rule or None)."""
    t = ctx.table("tolerance")
    head = ctx.lines.header("tolerance")
    outputs = [a.name for a in args if a.kind == "output"]
    # a table is an output's rule; one with `by` is a field chosen by scenario (floor = {by = "case", ...})
    per_output = {k: v for k, v in t.items() if isinstance(v, dict) and "by" not in v}
    if not per_output:
        rule = read_rule(ctx, t, "tolerance", head, baselines, scenarios)
        return {name: rule for name in outputs}, rule
    for key in t:
        if key not in per_output:
            ctx.problem(
                f"tolerance.{key}",
                "either one rule for every output or a table per output ([tolerance.<output>]), not both",
                ctx.lines.key(key, head),
            )
    rules = {}
    for name, table in per_output.items():
        section = f"tolerance.{name}"
        line = ctx.lines.header(section) or ctx.lines.key(name, head)
        if name not in outputs:
            ctx.problem(section, f"{name!r} is not an output (outputs: {', '.join(outputs)})", line)
            continue
        rules[name] = read_rule(ctx, table, section, line, baselines, scenarios)
    missing = [n for n in outputs if n not in per_output]
    if missing:
        ctx.problem("tolerance", f"no rule for output(s) {', '.join(missing)}: each output needs one", head)
    held = [n for n, r in rules.items() if r.measure == "once"]
    if len(held) > 1:
        ctx.problem(
            "tolerance",
            f'measure = "once" on {", ".join(held)}: one output at most (its bound is the one seed b and the'
            " timed calls are held to)",
            head,
        )
    return {n: rules[n] for n in outputs if n in rules}, None


def read_rule(
    ctx: SpecContext,
    t: dict[str, Any],
    section: str,
    head: int | None,
    baselines: dict[str, Any],
    scenarios: list[ScenarioSpec],
) -> Tolerance:
    """One tolerance rule from its table (`section` names it in problems)."""
    if "baseline" in t:
        return read_baseline_rule(ctx, t, section, head, baselines, scenarios)
    if "rel_l2" in t:
        ctx.only(t, head, {"rel_l2"}, section=section)
        return Tolerance("rel_l2", rel_l2=rule_number(ctx, t, section, head, "rel_l2"))
    if "atol" in t or "rtol" in t:
        ctx.only(t, head, {"atol", "rtol"}, section=section)
        return Tolerance(
            "allclose",
            atol=rule_number(ctx, t, section, head, "atol", 0.0),
            rtol=rule_number(ctx, t, section, head, "rtol", 0.0),
        )
    ctx.problem(section, "give baseline (+ factor, floor), rel_l2, or atol/rtol", head)
    return Tolerance("rel_l2", rel_l2=0.0)


def read_baseline_rule(
    ctx: SpecContext,
    t: dict[str, Any],
    section: str,
    head: int | None,
    baselines: dict[str, Any],
    scenarios: list[ScenarioSpec],
) -> Tolerance:
    """baseline = "name" (or names tried in turn): an output is held to `factor` times the baseline's own
    error against the reference, never below `floor`."""
    names = read_rule_baselines(ctx, t["baseline"], section, ctx.lines.key("baseline", head), baselines)
    factor = rule_number(ctx, t, section, head, "factor", 2.0)
    if factor < 1.0:
        ctx.problem(f"{section}.factor", "below 1: the baseline itself would fail", ctx.lines.key("factor", head))
    measure = t.get("measure", "each")
    if measure not in ("each", "once"):
        ctx.problem(
            f"{section}.measure",
            f'{measure!r}: "each" (on every output judged) or "once" (on seed a, then held)',
            ctx.lines.key("measure", head),
        )
        measure = "each"
    sanity = None
    if "sanity" in t:
        sanity = rule_number(ctx, t, section, head, "sanity")
        if sanity < 1.0:
            ctx.problem(
                f"{section}.sanity",
                "below 1: a baseline as good as default_error would be refused",
                ctx.lines.key("sanity", head),
            )
    ctx.only(
        t,
        head,
        {"baseline", "factor", "floor", "default_error", "measure", "sanity", "ceiling"},
        section=section,
    )
    return Tolerance(
        "baseline",
        baseline=str(names[0]),
        factor=factor,
        floor=rule_number_or_mapping(ctx, t, section, head, "floor", 0.0, scenarios),
        default_error=rule_number_or_mapping(ctx, t, section, head, "default_error", 1e-6, scenarios),
        fallbacks=tuple(str(n) for n in names[1:]),
        sanity=sanity,
        measure=measure,
        ceiling=rule_number(ctx, t, section, head, "ceiling") if "ceiling" in t else None,
    )


def read_rule_baselines(
    ctx: SpecContext, named: object, section: str, bline: int | None, baselines: dict[str, Any]
) -> list[Any]:
    """A rule's baseline names (each must be a function baseline); [""] when none is usable."""
    names = named if isinstance(named, list) else [named]
    functions = [n for n, b in baselines.items() if b.function]
    if not names or not all(isinstance(n, str) for n in names):
        ctx.problem(f"{section}.baseline", "a baseline's name, or a list of names tried in turn", bline)
        names = [""]
    for name in names:
        if name not in baselines or not baselines[name].function:
            ctx.problem(
                f"{section}.baseline",
                f"{name!r} is not a function baseline (known: {', '.join(functions) or 'none'})",
                bline,
            )
    return names


def rule_number(
    ctx: SpecContext, t: dict[str, Any], section: str, head: int | None, key: str, default: float | None = None
) -> float:
    """A rule's number >= 0 (0.0 when it is not one, said)."""
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        ctx.problem(f"{section}.{key}", f"expected a number >= 0, got {v!r}", ctx.lines.key(key, head) or head)
        return 0.0
    return float(v)


def rule_number_or_mapping(
    ctx: SpecContext,
    t: dict[str, Any],
    section: str,
    head: int | None,
    key: str,
    default: float | None,
    scenarios: list[ScenarioSpec],
) -> float | ByScenario:
    """A number >= 0, or numbers chosen by a scenario symbol ({by = "dtype", bf16 = 2e-4, ...})."""
    v = t.get(key, default)
    if not isinstance(v, dict):
        return rule_number(ctx, t, section, head, key, default)
    line = ctx.lines.key(key, head) or head

    def problem_of(choice: object) -> str | None:
        ok = not isinstance(choice, bool) and isinstance(choice, (int, float)) and math.isfinite(choice)
        return (
            None
            if ok and isinstance(choice, (int, float)) and choice >= 0
            else f"expected a number >= 0, got {choice!r}"
        )

    mapping = read_mapping(ctx, f"{section}.{key}", v, line, problem_of)
    if mapping is None or not check_mapping(ctx, f"{section}.{key}", mapping, line, scenarios):
        return 0.0
    return ByScenario(mapping.by, {k: float(c) for k, c in mapping.choices.items()})
