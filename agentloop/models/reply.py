"""What a model call returns, in one shape for every backend: the content blocks (Messages-API shape), the stop
reason and the call's usage. Its own module, below the backends and agentloop/interfaces.py, so that each can import
it without importing the package that picks a backend (no import cycle: tests/foundation/test_layering.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    tokens_in: int = 0  # every input token: uncached + cache reads + cache writes
    tokens_out: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None: the price of this model is not known


@dataclass
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str
    model: str
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text").strip()

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]
