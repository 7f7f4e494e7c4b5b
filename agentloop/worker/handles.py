"""What the worker keeps of each run it holds, and of the directives it acted on: read by the socket's message
handlers (messages.py) and kept by the worker (client.py); their own module, so that neither imports the other."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from agentloop.control import ControlInbox
from agentloop.events import Emitter


@dataclass
class RunHandle:
    run_id: object
    gpu: int
    thread: threading.Thread
    inbox: ControlInbox
    emitter: Emitter | None = None  # the agent's, once it is built: the socket's thread emits refusal notes with it


class SeenDirectives:
    """Directive ids acted on, kept on disk so that a restarted worker does not act on a re-sent one twice."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.ids = set(json.loads(path.read_text()))
        except (OSError, ValueError):
            self.ids = set()

    def add(self, ident: str) -> None:
        self.ids.add(ident)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(sorted(self.ids)))
        tmp.replace(self.path)
