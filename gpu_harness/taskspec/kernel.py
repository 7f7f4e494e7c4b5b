"""The task and its kernel: `target`, `[kernel]` (the exported symbol, a hand-written declaration, the starting
kernel) and the `cheats` folder."""

from __future__ import annotations

import re
from pathlib import Path

from .context import SpecContext
from .spec import Arg
from .vocabulary import C_RESERVED, TARGETS, Target


def read_target(ctx: SpecContext) -> Target:
    value = ctx.data.get("target")
    if value not in TARGETS:
        ctx.problem("target", f"{value!r} is not a target (known: {', '.join(TARGETS)})", ctx.lines.key("target"))
        return TARGETS["cpu"]
    return TARGETS[value]


def read_kernel(ctx: SpecContext, target: Target) -> tuple[str, Path | None, str | None]:
    kernel = ctx.table("kernel")
    line = ctx.lines.header("kernel")
    ctx.only(kernel, line, {"symbol", "abi_text", "starting"}, section="kernel", why="unknown field")
    symbol = kernel.get("symbol")
    if not isinstance(symbol, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", symbol or "") or symbol in C_RESERVED:
        ctx.problem("kernel.symbol", f"{symbol!r} is not a C identifier", ctx.lines.key("symbol", line) or line)
        symbol = "kernel"
    abi_text = kernel.get("abi_text")
    if abi_text is not None and (not isinstance(abi_text, str) or not abi_text.strip()):
        ctx.problem("kernel.abi_text", "the declaration agents are shown, as text", ctx.lines.key("abi_text", line))
        abi_text = None
    starting = kernel.get("starting")
    if starting is None:
        return symbol, None, abi_text
    path = ctx.file_field("kernel.starting", starting, ctx.lines.key("starting", line))
    ctx.where["kernel.starting"] = ctx.lines.key("starting", line)
    if path is not None and path.suffix != target.source_suffix:
        ctx.problem(
            "kernel.starting",
            f"{path.name}: a {target.name} kernel is a {target.source_suffix} file",
            ctx.lines.key("starting", line),
        )
    return symbol, path, abi_text


def check_abi_text(ctx: SpecContext, abi_text: str | None, symbol: str, args: list[Arg]) -> None:
    """A declaration written by hand still names the symbol and every argument: the agent is shown it, and
    a text that drifted from [[args]] would describe another ABI than the one the harness calls."""
    if abi_text is None:
        return
    line = ctx.lines.key("abi_text", ctx.lines.header("kernel"))
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", abi_text))
    if 'extern "C"' not in abi_text or symbol not in words:
        ctx.problem("kernel.abi_text", f'declares no extern "C" {symbol} (the symbol [kernel] names)', line)
    missing = [a.name for a in args if a.name not in words]
    if missing:
        ctx.problem("kernel.abi_text", f"does not name argument(s) {', '.join(missing)} of [[args]]", line)


def read_cheats(ctx: SpecContext) -> Path | None:
    value = ctx.data.get("cheats")
    if value is None:
        default = ctx.folder / "cheats"
        return default if default.is_dir() else None
    path = (ctx.folder / str(value)).resolve()
    if not path.is_dir():
        ctx.problem("cheats", f"{value}: no such folder", ctx.lines.key("cheats"))
        return None
    return path
