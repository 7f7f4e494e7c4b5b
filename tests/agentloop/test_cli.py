"""`python -m agentloop run` on the CPU task with the replay model: the whole system offline, real harness."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.trace import read_trace

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"


def agentloop(*args, cwd, env_extra=None, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update({"PYTHONPATH": str(REPO), "KSEEK_AGENT_RUNS": str(cwd / "runs"), **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "agentloop", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_demo_replay_runs_offline_with_the_real_harness(tmp_path):
    proc = agentloop("run", "--task", "matmul_cpu", "--model", f"replay:{DEMO}", "--trace",
                     str(tmp_path / "trace.jsonl"), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = read_trace(tmp_path / "trace.jsonl")
    recorded = read_trace(DEMO)
    assert [e["kind"] for e in events] == [e["kind"] for e in recorded]
    evaluations = [e["payload"] for e in events if e["kind"] == "evaluation"]
    # Measured now, by the harness, not copied from the recording.
    assert evaluations[-1]["purpose"] == "goal_check" and evaluations[-1]["goal_met"]
    assert evaluations[-1]["result"]["started_at"] != [e["payload"] for e in recorded
                                                       if e["kind"] == "evaluation"][-1]["result"]["started_at"]
    assert (tmp_path / "workspace" / "kernel.cpp").read_text().startswith("// i-k-j order")
    assert "succeeded (goal_met)" in proc.stderr


def test_bad_arguments_get_a_clear_error_not_a_traceback(tmp_path):
    proc = agentloop("run", "--task", "no_such_task", "--model", f"replay:{DEMO}", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "unknown task 'no_such_task'" in proc.stderr and "Traceback" not in proc.stderr
    proc = agentloop("run", "--model", f"replay:{tmp_path / 'missing.jsonl'}", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "cannot read trace" in proc.stderr
    proc = agentloop("run", "--task", "matmul_cpu", "--model", "claude-sonnet-4-5", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "ANTHROPIC_API_KEY" in proc.stderr
