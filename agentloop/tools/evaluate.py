"""The evaluate tool's schema and input checking; the loop reads the kernel file (agentloop/kernel_file.py), runs the
harness and records the verdict."""

from __future__ import annotations

from typing import Any

from agentloop.tools import ToolInputError

SCHEMA = {
    "name": "evaluate",
    "description": (
        "Run the task's harness on a kernel file in your workspace: it compiles it, checks every scenario of the "
        "chosen set against a reference on fresh random inputs, times the correct ones against the baselines, and "
        "returns a table. `quick` runs a few representative scenarios; `full` runs all of them and is what the "
        "goal is judged on."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "scenarios": {"type": "string", "enum": ["quick", "full"], "description": "Default: quick."},
            "kernel": {"type": "string", "description": "The kernel file (default: your kernel file)."},
        },
    },
}


def parse_input(tool_input: dict[str, Any], default_kernel: str) -> tuple[str, str]:
    if not isinstance(tool_input, dict):
        raise ToolInputError("the input must be an object")
    scenarios = tool_input.get("scenarios", "quick")
    if scenarios not in ("quick", "full"):
        raise ToolInputError(f"scenarios must be 'quick' or 'full', not {scenarios!r}")
    kernel = tool_input.get("kernel") or default_kernel
    if not isinstance(kernel, str):
        raise ToolInputError("kernel must be a file name")
    return scenarios, kernel
