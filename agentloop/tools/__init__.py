"""The agent's tools: shell, editor, evaluate. Each returns a ToolResult whose `output` is exactly what the model
sees; each tool's JSON schema is what the model is told. Shell and editor are `agentloop.interfaces.Tool`s; the
evaluate tool is run by the loop itself (its verdict is recorded, and may end the run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolResult:
    output: str
    is_error: bool = False
    truncated_chars: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # tool-specific payload fields (exit_code, timed_out, ...)


class ToolInputError(ValueError):
    """The model called a tool with unusable input; the message goes back to it."""


def truncate(text: str, limit: int) -> tuple[str, int]:
    """Keep the head and the tail of `text` within `limit` characters, saying how much was cut in between."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    head = limit // 2
    return _shown(text[:head], text[len(text) - (limit - head) :], cut), cut


def _shown(head: str, tail: str, cut: int) -> str:
    return head + f"\n[... {cut} characters cut from the middle of this output ...]\n" + tail


_CONTINUATION = bytes(range(0x80, 0xC0))  # UTF-8 bytes that do not start a character


class OutputKeeper:
    """What `truncate` would show of a byte stream too long to hold: fed chunk by chunk, it keeps the first and
    the last 4 * limit + 4 bytes (enough for `limit` characters of UTF-8 each) and only counts what lies between,
    so a command's memory cost is bounded by the limit, not by its output. Characters dropped unseen are counted
    as UTF-8 (bytes that start a character)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.keep = 4 * limit + 4
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped_bytes = 0
        self.dropped_chars = 0

    def feed(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * self.keep:  # trimmed in batches: one copy per `keep` bytes, not per chunk
            drop = len(self.tail) - self.keep
            self.dropped_bytes += drop
            self.dropped_chars += len(self.tail[:drop].translate(None, _CONTINUATION))
            del self.tail[:drop]

    def result(self) -> tuple[str, int]:
        """(the text to show, the number of characters cut), as `truncate` gives them."""
        if not self.dropped_bytes:
            return truncate(bytes(self.head + self.tail).decode("utf-8", errors="replace"), self.limit)
        head_text = self.head.decode("utf-8", errors="replace")
        tail_text = self.tail.lstrip(_CONTINUATION).decode("utf-8", errors="replace")  # may start mid-character
        head = self.limit // 2
        tail = self.limit - head
        cut = len(head_text) - head + self.dropped_chars + len(tail_text) - tail
        return _shown(head_text[:head], tail_text[max(0, len(tail_text) - tail) :], cut), cut


def require(tool_input: dict[str, Any], name: str, kind: type | tuple[type, ...] = str) -> Any:
    if not isinstance(tool_input, dict) or name not in tool_input:
        raise ToolInputError(f"missing parameter `{name}`")
    value = tool_input[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ToolInputError(f"parameter `{name}` has the wrong type ({type(value).__name__})")
    return value
