"""One worker, two GPUs (issue 21, the CPU side): a worker started with gpus [0, 1] holds two queued runs at
once, each on its own GPU, and what each run starts says so: its shell commands and its harness process see
`CUDA_VISIBLE_DEVICES` of that GPU only. A third queued run waits until a GPU frees, then takes the freed one.

The real Worker against the stand-in server (tests/agentloop/fake_server.py), with the real Messages-API client
against a local server whose script holds each run on a shell command until the test releases that run's GPU;
the harness is a stand-in started by HarnessEvaluator as the real one is (tests/agentloop/gpu_harness_standin.py)
and reports the environment it was started with."""

import re
import sys
import threading
import time
from pathlib import Path

from agentloop.evaluator import HarnessEvaluator
from agentloop.worker.client import Worker
from tests.agentloop.fake_server import FakeServer
from tests.agentloop.helpers import anthropic_model, worker_assignment
from tests.agentloop.messages_api import MessagesServer, Reply, tool_use
from tests.agentloop.test_worker import TOKEN

REPO = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).with_name("gpu_harness_standin.py")


def turns_taken(request: dict) -> int:
    return sum(
        1
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )


def script(gates: Path):
    """Every run: print its GPU, evaluate once, then wait in a shell command until gates/gpu<N> exists (N: the
    run's GPU) — the run holds its GPU until the test releases it. Three steps: the step budget ends the run."""

    def respond(request: dict) -> Reply:
        taken = turns_taken(request)
        if taken == 0:
            return Reply([tool_use("shell", {"command": "echo GPU=$CUDA_VISIBLE_DEVICES"})])
        if taken == 1:
            return Reply([tool_use("evaluate", {"scenarios": "quick"})])
        wait = f"while [ ! -e {gates}/gpu$CUDA_VISIBLE_DEVICES ]; do sleep 0.05; done; echo released"
        return Reply([tool_use("shell", {"command": wait})])

    return respond


def wait_for(condition, timeout=30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


def shell_gpu(events) -> str | None:
    """The GPU the run's first shell command printed."""
    for event in events:
        found = re.search(r"GPU=(\d*)", str(event["payload"])) if event["kind"] == "tool_result" else None
        if found:
            return found.group(1)
    return None


def harness_gpus(events) -> list:
    return [e["payload"]["result"].get("cuda_visible_devices") for e in events if e["kind"] == "evaluation"]


def test_a_worker_with_two_gpus_runs_two_at_once_each_on_its_own_gpu_and_a_third_waits(tmp_path, monkeypatch):
    monkeypatch.setattr(HarnessEvaluator, "service_argv", [sys.executable, str(STAND_IN)])
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    gates = tmp_path / "gates"
    gates.mkdir()
    with (
        MessagesServer(script(gates)) as api,
        FakeServer(TOKEN, [worker_assignment(i, budgets={"steps": 3}) for i in (1, 2, 3)]) as server,
    ):
        worker = Worker(
            server=server.url,
            token=TOKEN,
            gpus=[0, 1],
            state_dir=tmp_path / "state",
            use_bwrap=False,
            model_factory=lambda spec, settings: anthropic_model(api),
        )
        serving = threading.Thread(target=worker.serve, daemon=True)
        serving.start()
        try:
            # Both runs are held at once: each has evaluated and waits on its gate, and neither has finished.
            assert wait_for(lambda: all(harness_gpus(server.events(r)) for r in (1, 2))), server.events(1)[-3:]
            assert not server.finished(1) and not server.finished(2)
            gpus = {r: shell_gpu(server.events(r)) for r in (1, 2)}
            assert sorted(gpus.values()) == ["0", "1"], gpus
            for run in (1, 2):  # the harness process of each run is pinned to the run's own GPU
                assert harness_gpus(server.events(run)) == [gpus[run]]
            assert server.hellos[0]["gpus"] == ["gpu 0", "gpu 1"]
            # The third waits: no GPU is free, so the worker has not claimed it.
            time.sleep(1.0)
            assert server.events(3) == [] and [r["id"] for r in server.queue] == [3]

            # Run 1 ends; its GPU goes to run 3.
            (gates / f"gpu{gpus[1]}").touch()
            assert wait_for(lambda: server.finished(1))
            assert wait_for(lambda: harness_gpus(server.events(3)))
            assert shell_gpu(server.events(3)) == gpus[1]
            assert harness_gpus(server.events(3)) == [gpus[1]]
            assert not server.finished(2)  # run 2 still holds the other GPU

            (gates / f"gpu{gpus[2]}").touch()
            assert wait_for(lambda: server.finished(2) and server.finished(3))
        finally:
            (gates / "gpu0").touch()
            (gates / "gpu1").touch()
            worker.stop.set()
            serving.join(10)
