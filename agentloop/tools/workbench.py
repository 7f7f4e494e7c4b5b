"""The model's two workspace tools, made from the policy's [tools] limits (evaluate is the loop's own: agent.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentloop.sandbox import Sandbox
from agentloop.tools.editor import MAX_FILE_BYTES, EditorTool
from agentloop.tools.shell import COMMAND_MAX_BYTES, ShellTool


def work_tools(
    workspace: Path, limits: dict[str, Any], extra_env: dict[str, str], sandbox: Sandbox
) -> tuple[ShellTool, EditorTool]:
    """The shell and the editor of one run, both in `workspace`; the shell's commands run in `sandbox` with
    `extra_env` (the run's GPU)."""
    editor = EditorTool(
        workspace,
        output_limit=limits["output_limit_chars"],
        max_file_bytes=int(limits.get("editor_max_file_bytes", MAX_FILE_BYTES)),
    )
    shell = ShellTool(
        workspace,
        timeout_s=limits["shell_timeout_s"],
        timeout_max_s=limits["shell_timeout_max_s"],
        output_limit=limits["output_limit_chars"],
        extra_env=extra_env,
        sandbox=sandbox,
        command_max_bytes=int(limits.get("shell_command_max_bytes", COMMAND_MAX_BYTES)),
    )
    return shell, editor
