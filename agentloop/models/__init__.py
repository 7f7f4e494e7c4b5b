"""Model backends: Anthropic (the `anthropic` SDK), an OpenAI-compatible endpoint (`openai:MODEL`: vLLM, llama.cpp's
server and the like), and replay of a recorded trace.

Each takes the system prompt, the conversation (Messages-API shape) and the tool schemas, and returns a
ModelReply: content blocks in Messages-API shape, the stop reason, and the call's usage. The interface they
share, `Model`, is declared in agentloop/interfaces.py; each backend subclasses it for its defaults.
"""

from __future__ import annotations

from typing import Any

from agentloop.interfaces import Model, Notify
from agentloop.models.reply import ModelReply, Usage

__all__ = ["Model", "ModelReply", "Notify", "Usage", "make_model"]


def make_model(spec: str, settings: dict[str, Any] | None = None, notify: Notify | None = None) -> Model:
    """A model from a spec: `replay:TRACE`, `openai:MODEL` (an OpenAI-compatible endpoint), or an Anthropic id."""
    settings = settings or {}
    if spec.startswith("replay:"):
        from agentloop.models.replay import ReplayModel

        return ReplayModel.from_trace(spec[len("replay:") :])
    if spec.startswith("openai:"):
        from agentloop.errors import ConfigError
        from agentloop.models.openai_backend import OpenAIModel

        name = spec[len("openai:") :]
        if not name:
            raise ConfigError("openai:MODEL needs the model's name as the server knows it, e.g. openai:qwen3-coder")
        return OpenAIModel(name, settings=settings, notify=notify)
    from agentloop.models.anthropic_backend import AnthropicModel

    return AnthropicModel(spec, settings=settings, notify=notify)
