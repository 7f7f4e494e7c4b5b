"""`[baselines]` (functions of reference.py or kernel files, with their flags, the default set and the versions
function) and the `[goal]` set against one of them."""

from __future__ import annotations

from typing import Any

from ..figures import BEST_LIBRARY
from .context import SpecContext
from .spec import Baseline


def read_baselines(ctx: SpecContext) -> tuple[dict[str, Any], list[str] | None, str]:
    """The baselines by name, the default set (None where it is malformed: reported here) and the versions
    function's name."""
    b = ctx.table("baselines")
    head = ctx.lines.header("baselines")
    out = {}
    versions = b.get("versions", "")
    ctx.where["baselines.versions"] = ctx.lines.key("versions", head)
    if not isinstance(versions, str) or (versions and not versions.isidentifier()):
        ctx.problem("baselines.versions", f"{versions!r} is not a function name", ctx.lines.key("versions", head))
        versions = ""
    for name, item in b.items():
        if name in ("default", "versions"):
            continue
        line = ctx.lines.key(name, head) or ctx.lines.header(f"baselines.{name}")
        where = f"baselines.{name}"
        if not isinstance(item, dict):
            ctx.problem(where, 'expected a table: {function = "..."} or {kernel = "file"}', line)
            continue
        if name == BEST_LIBRARY:
            ctx.problem(where, f"{BEST_LIBRARY!r} is the harness's own figure (the fastest library): rename", line)
            continue
        baseline = read_baseline(ctx, name, item, where, line)
        if baseline is not None:
            out[name] = baseline
    defaults = b.get("default", list(out))
    dline = ctx.lines.key("default", head)
    if not isinstance(defaults, list) or not all(isinstance(d, str) for d in defaults):
        ctx.problem("baselines.default", "a list of baseline names", dline)
        return out, None, versions
    for d in defaults:
        if d not in out:
            ctx.problem("baselines.default", f"{d!r} is not a baseline (known: {', '.join(out)})", dline)
    return out, defaults, versions


def read_baseline(ctx: SpecContext, name: str, item: dict[str, Any], where: str, line: int | None) -> Baseline | None:
    """One entry of [baselines]: a function of reference.py or a kernel file, with its flags."""
    known = ("function", "kernel", "warm", "requires", "may_refuse", "description", "library")
    unknown = [k for k in item if k not in known]
    if unknown:
        ctx.problem(where, f"unknown field(s) {', '.join(unknown)}", line)
    if ("function" in item) == ("kernel" in item):
        ctx.problem(where, "give exactly one of function (in reference.py) or kernel (a source file)", line)
        return None
    flags = {}
    for key in ("warm", "may_refuse", "library"):
        flags[key] = item.get(key, False)
        if not isinstance(flags[key], bool):
            ctx.problem(f"{where}.{key}", "true or false", line)
            flags[key] = False
    description = item.get("description", "")
    if not isinstance(description, str):
        ctx.problem(f"{where}.description", "a line of text", line)
        description = ""
    requires = read_requires(ctx, item.get("requires", []), where, line)
    if "function" in item:
        fn = item["function"]
        ctx.where[f"{where}.function"] = line
        if not isinstance(fn, str) or not fn.isidentifier():
            ctx.problem(f"{where}.function", f"{fn!r} is not a function name", line)
            return None
        return Baseline(name, function=fn, requires=requires, description=description, **flags)
    if requires or flags["may_refuse"]:
        ctx.problem(where, "requires and may_refuse are a function baseline's", line)
    path = ctx.file_field(f"{where}.kernel", item["kernel"], line)
    ctx.where[f"{where}.kernel"] = line
    if path is None:
        return None
    return Baseline(name, kernel=path, warm=flags["warm"], description=description, library=flags["library"])


def read_requires(ctx: SpecContext, requires: object, where: str, line: int | None) -> tuple[tuple[str, ...], ...]:
    """`requires`: a module name, or a list whose entries are module names or lists of alternatives (any one
    of which is enough: ["flash_attn_interface", "fa3_fwd_interface"] inside the list)."""

    def module(m: object) -> bool:
        return isinstance(m, str) and all(p.isidentifier() for p in m.split("."))

    requires = [requires] if isinstance(requires, str) else requires
    entries = [tuple(e) if isinstance(e, list) else (e,) for e in requires] if isinstance(requires, list) else None
    if entries is None or not all(e and all(module(m) for m in e) for e in entries):
        ctx.problem(
            f"{where}.requires",
            'module names, e.g. ["flash_attn_interface"], or alternatives: [["flash_attn_interface", "fa3_fwd_interface"]]',
            line,
        )
        return ()
    return tuple(entries)


def read_goal(ctx: SpecContext, baselines: dict[str, Any], defaults: list[str] | None) -> tuple[str, float]:
    """`[goal]`: a baseline (or best_library, over the baselines marked library) and the speed-up over it. The
    agent loop evaluates with the default baselines, so the goal's baseline, or every library of a best_library
    goal, must be among them: a goal they never time could never be met. `defaults` None: they were malformed
    (reported by read_baselines), so nothing is checked against them."""
    g = ctx.table("goal")
    head = ctx.lines.header("goal")
    ctx.only(g, head, {"baseline", "speedup"}, section="goal", why="unknown field")
    base, speedup = g.get("baseline"), g.get("speedup")
    libraries = [name for name, b in baselines.items() if b.library]
    if base == BEST_LIBRARY and not libraries:
        ctx.problem(
            "goal.baseline",
            f"{BEST_LIBRARY!r} needs baselines marked library = true (none is)",
            ctx.lines.key("baseline", head) or head,
        )
    elif base not in baselines and base != BEST_LIBRARY:
        ctx.problem(
            "goal.baseline",
            f"{base!r} is not a baseline (known: {', '.join([*baselines, *([BEST_LIBRARY] if libraries else [])])})",
            ctx.lines.key("baseline", head) or head,
        )
    elif defaults is not None and (untimed := _untimed_goal(str(base), libraries, defaults)):
        ctx.problem(
            "goal.baseline",
            f"{base!r} {untimed}, which the agent loop's evaluations time: a goal they never time can never be met",
            ctx.lines.key("baseline", head) or head,
        )
    if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not speedup > 0:
        ctx.problem("goal.speedup", f"expected a number > 0, got {speedup!r}", ctx.lines.key("speedup", head) or head)
        speedup = 1.0
    return str(base), float(speedup)


def _untimed_goal(base: str, libraries: list[str], defaults: list[str]) -> str:
    """What the default baselines leave out of the goal, in words ("" where nothing): the goal's baseline, or
    for best_library the libraries it is the fastest of."""
    if base != BEST_LIBRARY:
        return "" if base in defaults else "is not among [baselines] default"
    missing = [name for name in libraries if name not in defaults]
    return (
        f"needs every library among [baselines] default (missing: {', '.join(map(repr, missing))})" if missing else ""
    )
