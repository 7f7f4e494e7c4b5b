"""One line per event on the terminal, for `python -m agentloop run`: the same line the dashboard's feed shows
(agentloop.protocol.event_summary)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from agentloop.protocol import event_summary
from gpu_harness.terminal import shown

LINE_MAX = 160  # characters of the summary on a terminal line


class ConsoleSink:
    def __init__(self, out: TextIO = sys.stderr, skip: tuple[str, ...] = ("usage",)) -> None:
        self.out = out
        self.skip = skip

    def write(self, event: dict[str, Any]) -> None:
        if event["kind"] in self.skip:
            return
        summary = event_summary(event["kind"], event["payload"], LINE_MAX)
        # the model's words and its commands' output, shown and never acted on by the terminal (the default `out`
        # is stderr as imported, which the command line's shown_streams does not reach)
        self.out.write(shown(f"#{event['seq']:<4} {event['kind']:<18} {summary}") + "\n")
        self.out.flush()
