"""Which targets a worker announces (agentloop/worker/targets.py): cpu always, cuda-sm90 only where nvidia-smi
reports compute capability 9.0 on every offered GPU, fewer on the operator's word, more only when forced and
said so in the log; and the hello carries them."""

import logging
import subprocess

import pytest

from agentloop.cli import _parser
from agentloop.errors import ConfigError
from agentloop.worker.client import Worker
from agentloop.worker.targets import KNOWN_TARGETS, NVIDIA_SMI, choose_targets, detect_targets
from tests.agentloop.fake_server import FakeServer
from tests.agentloop.test_worker import TOKEN, serving, wait_for


class FakeSmi:
    """subprocess.run as nvidia-smi would answer it; records what was run."""

    def __init__(self, stdout="", returncode=0, raises=None, stderr=""):
        self.stdout, self.returncode, self.raises, self.stderr = stdout, returncode, raises, stderr
        self.calls = []

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        if self.raises is not None:
            raise self.raises
        return subprocess.CompletedProcess(argv, self.returncode, self.stdout, self.stderr)


def test_two_hopper_gpus_serve_cuda_sm90_and_cpu_and_nvidia_smi_is_asked_without_torch():
    smi = FakeSmi("0, 9.0\n1, 9.0\n")
    found = detect_targets([0, 1], run=smi)
    assert found.targets == ("cpu", "cuda-sm90") and "gpu 0, gpu 1" in found.why
    argv, kwargs = smi.calls[0]
    assert argv == NVIDIA_SMI and "--query-gpu=index,compute_cap" in argv and kwargs["timeout"] > 0


@pytest.mark.parametrize(
    ("smi", "gpus", "why"),
    [
        (FakeSmi(raises=FileNotFoundError("nvidia-smi")), [0], "no nvidia-smi on PATH"),
        (FakeSmi(raises=subprocess.TimeoutExpired("nvidia-smi", 20)), [0], "nvidia-smi failed"),
        (FakeSmi(returncode=9, stderr="NVIDIA-SMI has failed: no driver\n"), [0], "exited 9 (NVIDIA-SMI has failed"),
        (FakeSmi("0, 8.0\n"), [0], "gpu 0: 8.0"),  # an A100
        (FakeSmi("0, 9.0\n1, 8.9\n"), [0, 1], "gpu 1: 8.9"),  # one older GPU among the offered ones
        (FakeSmi("0, 9.0\n"), [0, 1], "lists no GPU 1"),
        (FakeSmi("garbage\n"), [0], "lists no GPU 0"),
        (FakeSmi("0, 9.0\n"), [], "no GPU offered"),
    ],
)
def test_without_hopper_gpus_for_every_offered_index_only_cpu_is_served(smi, gpus, why):
    found = detect_targets(gpus, run=smi)
    assert found.targets == ("cpu",) and why in found.why


def test_a_gpu_not_offered_does_not_count():
    # GPU 1 is an H200 but the worker offers only GPU 0, an A100: runs would go to GPU 0.
    assert detect_targets([0], run=FakeSmi("0, 8.0\n1, 9.0\n")).targets == ("cpu",)
    assert detect_targets([1], run=FakeSmi("0, 8.0\n1, 9.0\n")).targets == ("cpu", "cuda-sm90")


def test_the_operator_may_serve_fewer_than_detected():
    assert choose_targets([0], "cpu", run=FakeSmi("0, 9.0\n")) == ["cpu"]
    assert choose_targets([0], "cuda-sm90", run=FakeSmi("0, 9.0\n")) == ["cuda-sm90"]
    assert choose_targets([0], None, run=FakeSmi("0, 9.0\n")) == ["cpu", "cuda-sm90"]


def test_more_than_detected_is_refused_unless_forced_and_forcing_says_so_in_the_log(caplog):
    with pytest.raises(ConfigError, match="not found to serve cuda-sm90.*--force-targets"):
        choose_targets([0], "cpu,cuda-sm90", run=FakeSmi(raises=FileNotFoundError()))
    caplog.set_level(logging.INFO, logger="agentloop.worker")
    chosen = choose_targets([0], "cpu,cuda-sm90", force=True, run=FakeSmi(raises=FileNotFoundError()))
    assert chosen == ["cpu", "cuda-sm90"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("serving cuda-sm90 on the operator's word (--force-targets)" in w for w in warnings), warnings


@pytest.mark.parametrize(("text", "problem"), [("cpu,rocm", "unknown target"), (" , ", "no target named")])
def test_a_target_list_that_names_nothing_known_is_refused(text, problem):
    with pytest.raises(ConfigError, match=problem):
        choose_targets([0], text, run=FakeSmi("0, 9.0\n"))


def test_the_command_line_and_the_environment_give_the_override(monkeypatch):
    base = ["worker", "--server", "ws://127.0.0.1:1"]
    assert _parser().parse_args(base).targets is None
    args = _parser().parse_args([*base, "--targets", "cpu", "--force-targets"])
    assert (args.targets, args.force_targets) == ("cpu", True)
    monkeypatch.setenv("KSEEK_WORKER_TARGETS", "cpu")
    assert _parser().parse_args(base).targets == "cpu"


def test_the_workers_targets_are_the_dashboards_and_the_harnesss():
    from gpu_harness.taskspec import TARGETS
    from runs.models import Target

    assert set(KNOWN_TARGETS) == set(Target.values) == set(TARGETS)


def test_the_hello_announces_the_targets_and_the_server_reads_them_whole(tmp_path, monkeypatch):
    from runs.services import hello_targets

    monkeypatch.setattr(subprocess, "run", FakeSmi("0, 9.0\n"))  # detection, when the worker is given no list
    assert Worker(server="ws://127.0.0.1:1", token=TOKEN, gpus=[0], state_dir=tmp_path / "a").targets == [
        "cpu",
        "cuda-sm90",
    ]
    with FakeServer(TOKEN, []) as server:
        worker = Worker(server=server.url, token=TOKEN, gpus=[0], state_dir=tmp_path / "b", targets=["cpu"])
        thread = serving(worker)
        try:
            assert wait_for(lambda: len(server.hellos) == 1, 30)
        finally:
            worker.stop.set()
            thread.join(10)
    hello = server.hellos[0]
    assert hello["targets"] == ["cpu"]
    assert hello_targets(hello["targets"]) == (["cpu"], None)
