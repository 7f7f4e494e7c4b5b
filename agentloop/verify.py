"""A "verify here" run (docs/protocol.md 2.12): no model, no tools, one full evaluation of the run's starting
kernel by the worker's own harness, in the worker's sandbox, then the run stops.

It is what the dashboard's "Verify here" queues for a kernel whose figures no harness of the site measured (an
imported trace's claim): only this evaluation's figures are called verified. Its `evaluation` event is the one
the agent's scoreboard writes (purpose `verify`, scenario set `full`), with `environment` added: the host, the
Python and the library versions the baselines' timings depend on, which the dashboard shows beside it.
"""

from __future__ import annotations

import platform
import socket
from pathlib import Path
from typing import Any

from agentloop import __version__
from agentloop.agent import Host, Outcome, task_facts
from agentloop.config import RunConfig
from agentloop.control import ControlInbox
from agentloop.evaluator import EvaluatorError, HarnessEvaluator
from agentloop.events import Emitter
from agentloop.interfaces import Evaluator, EventSink
from agentloop.scoreboard import Scoreboard
from agentloop.state import RunState
from gpu_harness import figures

VERIFY_PURPOSE = "verify"
VERIFIED = "verified"  # the final status's reason: the evaluation is done (whatever its verdict)


def environment(task: str) -> dict[str, Any]:
    """Where the evaluation ran, as far as this process can tell: the host, Python, and the task's library
    versions (gpu_harness's `Task.versions`, the libraries the baselines' timings depend on)."""
    from gpu_harness import get_task

    try:
        libraries = get_task(task).versions()
    except Exception as exc:  # a library that cannot even be imported is itself what the page should say
        libraries = f"unknown ({type(exc).__name__}: {exc})"
    return {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "library_versions": libraries,
        "agentloop_version": __version__,
    }


class Verification:
    """One verify run: `run()` emits its events and returns how it ended (the worker runs it as it runs an
    Agent). A stop that arrives before the evaluation starts stops it; one that arrives during it waits for it."""

    def __init__(
        self,
        *,
        run_id: object,
        sinks: list[EventSink],
        host: Host,
        config: RunConfig | None = None,
        resume_events: list[dict[str, Any]] | None = None,
        inbox: ControlInbox | None = None,
        evaluator: Evaluator | None = None,
        timeout_s: float = 1800,
    ) -> None:
        self.state = RunState()
        for event in resume_events or []:
            self.state.apply(event)
        config = config or self.state.config
        if config is None:
            raise ValueError("the trace has no 'started' event: nothing to resume")
        self.config = config
        self.run_id = run_id
        self.host = host
        self.inbox = inbox or ControlInbox()
        self.emitter = Emitter(run_id, sinks, next_seq=len(resume_events or []))
        self.emitter.add_listener(self.state.apply)
        self.resumed = resume_events is not None
        self._own_evaluator = None
        if evaluator is None:
            evaluator = self._own_evaluator = HarnessEvaluator(
                timeout_s=timeout_s, extra_env=host.extra_env, sandbox=host.sandbox
            )
        self.evaluator = evaluator

    def run(self) -> Outcome:
        try:
            self._run()
        except Exception as exc:  # the run must end in its events, never stay "running"
            self._finish("failed", "internal_error", f"{type(exc).__name__}: {exc}")
        finally:
            if self._own_evaluator is not None:
                self._own_evaluator.close()
        s = self.state
        return Outcome(s.status, s.final_reason or "", s.best_speedup, s.steps, self.emitter.next_seq)

    def _run(self) -> None:
        if self.state.finished:
            return
        if self.resumed:
            self.emitter.emit("status", {"status": "running", "reason": "resumed"})
        else:
            config = self.config.to_dict() | {"agentloop_version": __version__, "sandbox": self.host.sandbox.mode}
            self.emitter.emit("status", {"status": "running", "reason": "started", "config": config})
        if any(d.action == "stop" for d in self.inbox.drain()):
            self._finish("stopped", "stopped_by_human", "stopped before the evaluation started")
            return
        done = [e for e in self.state.evaluations if e.purpose == VERIFY_PURPOSE]
        if not done:
            self._evaluate()
        else:
            self._finish("stopped", VERIFIED, "the full evaluation was recorded before a restart")

    def _evaluate(self) -> None:
        workspace = Path(self.host.workspace)
        workspace.mkdir(parents=True, exist_ok=True)
        kernel = workspace / self.config.kernel_filename
        kernel.write_text(self.config.starting_kernel, encoding="utf-8")
        try:
            result = self.evaluator(self.config.task, kernel, "full")
        except EvaluatorError as exc:
            self._finish("failed", "verify_error", f"the harness could not evaluate the source: {exc}")
            return
        facts = task_facts(self.config.task)
        board = Scoreboard(
            self.state, self.config, facts["full_ids"], self._emit_verified, libraries=facts["libraries"]
        )
        board.record(result, VERIFY_PURPOSE, "full", self.config.kernel_filename, None)
        # The speed-up as every page writes it (with its interval, "no difference" inside the noise): the run's
        # reason says "verified", which is who measured it, so a bare 1.010x would read as a verified speed-up.
        baseline = self.config.goal.baseline
        speedup = figures.verdict_speedup_text(result, baseline, times="x", missing="n/a")
        self._finish(
            "stopped", VERIFIED, f"one full evaluation here: {result.get('status')}, {speedup} over {baseline}"
        )

    def _emit_verified(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.emitter.emit(kind, payload | {"environment": environment(self.config.task)})

    def _finish(self, status: str, reason: str, detail: str) -> None:
        if not self.state.finished:
            self.emitter.emit("status", {"status": status, "reason": reason, "detail": detail})
