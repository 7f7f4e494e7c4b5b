"""A study over a suite, end to end (issue 38: "a two-arm study over a suite of at least 10 problems runs end to
end ... through the real worker and harness, and its scoreboard shows fast_p per arm from verified
evaluations").

A suite folder of 10 CPU problems (tests/foundation/suite_folders.py: real task folders, and the manifest the
KernelBench importer would write, with a refused and a failed problem besides; importing 10 real KernelBench
problems needs torch and minutes) is loaded by `sync_tasks`; an operator starts a two-arm study of models from
the suite's form on a real daphne; two in-process workers (the real `Worker`: socket, agent loop, the real
harness compiling and timing each kernel) take the 20 runs from the queue, their model a scripted one per arm:
`scripted-correct` writes a correct kernel on every problem, `scripted-mixed` a correct one on 6, a correct but
slow one on 2 and a wrong one on 2. The scoreboard's fast_p per arm must equal what the stored evaluations say,
read here from the database's rows with the rule written out again (full set, correct on every scenario)."""

import json
from contextlib import ExitStack

import pytest

from tests.foundation.suite_folders import FAST_KERNEL, SLOW_KERNEL, WRONG_KERNEL, write_suite
from tests.reliability.live import LiveSite
from tests.reliability.suite_study_helpers import (
    SERVER_KEY,
    check_fast_p_against_rows,
    serve_workers,
    start_suite_study,
    wait_for_runs,
)
from tests.reliability.test_dashboard_bad_input import Browser

pytestmark = pytest.mark.timeout(900)

PROBLEMS = 10
ARMS = ("scripted-correct", "scripted-mixed")


def kernel_for(model: str, problem: int) -> str:
    if model == "scripted-correct" or problem < 6:
        return FAST_KERNEL
    return SLOW_KERNEL if problem < 8 else WRONG_KERNEL


def plan_of(model: str):
    """The arm's plan: write its kernel for the run's problem (suite_pNN), run a full evaluation."""

    def plan(task: str, kernel_file: str):
        kernel = kernel_for(model, int(task.removeprefix("suite_p")))
        return [
            ("editor", {"command": "create", "path": "kernel.cpp", "file_text": kernel}),
            ("evaluate", {"scenarios": "full"}),
        ]

    return plan


@pytest.fixture
def suite_site(tmp_path, monkeypatch):
    suite = write_suite(tmp_path / "kb_cpu", imported=PROBLEMS, refused=1, check_failed=1)
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(suite))  # the server's commands, the server and the workers below
    site = LiveSite(tmp_path / "site").setup()
    try:
        yield site
    finally:
        site.close()


def test_a_two_arm_study_over_a_suite_runs_through_the_worker_and_its_scoreboard_shows_fast_p_per_arm(suite_site):
    site = suite_site
    ((suite_id, name),) = site.query("select id, name from runs_suite")
    assert name == "kb_cpu"
    outcomes = site.query(
        "select outcome, count(*), count(task_id) from runs_suiteproblem group by outcome order by outcome"
    )
    assert outcomes == [("check failed", 1, 0), ("imported", PROBLEMS, PROBLEMS), ("refused", 1, 0)]
    port = site.start_server(ANTHROPIC_API_KEY=SERVER_KEY)
    browser = Browser(site, port)
    status, page = browser.get(f"/suites/{suite_id}/")
    assert status == 200 and "downloads its model from a hub" in page
    study_id, runs = start_suite_study(site, browser, suite_id, ARMS, budget_steps="8", budget_evaluations="1")
    assert len(runs) == 2 * PROBLEMS

    with ExitStack() as stack:
        serve_workers(stack, site, port, ["cpu-a", "cpu-b"], targets=["cpu"], plans={arm: plan_of(arm) for arm in ARMS})
        assert wait_for_runs(site, [r[0] for r in runs], 600), site.server_log(port)

    # The queue handed the runs to both workers that serve the target.
    hosts = site.query("select distinct w.name from runs_run r join runs_workerhost w on w.id = r.worker_id")
    assert sorted(h for (h,) in hosts) == ["cpu-a", "cpu-b"]

    status, body = browser.get(f"/suites/studies/{study_id}/scoreboard.json")
    assert status == 200
    board = json.loads(body)
    check_fast_p_against_rows(site, board, runs, PROBLEMS)
    # What the scripted arms were built to reach (correctness is exact; the speed-ups are far from 1, 1.5 and 2).
    fast = {arm["arm"]: [f["fast"] for f in arm["fast_p"]] for arm in board["arms"]}
    assert fast == {"scripted-correct": [10, 10, 10, 10], "scripted-mixed": [8, 6, 6, 6]}, board
    status, page = browser.get(f"/suites/studies/{study_id}/")
    assert status == 200 and 'data-fast="8" data-of="10"' in page
