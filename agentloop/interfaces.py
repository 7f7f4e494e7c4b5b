"""What the loop talks to, declared once: the model, a tool, the evaluator, and the sinks its events go to.

Each is a `typing.Protocol`: any object of that shape will do (the tests hand the loop scripted ones). A class may
also subclass its protocol to inherit the defaults written here, which is how the loop calls every model the same
way instead of asking which hooks it has.

This module imports nothing of agentloop at run time, so every part can import it. The reviewer of questions,
which only the question asker talks to, is declared beside its kinds in agentloop/review.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentloop.models.reply import ModelReply
    from agentloop.tools import ToolResult

Notify = Callable[[str], None]  # how a backend reports a retry or a warning (the loop turns it into a note)


class Model(Protocol):
    """A model backend (agentloop/models/): the conversation in Messages-API shape in, one reply out."""

    name: str
    # Set by the loop: retries and warnings of the backend become notes in the trace. A backend without any
    # leaves it unused.
    notify: Notify | None = None
    # Set by the loop before each call: the time.monotonic() at which the run's wall budget ends (None: no wall
    # budget). A backend waits no longer for an answer, nor retries past it (retry.attempt_timeout).
    deadline: float | None = None

    def query(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], purpose: str
    ) -> ModelReply: ...

    def skip_played(self, events: list[dict[str, Any]]) -> None:
        """A resumed run starts from these events: a model that plays a recording drops the calls they hold
        (agentloop/models/replay.py). A live model has nothing to skip."""
        return None  # (a body of its own: subclasses inherit this, and it is no abstract method)


class Tool(Protocol):
    """A tool the model calls by `name` (agentloop/tools/): its JSON schema is what the model is told, and what
    it returns is exactly what the model sees. Unusable input raises agentloop.tools.ToolInputError."""

    name: str
    schema: dict[str, Any]

    def __call__(self, tool_input: dict[str, Any]) -> ToolResult: ...


class Evaluator(Protocol):
    """The judge of a kernel file (agentloop/evaluator.py runs the harness in a process of its own)."""

    def __call__(self, task: str, kernel_path: Path, scenarios: str | list[str]) -> dict[str, Any]:
        """EvalResult.to_dict() of the verdict on the kernel file; EvaluatorError when there is no verdict."""
        ...


class Sink(Protocol):
    """Where the emitter (agentloop/events.py) hands each event, in order, the trace file first. An event is
    where it is going when `write` returns (the trace fsyncs it there): the loop never flushes a sink. A plain
    function of one event will do as well."""

    def write(self, event: dict[str, Any]) -> None: ...


# what the emitter takes: a Sink, or a plain function of one event
EventSink = Sink | Callable[[dict[str, Any]], None]
