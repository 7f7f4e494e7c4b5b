"""Shared pieces for the agent-loop tests: a run built around the real `anthropic` client and a local
Messages-API server, and an evaluator that returns scripted verdicts in the harness's own result type."""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentloop.agent import Agent, Host, Oversight
from agentloop.config import Budgets, Goal, RunConfig
from agentloop.models.anthropic_backend import AnthropicModel
from agentloop.sandbox import Sandbox
from agentloop.trace import TraceWriter
from gpu_harness import EvalResult, ScenarioOutcome, get_task

NAIVE = (Path(__file__).resolve().parents[2] / "tasks" / "matmul_cpu" / "naive.cpp").read_text()
TASK = get_task("matmul_cpu")
FULL_IDS = [s.id for s in TASK.scenarios()]
QUICK_IDS = list(TASK.quick_ids())


def verdict(kernel_path, scenarios, speedup: float | None, status: str = "correct") -> dict:
    """A verdict as gpu_harness.EvalResult.to_dict() shapes it: every scenario at `speedup` over naive."""
    ids = FULL_IDS if scenarios == "full" else QUICK_IDS
    source = Path(kernel_path).read_text()
    outcomes = [
        ScenarioOutcome(i, {}, correct=status == "correct", time_ms=1.0, speedup={"naive": speedup, "numpy": speedup})
        for i in ids
    ]
    geo = (
        {}
        if status != "correct"
        else {"naive": {"speedup": speedup, "count": len(ids)}, "numpy": {"speedup": speedup, "count": len(ids)}}
    )
    return EvalResult(
        task="matmul_cpu",
        kernel_sha256=hashlib.sha256(source.encode()).hexdigest(),
        kernel_source=source,
        status=status,
        reason=None if status == "correct" else "scripted failure",
        host="test",
        scenarios=outcomes,
        geomean=geo,
    ).to_dict()


class ScriptedEvaluator:
    """Verdicts by rule: `speedups` maps a marker string found in the kernel source to (status, speedup);
    the first marker found wins; `default` otherwise. Records every call."""

    def __init__(self, speedups: dict[str, tuple[str, float | None]] | None = None, default=("correct", 1.0)):
        self.speedups = speedups or {}
        self.default = default
        self.calls: list[tuple[str, str]] = []

    def __call__(self, task, kernel_path, scenarios):
        source = Path(kernel_path).read_text()
        self.calls.append((Path(kernel_path).name, scenarios))
        status, speedup = next((v for marker, v in self.speedups.items() if marker in source), self.default)
        return verdict(kernel_path, scenarios, speedup, status)


def make_config(
    goal_speedup=2.0, budgets=None, review_mode="auto", review_timeout_s=None, kernel=NAIVE, model="claude-sonnet-4-6"
):
    return RunConfig(
        task="matmul_cpu",
        goal=Goal("naive", goal_speedup),
        model=model,
        starting_kernel=kernel,
        kernel_filename="kernel.cpp",
        budgets=budgets or Budgets(steps=30),
        review_mode=review_mode,
        review_timeout_s=review_timeout_s,
    )


def anthropic_model(server, stream=True):
    return AnthropicModel(
        "claude-sonnet-4-6",
        settings={"api_key": "sk-test", "base_url": server.url, "stream": stream, "backoff_base_s": 0.01},
    )


def worker_assignment(run_id, **changes) -> dict:
    """An `assign` message's run, as the server sends it to a worker: the CPU task from its naive kernel."""
    run = {
        "id": run_id,
        "task": "matmul_cpu",
        "model": "claude-sonnet-4-6",
        "starting_kernel": NAIVE,
        "starting_kernel_name": "kernel.cpp",
        "goal": {"baseline": "naive", "speedup": 2.0},
        "budgets": {"steps": 2},
        "review_mode": "auto",
        "review_timeout_s": None,
    }
    return {**run, **changes}


def unsandboxed(workspace) -> Host:
    """The tests' host: the workspace, no sandbox (the sandbox's own tests run it), no extra environment."""
    return Host(workspace, Sandbox.choose(unsandboxed=True))


def make_agent(tmp_path, model, config=None, evaluator=None, run_id="t1", extra_sinks=(), **oversight):
    """A new run in tmp_path/ws, its trace in tmp_path/trace.jsonl; `oversight`: Oversight's fields (reviewer,
    inbox, bank, question_stats)."""
    trace = TraceWriter(tmp_path / "trace.jsonl")
    agent = Agent(
        run_id=run_id,
        config=config or make_config(),
        model=model,
        sinks=[trace, *extra_sinks],
        host=unsandboxed(tmp_path / "ws"),
        evaluator=evaluator or ScriptedEvaluator(),
        oversight=Oversight(**oversight),
    )
    return agent, trace


def kinds(events, *only):
    return [e["kind"] for e in events if not only or e["kind"] in only]


def payloads(events, kind):
    return [e["payload"] for e in events if e["kind"] == kind]
