"""Reading a task folder: `load_spec` parses task.toml and reads it section by section (one module each), collecting
every problem rather than stopping at the first, then builds the `TaskSpec`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from .args import read_args
from .baselines import read_baselines, read_goal
from .child import read_child, read_timing
from .context import SpecContext
from .judging import read_judge, read_reference, read_spot_check
from .kernel import check_abi_text, read_cheats, read_kernel, read_target
from .problems import SpecProblem, TaskSpecError
from .scenarios import read_scenarios
from .spec import TaskSpec
from .symbols import check_choices, check_symbols, read_formulas
from .tolerance import read_tolerance
from .vocabulary import NAME_RE, SPEC_FILE


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
    return read_spec(SpecContext(folder, path, text, data))


def read_spec(ctx: SpecContext) -> TaskSpec:
    """One pass over the parsed TOML, each section by its module, every problem collected before any is raised."""
    name = ctx.folder.name
    if not NAME_RE.match(name):
        ctx.problem("name", f"the folder's name {name!r} is the task's name: use lowercase letters, digits, _")
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
    for key in ctx.data:
        if key not in known:
            line = ctx.lines.header(key) or ctx.lines.key(key)
            ctx.problem(key, f"unknown field (known: {', '.join(sorted(known))})", line)
    if not isinstance(ctx.data.get("description", ""), str):
        ctx.problem("description", "one line of text", ctx.lines.key("description"))
    target = read_target(ctx)
    symbol, starting, abi_text = read_kernel(ctx, target)
    args = read_args(ctx, target)
    check_abi_text(ctx, abi_text, symbol, args)
    reference_function, reference_precision, reference_fast = read_reference(ctx)
    scenarios, quick = read_scenarios(ctx, args)
    flops, nbytes = read_formulas(ctx)
    baselines, defaults, versions_function = read_baselines(ctx)
    tolerances, uniform = read_tolerance(ctx, baselines, args, scenarios)
    goal_baseline, goal_speedup = read_goal(ctx, baselines, defaults)
    timing, host_clock, (base_s, min_rate) = read_timing(ctx)
    child_env, baseline_threads = read_child(ctx)
    spot_check = read_spot_check(ctx, args, scenarios)
    ahead = read_judge(ctx, target)
    cheats = read_cheats(ctx)
    check_symbols(ctx, args, scenarios, check_choices(ctx, args, scenarios))
    if ctx.problems:
        raise TaskSpecError(ctx.problems)
    return TaskSpec(
        name=name,
        folder=ctx.folder,
        description=str(ctx.data.get("description", "")),
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
        default_baselines=tuple(defaults or ()),
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
        lines=dict(ctx.where),
    )
