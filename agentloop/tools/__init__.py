"""The agent's tools: shell, editor, evaluate. Each returns a ToolResult whose `output` is exactly what the model
sees; each tool's JSON schema is what the model is told."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ToolResult:
    output: str
    is_error: bool = False
    truncated_chars: int = 0
    extra: dict = field(default_factory=dict)   # tool-specific payload fields (exit_code, timed_out, ...)


class ToolInputError(ValueError):
    """The model called a tool with unusable input; the message goes back to it."""


def truncate(text: str, limit: int) -> tuple[str, int]:
    """Keep the head and the tail of `text` within `limit` characters, saying how much was cut in between."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    head = limit // 2
    tail = limit - head
    note = f"\n[... {cut} characters cut from the middle of this output ...]\n"
    return text[:head] + note + text[len(text) - tail:], cut


def require(tool_input: dict, name: str, kind: type | tuple = str):
    if not isinstance(tool_input, dict) or name not in tool_input:
        raise ToolInputError(f"missing parameter `{name}`")
    value = tool_input[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ToolInputError(f"parameter `{name}` has the wrong type ({type(value).__name__})")
    return value
