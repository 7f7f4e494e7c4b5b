"""The harness as the agent's `evaluate` starts it, under bubblewrap, on a GPU: its own PID namespace must not cost
the judge its device, its CUDA IPC with the candidate's process, or any of its refusals. And the model's own shell
commands, under bubblewrap too, still reach the run's GPU.

Run on a GPU host with bubblewrap: `python3 -m pytest -m gpu tests/agentloop/test_harness_sandbox_gpu.py`.
"""

from pathlib import Path

import pytest

from agentloop.evaluator import HarnessEvaluator
from agentloop.sandbox import BUBBLEWRAP, Sandbox
from agentloop.tools.shell import ShellTool

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.gpu, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def sandboxed_harness():
    sandbox = Sandbox.choose()
    if sandbox.mode != BUBBLEWRAP:
        pytest.fail(f"this GPU host has no working bubblewrap: {sandbox.why}")
    evaluator = HarnessEvaluator(timeout_s=600, sandbox=sandbox, extra_env={"CUDA_VISIBLE_DEVICES": "0"})
    yield evaluator
    evaluator.close()


@pytest.mark.parametrize("kernel", ["tasks/attention_fwd/naive.cu", "kernels/attention_fwd_sm90/attention_fwd_sm90.cu"])
def test_a_correct_kernel_is_judged_correct_on_every_quick_scenario_under_bubblewrap(sandboxed_harness, kernel):
    result = sandboxed_harness("attention_fwd", ROOT / kernel, "quick")
    assert result["status"] == "correct", result.get("reason")
    assert result["scenarios"] and all(s["correct"] for s in result["scenarios"])


def test_a_cheat_is_still_refused_for_its_reason_under_bubblewrap(sandboxed_harness):
    result = sandboxed_harness("attention_fwd", ROOT / "tasks/attention_fwd/cheats/other_stream.cu", "quick")
    assert result["status"] == "error" and "cudaStreamCreateWithFlags" in result["reason"]


def test_a_shell_command_under_bubblewrap_runs_on_the_runs_gpu(tmp_path):
    sandbox = Sandbox.choose()
    assert sandbox.mode == BUBBLEWRAP, sandbox.why
    shell = ShellTool(tmp_path, sandbox=sandbox, extra_env={"CUDA_VISIBLE_DEVICES": "0"})
    result = shell(
        {
            "command": "python3 -c 'import torch; print(torch.cuda.device_count(), torch.ones(4, device=\"cuda\").sum().item())'",
            "timeout_s": 120,
        }
    )
    assert not result.is_error and "1 4.0" in result.output, result.output
