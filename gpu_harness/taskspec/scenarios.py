"""`[scenarios]`: the listed scenarios and the products of axes, their derived symbols, their ids (the template
and `id_names`) and the quick subset."""

from __future__ import annotations

import itertools
import math
import string
from dataclasses import dataclass, field
from typing import Any, cast

from .context import SpecContext
from .formula import Formula, FormulaError, SymbolValueError, parse_formula
from .spec import Arg, ScenarioSpec, value_key
from .vocabulary import MAX_SCENARIOS


def _id_text(symbol: str, value: object, id_names: dict[str, Any]) -> object:
    """A scenario's value as its id writes it: the name id_names gives it (KeyError when it gives none)."""
    if symbol not in id_names:
        return value
    key = value_key(value)
    if key not in id_names[symbol]:
        raise KeyError(f"{symbol} = {key}")
    return id_names[symbol][key]


@dataclass(frozen=True)
class _IdTemplate:
    """scenarios.id as read: the template, its line, and its fields (None when the template is unusable)."""

    template: object
    line: int | None
    fields: list[str] | None


@dataclass
class _Derived:
    """[scenarios.derived] as read: (name, formula, line) in order, and the names whose problem was said (once, not
    per scenario)."""

    formulas: list[tuple[str, Formula, int | None]]
    said: set[str] = field(default_factory=set)


def read_scenarios(ctx: SpecContext, args: list[Arg]) -> tuple[list[ScenarioSpec], list[str]]:
    sc = ctx.table("scenarios")
    head = ctx.lines.header("scenarios")
    known = {"id", "list", "product", "id_names", "derived", "quick"}
    ctx.only(sc, head, known, section="scenarios", why="unknown field")
    ids = read_id_template(ctx, sc.get("id"), ctx.lines.key("id", head), head)
    params_list = read_scenario_params(ctx, sc, head)
    derived = read_derived(ctx, head)
    id_names = read_id_names(ctx, head)
    out: list[ScenarioSpec] = []
    where_id: dict[str, dict[str, Any]] = {}
    for params, line in params_list:
        sid = scenario_id(ctx, params, line, derived, ids, id_names, head)
        if sid is None:
            continue
        if sid in where_id:
            ctx.problem(
                "scenarios.id",
                f"duplicate scenario id {sid!r} ({params} and {where_id[sid]}): the template must tell them apart",
                line,
            )
            continue
        where_id[sid] = params
        out.append(ScenarioSpec(sid, params))
    check_id_names_used(ctx, id_names, params_list, head)
    quick = read_quick(ctx, sc, head, ids, where_id)
    return out, quick


def read_id_template(ctx: SpecContext, template: object, tline: int | None, head: int | None) -> _IdTemplate:
    """scenarios.id: a format string of scenario symbols ("m{m}_n{n}"); its fields are None when unusable."""
    ids = _IdTemplate(template, tline, None)
    if not isinstance(template, str) or not template:
        ctx.problem("scenarios.id", 'an id template such as "m{m}_n{n}" is needed (stable ids)', tline or head)
        return ids
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        ctx.problem("scenarios.id", f"{template!r}: {e}", tline)
        return ids
    if not fields or not all(f.isidentifier() for f in fields):
        ctx.problem("scenarios.id", f"{template!r}: each {{field}} must be one symbol's name", tline)
        return ids
    return _IdTemplate(template, tline, fields)


def read_scenario_params(
    ctx: SpecContext, sc: dict[str, Any], head: int | None
) -> list[tuple[dict[str, Any], int | None]]:
    """Each scenario's symbols from scenarios.list, then from each [[scenarios.product]], with the line that
    gave it; at most MAX_SCENARIOS in all."""
    listed = sc.get("list", [])
    lline = ctx.lines.key("list", head)
    if not isinstance(listed, list) or not all(isinstance(p, dict) for p in listed):
        ctx.problem("scenarios.list", "expected a list of tables, e.g. [{m = 1, n = 2}]", lline)
        listed = []
    if len(listed) > MAX_SCENARIOS:
        ctx.problem("scenarios.list", f"{len(listed)} scenarios: at most {MAX_SCENARIOS}", lline)
        listed = []
    params_list: list[tuple[dict[str, Any], int | None]] = [(dict(p), lline) for p in listed]
    products = sc.get("product", [])
    if isinstance(products, dict):
        products = [products]
    if not isinstance(products, list):
        ctx.problem("scenarios.product", "expected [[scenarios.product]] tables of axes", None)
        products = []
    for i, axes in enumerate(products):
        params_list += read_product(ctx, i, axes, len(params_list), ctx.lines.header("scenarios.product", i) or lline)
    if not params_list:
        ctx.problem("scenarios", "no scenarios: give scenarios.list and/or [[scenarios.product]]", head)
    return params_list


def read_product(
    ctx: SpecContext, i: int, axes: object, before: int, pline: int | None
) -> list[tuple[dict[str, Any], int | None]]:
    """The i-th [[scenarios.product]]: every combination of its axes' values; none when it is unusable or
    would take the count (`before` of them so far) past MAX_SCENARIOS."""
    if not isinstance(axes, dict) or not axes or not all(isinstance(v, list) and v for v in axes.values()):
        ctx.problem(f"scenarios.product[{i}]", "each axis is a non-empty list of values", pline)
        return []
    count = math.prod(len(v) for v in axes.values())
    if before + count > MAX_SCENARIOS:  # counted before it is made: 1000 x 1000 x 1000 is not
        ctx.problem(
            f"scenarios.product[{i}]",
            f"{before + count} scenarios with this product: at most {MAX_SCENARIOS}",
            pline,
        )
        return []
    keys = list(axes)
    return [(dict(zip(keys, combo, strict=True)), pline) for combo in itertools.product(*axes.values())]


def scenario_id(
    ctx: SpecContext,
    params: dict[str, Any],
    line: int | None,
    derived: _Derived,
    ids: _IdTemplate,
    id_names: dict[str, Any],
    head: int | None,
) -> str | None:
    """One scenario's id from the template, once its derived symbols are added to `params`; None when the
    scenario is unusable (said) or the template is."""
    bad = [k for k, v in params.items() if not isinstance(v, (int, float, str))]
    if bad or not all(isinstance(k, str) and k.isidentifier() for k in params):
        ctx.problem("scenarios", f"{params!r}: values must be numbers, booleans or strings keyed by symbol", line)
        return None
    if not add_derived(ctx, params, derived) or ids.fields is None:
        return None
    missing = [f for f in ids.fields if f not in params]
    if missing:
        ctx.problem("scenarios.id", f"{ids.template!r} needs {', '.join(missing)}, which {params} lacks", ids.line)
        return None
    try:
        return cast(str, ids.template).format(
            **{k: _id_text(k, v, id_names) for k, v in params.items()}
        )  # (a str: fields)
    except KeyError as e:
        ctx.problem("scenarios.id_names", f"{params}: no name for {e.args[0]}", ctx.lines.key("id_names", head))
    except (ValueError, TypeError) as e:
        ctx.problem("scenarios.id", f"{ids.template!r} with {params}: {e}", ids.line)
    return None


def check_id_names_used(
    ctx: SpecContext, id_names: dict[str, Any], params_list: list[tuple[dict[str, Any], int | None]], head: int | None
) -> None:
    """Each symbol scenarios.id_names names values of is a scenario symbol."""
    unnamed = [k for k in id_names if params_list and not any(k in p for p, _ in params_list)]
    if unnamed:  # a typo of a symbol would leave its values unnamed in every id
        known = ", ".join(dict.fromkeys(k for p, _ in params_list for k in p))
        ctx.problem(
            "scenarios.id_names",
            f"{', '.join(unnamed)}: no scenario symbol (known: {known})",
            ctx.lines.key("id_names", head),
        )


def read_quick(
    ctx: SpecContext, sc: dict[str, Any], head: int | None, ids: _IdTemplate, where_id: dict[str, Any]
) -> list[str]:
    """scenarios.quick: the ids of the quick subset, each a scenario's (checked when the ids could be made)."""
    quick = sc.get("quick", [])
    qline = ctx.lines.key("quick", head)
    if not isinstance(quick, list) or not all(isinstance(q, str) for q in quick) or not quick:
        ctx.problem("scenarios.quick", "a non-empty list of scenario ids (the quick subset)", qline or head)
        quick = []
    for q in quick:
        if ids.fields is not None and q not in where_id:
            ctx.problem(
                "scenarios.quick", f"{q!r} is not a scenario id", ctx.lines.containing(f'"{q}"', qline) or qline
            )
    if len(set(quick)) != len(quick):
        ctx.problem("scenarios.quick", "an id is listed twice", qline)
    return quick


def read_derived(ctx: SpecContext, head: int | None) -> _Derived:
    """`[scenarios.derived]`: symbols computed from each scenario's own (name = formula, in order; a later one
    may use an earlier one), e.g. softmax_scale = "1/head_dim**0.5"."""
    table = ctx.table("scenarios").get("derived", {})
    dhead = ctx.lines.header("scenarios.derived") or head
    if not isinstance(table, dict):
        ctx.problem("scenarios.derived", 'expected a table of name = "formula"', dhead)
        return _Derived([])
    out = []
    for name, text in table.items():
        line = ctx.lines.key(name, dhead)
        if not name.isidentifier():
            ctx.problem(f"scenarios.derived.{name}", "a derived symbol's name must be an identifier", line)
            continue
        try:
            out.append((name, parse_formula(text), line))
        except FormulaError as e:
            ctx.problem(f"scenarios.derived.{name}", str(e), line)
    return _Derived(out)


def add_derived(ctx: SpecContext, params: dict[str, Any], derived: _Derived) -> bool:
    """Adds the derived symbols to one scenario's params; False when one cannot be (its problem is said for
    the first scenario it happens on only)."""
    for name, formula, fline in derived.formulas:
        if name in params:
            derived_problem(ctx, derived, name, f"{params}: {name} is given by the scenario too", fline)
            return False
        value: object
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
            derived_problem(ctx, derived, name, f"{formula.text!r} on {params}: {value!r} is not a number", fline)
            return False
        params[name] = value
    return True


def derived_problem(ctx: SpecContext, derived: _Derived, name: str, message: str, line: int | None) -> None:
    if name not in derived.said:
        derived.said.add(name)
        ctx.problem(f"scenarios.derived.{name}", message, line)


def read_id_names(ctx: SpecContext, head: int | None) -> dict[str, dict[str, str]]:
    """`[scenarios] id_names`: how a symbol's value is written in ids, e.g. causal = {true = "causal",
    false = "full"} (keys: the value as text, booleans as true/false)."""
    names = ctx.table("scenarios").get("id_names", {})
    line = ctx.lines.key("id_names", head)
    if not isinstance(names, dict) or not all(
        isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in names.values()
    ):
        ctx.problem("scenarios.id_names", 'expected symbol = {value = "name", ...} tables', line)
        return {}
    return names
