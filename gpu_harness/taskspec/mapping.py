"""A field chosen by a scenario symbol (`{by = "dtype", bf16 = ..., fp16 = ...}`: a tensor's dtype, a scalar's
value, a tolerance's floor): its choices read where the field is, then held against every scenario once the
scenarios are read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from .context import SpecContext
from .spec import ByScenario, ScenarioSpec, value_key


def read_mapping(
    ctx: SpecContext,
    fieldname: str,
    mapping: dict[str, Any],
    line: int | None,
    problem_of: Callable[[object], str | None],
) -> ByScenario | None:
    """{by = "symbol", value = choice, ...}: each choice checked by problem_of (None: fine). Whether every
    scenario's value has a choice is checked once the scenarios are read (check_choices)."""
    by = mapping.get("by")
    choices = {k: v for k, v in mapping.items() if k != "by"}
    ok = True
    if not isinstance(by, str) or not by.isidentifier():
        ctx.problem(fieldname, f'by = {by!r}: name the scenario symbol that chooses, e.g. {{by = "dtype", ...}}', line)
        ok = False
    if not choices:
        ctx.problem(fieldname, "no choices: give value = choice for each value of the symbol", line)
        ok = False
    for key, choice in choices.items():
        said = problem_of(choice)
        if said:
            ctx.problem(fieldname, f"{key}: {said}", line)
            ok = False
    return ByScenario(cast(str, by), choices) if ok else None  # (a str where ok)


def check_mapping(
    ctx: SpecContext, fieldname: str, mapping: ByScenario, line: int | None, scenarios: list[ScenarioSpec]
) -> bool:
    """The mapping's `by` is a symbol every scenario defines, and each scenario's value of it has a choice."""
    known = list(dict.fromkeys(k for sc in scenarios for k in sc.params))
    if not scenarios:
        return True
    if mapping.by not in known:
        ctx.problem(fieldname, f"by = {mapping.by!r} is no scenario symbol (known: {', '.join(known)})", line)
        return False
    ok = True
    unseen = [sc.id for sc in scenarios if mapping.by not in sc.params]
    if unseen:
        ctx.problem(fieldname, f"symbol {mapping.by!r} is not defined by scenario(s) {', '.join(unseen[:3])}", line)
        ok = False
    lacking = [sc for sc in scenarios if mapping.by in sc.params]
    lacking = [sc for sc in lacking if value_key(sc.params[mapping.by]) not in mapping.choices]
    if lacking:
        values = ", ".join(dict.fromkeys(value_key(sc.params[mapping.by]) for sc in lacking))
        ctx.problem(
            fieldname,
            f"{mapping.by} = {values} (scenario {lacking[0].id}) has no choice "
            f"(the mapping gives {', '.join(mapping.choices)})",
            line,
        )
        ok = False
    return ok
