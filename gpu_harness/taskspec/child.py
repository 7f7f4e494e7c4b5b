"""How the harness's child runs and is timed: `[timing]`, `[host_clock]` and `[call_timeout]` (each key within its
bounds) and `[child]` (its environment and baseline threads)."""

from __future__ import annotations

import re
from typing import Any

from .context import SpecContext
from .vocabulary import CALL_TIMEOUT_KEYS, FORBIDDEN_ENV_PREFIXES, HOST_CLOCK_KEYS, TIMING_DEFAULTS, TIMING_KEYS


def read_timing(ctx: SpecContext) -> tuple[dict[str, Any], dict[str, Any], tuple[float, float]]:
    def bounded(section: str, allowed: dict[str, Any]) -> dict[str, Any]:
        table = ctx.table(section)
        head = ctx.lines.header(section)
        out = {}
        for key, v in table.items():
            line = ctx.lines.key(key, head)
            if key not in allowed:
                ctx.problem(f"{section}.{key}", f"unknown field (known: {', '.join(allowed)})", line)
                continue
            lo, hi = allowed[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                ctx.problem(f"{section}.{key}", f"{v!r}: must lie in [{lo:g}, {hi:g}]", line)
                continue
            if isinstance(lo, int) and v != int(v):  # a count: 5.5 repeats would be cut to 5 unsaid
                ctx.problem(f"{section}.{key}", f"{v!r}: a whole number in [{lo:g}, {hi:g}]", line)
                continue
            out[key] = type(lo)(v) if isinstance(lo, int) else float(v)
        return out

    timing = bounded("timing", TIMING_KEYS)
    _check_repeats(ctx, timing)
    host = bounded("host_clock", HOST_CLOCK_KEYS)
    call = bounded("call_timeout", CALL_TIMEOUT_KEYS)
    return timing, host, (call.get("base_s", 20.0), call.get("min_rate", 1e9))


def _check_repeats(ctx: SpecContext, timing: dict[str, Any]) -> None:
    """min_reps may not exceed max_reps, each as the task sets it or else the harness's default (the harness would
    take the minimum's count, so a maximum set below it would be ignored unsaid)."""
    low, high = timing.get("min_reps", TIMING_DEFAULTS["min_reps"]), timing.get("max_reps", TIMING_DEFAULTS["max_reps"])
    if low > high:
        named = "min_reps" if "min_reps" in timing else "max_reps"
        ctx.problem(
            f"timing.{named}",
            f"min_reps ({low}) is more than max_reps ({high}; the harness's defaults: min_reps "
            f"{TIMING_DEFAULTS['min_reps']}, max_reps {TIMING_DEFAULTS['max_reps']})",
            ctx.lines.key(named, ctx.lines.header("timing")),
        )


def read_child(ctx: SpecContext) -> tuple[dict[str, Any], int]:
    child = ctx.table("child")
    head = ctx.lines.header("child")
    env = child.get("env", {})
    threads = child.get("baseline_threads", 0)
    for key in child:
        if key not in ("env", "baseline_threads"):
            ctx.problem(f"child.{key}", "unknown field (known: env, baseline_threads)", ctx.lines.key(key, head))
    if type(threads) is not int or not 0 <= threads <= 32:
        ctx.problem(
            "child.baseline_threads",
            f"{threads!r}: an integer in [0, 32]",
            ctx.lines.key("baseline_threads", head),
        )
        threads = 0
    if not isinstance(env, dict):
        ctx.problem("child.env", "a table of environment variables", ctx.lines.key("env", head))
        return {}, threads
    out = {}
    for k, v in env.items():
        if not isinstance(v, str) or not re.match(r"^[A-Z_][A-Z0-9_]*$", k):
            ctx.problem(f"child.env.{k}", "names are UPPER_CASE, values strings", ctx.lines.key(k, head))
        elif k.startswith(FORBIDDEN_ENV_PREFIXES):
            ctx.problem(
                f"child.env.{k}",
                "a task may not set this variable (the loader's or the harness's own)",
                ctx.lines.key(k, head),
            )
        else:
            out[k] = v
    return out, threads
