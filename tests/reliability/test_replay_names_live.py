"""Real daphne and the real worker (`python -m agentloop worker`): a run whose replay model names a host path
(written to the database directly, past every form) is refused by the worker before it opens that path: the run
ends failed (cannot_start) saying the name is no recording, and the recording at that path is never played."""

import shutil

import pytest

from tests.reliability.live import DEMO_TRACE, wait_until

pytestmark = pytest.mark.timeout(600)


def test_the_worker_refuses_a_replay_that_names_a_host_path_even_when_the_database_holds_one(site, tmp_path):
    # A readable recording outside the worker's recordings folder: the old worker replayed whatever path it got.
    elsewhere = tmp_path / "elsewhere.jsonl"
    shutil.copy(DEMO_TRACE, elsewhere)
    port = site.start_server()
    token = site.worker_token("gpu-a")
    runs = site.django(
        "from runs.models import Task\nfrom runs.services import run_start\n"
        "task = Task.objects.get(name='matmul_cpu')\n"
        "result = [run_start(task=task, model=model, review_mode='auto', budget_steps=50).pk for model in models]",
        models=[f"replay:{elsewhere}", "replay:../../../../etc/passwd"],
    )
    state_dir = tmp_path / "worker"
    site.start_worker(port, token, state_dir)
    finished = ("succeeded", "failed", "stopped")

    def ended() -> list[tuple]:
        return [site.query("select status, status_reason from runs_run where id = ?", (r,))[0] for r in runs]

    assert wait_until(lambda: all(status in finished for status, _ in ended()), 300), site.worker_log(state_dir)
    for status, reason in ended():
        assert status == "failed" and "cannot_start" in reason and "names no recording" in reason, reason
    # Nothing was played: no model turn, no tool call, no evaluation of either run reached the server.
    played = site.query(
        f"select count(*) from runs_step where run_id in ({','.join('?' * len(runs))}) and kind != 'status'",
        tuple(runs),
    )
    assert played == [(0,)]
