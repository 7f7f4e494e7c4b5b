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
import re
import threading
from contextlib import ExitStack

import pytest

from agentloop.models import ModelReply, Usage
from agentloop.worker.client import Worker
from tests.foundation.suite_folders import FAST_KERNEL, SLOW_KERNEL, WRONG_KERNEL, write_suite
from tests.reliability.live import LiveSite, wait_until
from tests.reliability.test_dashboard_bad_input import Browser

pytestmark = pytest.mark.timeout(900)

PROBLEMS = 10
ARMS = ("scripted-correct", "scripted-mixed")
SERVER_KEY = "sk-test-never-sent"  # the form takes these model ids only where a key is set; no model is called
FINISHED = ("succeeded", "failed", "stopped")


def kernel_for(model: str, problem: int) -> str:
    if model == "scripted-correct" or problem < 6:
        return FAST_KERNEL
    return SLOW_KERNEL if problem < 8 else WRONG_KERNEL


class ScriptedModel:
    """Writes its arm's kernel for the run's problem, runs a full evaluation, then says it is done; never asks."""

    def __init__(self, spec: str):
        self.name, self.notify = spec, None

    def skip_played(self, events):
        pass

    def query(self, system, messages, tools, purpose):
        usage = Usage(tokens_in=1000, tokens_out=50, cost_usd=0.002)
        if not tools:  # a question selection at a decision point
            return ModelReply([{"type": "text", "text": "QUESTION: none\nREASON: none"}], "end_turn", self.name, usage)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        problem = int(re.search(r"Task: suite_p(\d\d)", json.dumps(messages[0])).group(1))
        calls = [
            ("editor", {"command": "create", "path": "kernel.cpp", "file_text": kernel_for(self.name, problem)}),
            ("evaluate", {"scenarios": "full"}),
        ]
        if turn >= len(calls):
            return ModelReply([{"type": "text", "text": "done"}], "end_turn", self.name, usage)
        name, tool_input = calls[turn]
        block = {"type": "tool_use", "id": f"call-{turn}", "name": name, "input": tool_input}
        return ModelReply([block], "tool_use", self.name, usage)


@pytest.fixture
def suite_site(tmp_path, monkeypatch):
    suite = write_suite(tmp_path / "kb_cpu", imported=PROBLEMS, refused=1, check_failed=1)
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(suite))  # the server's commands, the server and the workers below
    site = LiveSite(tmp_path / "site").setup()
    try:
        yield site
    finally:
        site.close()


def serve_workers(stack: ExitStack, site, port: int, names) -> None:
    for name in names:
        worker = Worker(
            server=f"ws://127.0.0.1:{port}",
            token=site.worker_token(name),
            gpus=[0],
            state_dir=site.folder / name,
            use_bwrap=False,
            targets=["cpu"],
            model_factory=lambda spec, settings: ScriptedModel(spec),
        )
        thread = threading.Thread(target=worker.serve, daemon=True)
        thread.start()
        stack.callback(thread.join, 30)
        stack.callback(worker.stop.set)


def _json(value):
    """A JSON column as read: text on SQLite, already parsed on PostgreSQL."""
    return json.loads(value) if isinstance(value, str) else value


def verified_by_rows(site, run_id: int, full_ids: list[str]) -> tuple[bool, float | None]:
    """(correct, best speed-up over eager) of a run, from its stored rows: an evaluation counts when its status
    is correct, it ran every scenario of the task's full set, and each scenario it ran is correct."""
    correct, best = False, None
    for evaluation_id, status, geomean in site.query(
        "select id, status, geomean from runs_evaluation where run_id = ?", (run_id,)
    ):
        scenarios = site.query(
            "select scenario_id, correct from runs_scenarioresult where evaluation_id = ?", (evaluation_id,)
        )
        if status != "correct" or not set(full_ids) <= {s for s, _ in scenarios} or not all(ok for _, ok in scenarios):
            continue
        correct = True
        eager = (_json(geomean).get("eager") or {}).get("speedup")
        if eager is not None:
            best = eager if best is None else max(best, eager)
    return correct, best


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
    form = {
        "model": ARMS[0],
        "review_mode": "auto",
        "setting": "model",
        "values": ",".join(ARMS),
        "budget_steps": "8",
        "budget_evaluations": "1",
    }
    status, page = browser.post_form(f"/suites/{suite_id}/study/", form)
    assert status == 200 and "Suite study" in page, page[-2000:]
    ((study_id,),) = site.query("select id from runs_suitestudy")
    runs = site.query(
        "select r.id, r.model, t.name, t.scenario_ids from runs_run r join runs_study s on s.id = r.study_id"
        " join runs_task t on t.id = r.task_id where s.suite_study_id = ?",
        (study_id,),
    )
    assert len(runs) == 2 * PROBLEMS

    with ExitStack() as stack:
        serve_workers(stack, site, port, ["cpu-a", "cpu-b"])
        ids = tuple(r[0] for r in runs)

        def all_finished():
            marks = ",".join("?" * len(ids))
            return site.query(f"select count(*) from runs_run where id in ({marks}) and status in {FINISHED}", ids) == [
                (len(ids),)
            ]

        assert wait_until(all_finished, 600, interval=1.0), site.server_log(port)

    # The queue handed the runs to both workers that serve the target.
    hosts = site.query("select distinct w.name from runs_run r join runs_workerhost w on w.id = r.worker_id")
    assert sorted(h for (h,) in hosts) == ["cpu-a", "cpu-b"]

    status, body = browser.get(f"/suites/studies/{study_id}/scoreboard.json")
    assert status == 200
    board = json.loads(body)
    expected = {}
    for run_id, model, _task, scenario_ids in runs:
        correct, eager = verified_by_rows(site, run_id, _json(scenario_ids))
        expected.setdefault(model, []).append((correct, eager))
    for arm in board["arms"]:
        rows = expected[arm["arm"]]
        by_rows = [
            sum(1 for correct, eager in rows if correct and (p == 0 or (eager is not None and eager > p)))
            for p in board["thresholds"]
        ]
        assert [f["fast"] for f in arm["fast_p"]] == by_rows, arm
        assert all(f["of"] == PROBLEMS for f in arm["fast_p"])
    # What the scripted arms were built to reach (correctness is exact; the speed-ups are far from 1, 1.5 and 2).
    fast = {arm["arm"]: [f["fast"] for f in arm["fast_p"]] for arm in board["arms"]}
    assert fast == {"scripted-correct": [10, 10, 10, 10], "scripted-mixed": [8, 6, 6, 6]}, board
    status, page = browser.get(f"/suites/studies/{study_id}/")
    assert status == 200 and 'data-fast="8" data-of="10"' in page
