"""The whole system on a task that did not exist when the code was written (issue 16: "no code change"):
`python -m gpu_harness task new` writes a folder into a directory named by KSEEK_TASKS_DIR, `sync_tasks` mirrors
it, an operator starts a run on it from the dashboard's start form, and a worker with the real `anthropic`
client (against a local Messages-API server) writes a kernel, evaluates it with the real harness, and the run
streams to the server and finishes."""

import contextlib
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentloop.models.anthropic_backend import AnthropicModel
from agentloop.worker.client import Worker
from tests.agentloop.messages_api import MessagesServer, Reply, text, tool_use
from tests.reliability.live import LiveSite, wait_until
from tests.reliability.test_dashboard_bad_input import Browser

pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[2]
TASK = "scale_add_new"
# What the scaffold's operation asks (out = x * scale + y, float32, row-major), in one pass.
KERNEL = """#include <cstdint>
extern "C" int kseek_scale_add_new(const float* x, const float* y, float* out, float scale, int rows, int cols) {
    if (rows < 0 || cols < 0) return 1;
    const long n = (long)rows * cols;
    for (long i = 0; i < n; ++i) out[i] = x[i] * scale + y[i];
    return 0;
}
"""


@pytest.fixture
def new_task_site(tmp_path, monkeypatch):
    tasks_dir = tmp_path / "team-tasks"
    made = subprocess.run(
        [sys.executable, "-m", "gpu_harness", "task", "new", TASK, "--dir", str(tasks_dir)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    # the server's commands, the server and the in-process worker below all see the team's folder
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(tasks_dir))
    site = LiveSite(tmp_path / "site").setup()
    try:
        yield site
    finally:
        site.close()


def responder(request):
    """The model: writes the kernel, evaluates it, then says it is done; no question at decision points."""
    if not request.get("tools"):
        return Reply([text("QUESTION: none\nREASON: none")])
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:
        return Reply([tool_use("editor", {"command": "create", "path": "kernel.cpp", "file_text": KERNEL})])
    if turn == 1:
        return Reply([tool_use("evaluate", {"scenarios": "full"})])
    return Reply([text("The kernel computes out = x * scale + y in one pass; done.")])


FINISHED = ("succeeded", "failed", "stopped")


@contextlib.contextmanager
def serving_workers(site, port: int, messages_url: str, hosts, *, use_bwrap=False, stream=False):
    """In-process workers, one per (name, targets) of `hosts`, each with the real anthropic client against the
    local Messages-API server; stopped on leaving."""
    workers = []
    try:
        for name, targets in hosts:
            worker = Worker(
                server=f"ws://127.0.0.1:{port}",
                token=site.worker_token(name),
                gpus=[0],
                state_dir=site.folder / name,
                use_bwrap=use_bwrap,
                targets=targets,
                model_factory=lambda spec, settings: AnthropicModel(
                    spec,
                    settings={"api_key": "sk-test", "base_url": messages_url, "stream": stream, "backoff_base_s": 0.01},
                ),
            )
            thread = threading.Thread(target=worker.serve, daemon=True)
            thread.start()
            workers.append((worker, thread))
        yield
    finally:
        for worker, thread in workers:
            worker.stop.set()
            thread.join(30)


# The start form takes an Anthropic model only where the server's environment has a key (runs.model_options): the
# server never calls the model; its workers here call the stand-in Messages server.
SERVER_KEY = "sk-test-never-sent"


def wait_finished(site, port: int, run_id: int) -> None:
    finished = wait_until(
        lambda: site.query("select status from runs_run where id = ?", (run_id,))[0][0] in FINISHED, 600
    )
    assert finished, site.server_log(port)


def test_a_run_on_a_task_folder_made_by_task_new_starts_from_the_dashboard_streams_and_finishes(new_task_site):
    site = new_task_site
    assert site.query("select target, starting_kernel_name from runs_task where name = ?", (TASK,)) == [
        ("cpu", "kernel.cpp")
    ]
    port = site.start_server(ANTHROPIC_API_KEY=SERVER_KEY)
    browser = Browser(site, port)
    status, page = browser.get(f"/runs/start/?task={TASK}")
    assert status == 200 and TASK in page
    status, page = browser.post_form(
        "/runs/start/",
        {"task": TASK, "model": "claude-sonnet-4-6", "review_mode": "auto", "budget_steps": "12"},
    )
    assert status == 200, page[-2000:]
    (run_id,) = [r[0] for r in site.query("select id from runs_run")]
    with MessagesServer(responder) as messages:
        # the sandboxed harness (where bubblewrap works) finds the team's folder too
        with serving_workers(
            site, port, messages.url, [("team-box", ["cpu"])], use_bwrap=shutil.which("bwrap") is not None, stream=True
        ):
            wait_finished(site, port, run_id)

    kinds = [k for (k,) in site.query("select kind from runs_step where run_id = ? order by seq", (run_id,))]
    assert kinds[0] == "status" and "tool_call" in kinds and "evaluation" in kinds and kinds[-1] == "status"
    # the evaluation the agent asked for ran the real harness on the new task's every scenario, and it was right
    rows = [
        (status, len(scenarios), sum(1 for s in scenarios if s.get("correct")))
        for status, verdict in site.query(
            "select status, verdict from runs_evaluation where run_id = ? order by id", (run_id,)
        )
        for scenarios in [(json.loads(verdict) if isinstance(verdict, str) else verdict).get("scenarios") or []]
    ]
    assert rows and rows[0][1] == 10 and rows[0][2] == 10, rows
    assert messages.requests, "the worker never called the model"
    # it ends at its goal, or (a one-pass loop against numpy on a loaded machine) at its step budget: not on an error
    ((status, reason),) = site.query("select status, status_reason from runs_run where id = ?", (run_id,))
    assert status == "succeeded" or reason.startswith("budget_steps"), (status, reason)


def gpu_task_responder(request):
    """The model on softmax_rows: writes a kernel (the task's own simple one), evaluates it, then is done."""
    if not request.get("tools"):
        return Reply([text("QUESTION: none\nREASON: none")])
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:
        source = (ROOT / "tasks" / "softmax_rows" / "naive.cu").read_text()
        return Reply([tool_use("editor", {"command": "create", "path": "naive.cu", "file_text": source})])
    if turn == 1:
        return Reply([tool_use("evaluate", {"scenarios": "quick"})])
    return Reply([text("done")])


def test_a_run_on_a_gpu_task_folder_reaches_a_worker_that_serves_cuda_and_finishes(site):
    """softmax_rows, a folder task of the cuda-sm90 target, started from the dashboard: only a worker that
    announces cuda-sm90 gets it; here (no GPU) its evaluation builds the kernel and says it could not run it."""
    port = site.start_server(ANTHROPIC_API_KEY=SERVER_KEY)
    browser = Browser(site, port)
    status, page = browser.post_form(
        "/runs/start/",
        {"task": "softmax_rows", "model": "claude-sonnet-4-6", "review_mode": "auto", "budget_steps": "6"},
    )
    assert status == 200, page[-2000:]
    (run_id,) = [r[0] for r in site.query("select id from runs_run")]
    with MessagesServer(gpu_task_responder) as messages:
        hosts = [("cpu-box", ["cpu"]), ("gpu-box", ["cpu", "cuda-sm90"])]
        with serving_workers(site, port, messages.url, hosts):
            wait_finished(site, port, run_id)
    ((host,),) = site.query(
        "select w.name from runs_run r join runs_workerhost w on w.id = r.worker_id where r.id = ?", (run_id,)
    )
    assert host == "gpu-box"
    ((status, verdict),) = site.query("select status, verdict from runs_evaluation where run_id = ?", (run_id,))
    reason = (json.loads(verdict) if isinstance(verdict, str) else verdict).get("reason") or ""
    assert status == "compiled" and "no CUDA GPU here" in reason, (status, reason)
