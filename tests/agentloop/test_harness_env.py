"""A kernel evaluated through the agent's `evaluate` tool runs in a process that holds none of the worker's secrets.

The harness passes its own environment on to the candidate's process (gpu_harness/runner.py), so the loop must
start the harness from a scrubbed one. These tests read the environment of the very process that loads the
kernel (/proc/PID/environ of every `gpu_harness.child` descended from this test) while the real harness runs.
The control test shows the observation works: the harness started with the secrets hands them to the kernel's
process. Only environments are checked, never timing verdicts, so a loaded machine cannot fail these.
"""
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentloop.agent import Agent
from agentloop.config import Budgets
from agentloop.evaluator import HarnessEvaluator
from agentloop.trace import TraceWriter, read_trace
from tests.agentloop.helpers import NAIVE, anthropic_model, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, tool_use

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")

REPO = Path(__file__).resolve().parents[2]
SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-do-not-leak-1234", "KSEEK_WORKER_TOKEN": "kst_do_not_leak_5678"}
SCENARIO = ["m64_n64_k64"]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _descends_from_us(pid: int) -> bool:
    me, seen = os.getpid(), 0
    while pid and pid > 1 and seen < 64:
        pid, seen = _parent(pid), seen + 1
        if pid == me:
            return True
    return False


class ChildEnvironments:
    """Collects the environment of every harness child (the process that loads the kernel) started below this
    test process, while it runs."""

    def __init__(self, marker: bytes = b"gpu_harness.child"):
        self.marker = marker
        self.seen: dict[int, dict[str, str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self._stop.is_set():
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in self.seen:
                    continue
                pid = int(entry)
                try:
                    if self.marker not in Path(f"/proc/{pid}/cmdline").read_bytes():
                        continue
                    raw = Path(f"/proc/{pid}/environ").read_bytes()
                except OSError:
                    continue
                if raw and _descends_from_us(pid):
                    self.seen[pid] = dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0")
                                          if "=" in item)
            self._stop.wait(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def leaked(environments: dict[int, dict[str, str]]) -> set[str]:
    return {name for env in environments.values() for name, value in env.items()
            if name in SECRETS or value in SECRETS.values()}


def test_a_kernel_evaluated_through_the_evaluate_tool_cannot_see_the_api_key_or_the_worker_token(tmp_path,
                                                                                                 monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    turns = [Reply([tool_use("evaluate", {"scenarios": "quick"})])]
    with MessagesServer(Script(turns)) as server, ChildEnvironments() as children:
        trace = TraceWriter(tmp_path / "trace.jsonl")
        # The real harness (the loop's default evaluator), as a worker runs it: with the run's GPU in extra_env.
        agent = Agent(run_id="env", config=make_config(budgets=Budgets(steps=1)), workspace=tmp_path / "ws",
                      model=anthropic_model(server), sinks=[trace], use_bwrap=False,
                      extra_env={"CUDA_VISIBLE_DEVICES": "0"})
        agent.run()
        trace.close()
    evaluation = payloads(read_trace(tmp_path / "trace.jsonl"), "evaluation")[0]
    assert evaluation["result"]["status"] in ("correct", "incorrect"), evaluation["result"].get("reason")
    assert children.seen, "no harness child process was observed"
    assert leaked(children.seen) == set()
    assert all(env.get("CUDA_VISIBLE_DEVICES") == "0" for env in children.seen.values())


def test_control_the_harness_started_with_secrets_hands_them_to_the_kernels_process(tmp_path):
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text(NAIVE)
    env = {**os.environ, **SECRETS, "PYTHONPATH": str(REPO)}
    code = ("import sys; from gpu_harness import evaluate; "
            f"print(evaluate('matmul_cpu', sys.argv[1], scenarios={SCENARIO!r}).status)")
    with ChildEnvironments() as children:
        proc = subprocess.run([sys.executable, "-c", code, str(kernel)], env=env, capture_output=True, text=True,
                              timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert children.seen and leaked(children.seen) == set(SECRETS)


def test_secrets_are_refused_in_the_harness_extra_environment():
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY, KSEEK_WORKER_TOKEN"):
        HarnessEvaluator(extra_env={"CUDA_VISIBLE_DEVICES": "1", **SECRETS})
