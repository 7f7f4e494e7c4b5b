"""The loop's evaluator keeps one harness process for a run (gpu_harness/service.py), and survives losing it."""

import os
import shutil
import signal

import pytest

from agentloop.evaluator import EvaluatorError, HarnessEvaluator
from tests.agentloop.helpers import NAIVE

# The evaluator runs its harness under the run's sandbox: bubblewrap, as an agent's runs do by default.
pytestmark = [pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++"), pytest.mark.sandbox]
SMALL = ["m7_n13_k5"]


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "kernel.cpp"
    path.write_text(NAIVE)
    return path


def test_evaluations_of_a_run_share_one_harness_process_and_report_progress(kernel):
    lines = []
    evaluator = HarnessEvaluator(timeout_s=300, progress=lines.append)
    try:
        first = evaluator("matmul_cpu", kernel, SMALL)
        pid = evaluator._proc.pid
        second = evaluator("matmul_cpu", kernel, SMALL)
        assert evaluator._proc.pid == pid
    finally:
        evaluator.close()
    for result in (first, second):
        assert result["status"] == "correct" and result["kernel_path"] == str(kernel)
    assert first["seed"] != second["seed"]  # a fresh seed every time
    assert any(line.startswith("building") for line in lines)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # close() ended it


def test_a_harness_that_died_is_started_again_on_the_next_call(kernel):
    evaluator = HarnessEvaluator(timeout_s=300)
    try:
        evaluator("matmul_cpu", kernel, SMALL)
        os.killpg(evaluator._proc.pid, signal.SIGKILL)
        evaluator._proc.wait()
        again = evaluator("matmul_cpu", kernel, SMALL)
        assert again["status"] == "correct"
    finally:
        evaluator.close()


def test_a_bad_request_is_an_evaluator_error_and_the_harness_stays(kernel):
    evaluator = HarnessEvaluator(timeout_s=300)
    try:
        with pytest.raises(EvaluatorError, match="no_such_scenario"):
            evaluator("matmul_cpu", kernel, ["no_such_scenario"])
        pid = evaluator._proc.pid
        assert evaluator("matmul_cpu", kernel, SMALL)["status"] == "correct"
        assert evaluator._proc.pid == pid
    finally:
        evaluator.close()


def test_the_evaluator_snapshots_no_link_and_no_fifo_whoever_calls_it(tmp_path):
    """Its snapshot is read as the loop reads a kernel (agentloop/kernel_file.py): a caller that hands it a link to
    the agent's environment, or a FIFO, gets an error, not the environment judged or a call that never returns."""
    (tmp_path / "linked.cpp").symlink_to("/proc/self/environ")
    os.mkfifo(tmp_path / "fifo.cpp")
    evaluator = HarnessEvaluator(timeout_s=300)
    try:
        with pytest.raises(EvaluatorError, match="linked.cpp is a symbolic link"):
            evaluator("matmul_cpu", tmp_path / "linked.cpp", SMALL)
        with pytest.raises(EvaluatorError, match="fifo.cpp is not a regular file"):
            evaluator("matmul_cpu", tmp_path / "fifo.cpp", SMALL)
    finally:
        evaluator.close()
