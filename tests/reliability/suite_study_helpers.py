"""What the live suite-study tests share (tests/reliability/test_suite_study_live.py on the CPU,
test_suite_study_gpu.py on an H200): a scripted model per arm, real in-process workers, starting a study from the
suite's form, waiting for its runs, and fast_p read back from the database's rows with the scoreboard's rule
written out again (runs/task_pages/scoreboard.py), so that the scoreboard is checked against the stored evaluations rather
than against itself."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from contextlib import ExitStack

from agentloop.models import ModelReply, Usage
from agentloop.worker.client import Worker
from gpu_harness import figures
from tests.reliability.live import wait_until

SERVER_KEY = "sk-test-never-sent"  # the form takes these model ids only where a key is set; no model is called
FINISHED = ("succeeded", "failed", "stopped")

# A model's plan for one run: (the task's name, the run's kernel file) -> the tool calls it makes, in order, before
# it says it is done.
Plan = Callable[[str, str], list[tuple[str, dict]]]


class ScriptedModel:
    """Makes its plan's tool calls for the run's task, one a turn, then says it is done; never asks a question."""

    def __init__(self, spec: str, plan: Plan):
        self.name, self.plan, self.notify = spec, plan, None

    def skip_played(self, events):
        pass

    def query(self, system, messages, tools, purpose):
        usage = Usage(tokens_in=1000, tokens_out=50, cost_usd=0.002)
        if not tools:  # a question selection at a decision point
            return ModelReply([{"type": "text", "text": "QUESTION: none\nREASON: none"}], "end_turn", self.name, usage)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        prompt = json.dumps(messages[0])
        task = re.search(r"Task: (\w+)", prompt).group(1)
        kernel_file = re.search(r"Your kernel file is `([^`]+)`", prompt).group(1)
        calls = self.plan(task, kernel_file)
        if turn >= len(calls):
            return ModelReply([{"type": "text", "text": "done"}], "end_turn", self.name, usage)
        name, tool_input = calls[turn]
        block = {"type": "tool_use", "id": f"call-{turn}", "name": name, "input": tool_input}
        return ModelReply([block], "tool_use", self.name, usage)


def serve_workers(stack: ExitStack, site, port: int, names, *, targets: list[str], plans: dict[str, Plan]) -> None:
    """Start one real `Worker` per name in a thread of this process (stopped and joined when `stack` closes),
    each serving `targets` on GPU 0, its model for a run the scripted one of the run's arm (`plans[model id]`)."""
    for name in names:
        worker = Worker(
            server=f"ws://127.0.0.1:{port}",
            token=site.worker_token(name),
            gpus=[0],
            state_dir=site.folder / name,
            use_bwrap=False,
            targets=targets,
            model_factory=lambda spec, settings: ScriptedModel(spec, plans[spec]),
        )
        thread = threading.Thread(target=worker.serve, daemon=True)
        thread.start()
        stack.callback(thread.join, 30)
        stack.callback(worker.stop.set)


def start_suite_study(site, browser, suite_id: int, arms: tuple[str, ...], **budgets: str) -> tuple[int, list[tuple]]:
    """Start a study of `arms` (model ids) over the suite from its form, as an operator does; returns the suite
    study's id and its runs as (run id, model, task name, the task's full scenario ids as stored)."""
    form = {"model": arms[0], "review_mode": "auto", "setting": "model", "values": ",".join(arms), **budgets}
    status, page = browser.post_form(f"/suites/{suite_id}/study/", form)
    assert status == 200 and "Suite study" in page, page[-2000:]
    ((study_id,),) = site.query("select id from runs_suitestudy")
    runs = site.query(
        "select r.id, r.model, t.name, t.scenario_ids from runs_run r join runs_study s on s.id = r.study_id"
        " join runs_task t on t.id = r.task_id where s.suite_study_id = ? order by r.id",
        (study_id,),
    )
    return study_id, runs


def all_finished(site, run_ids) -> bool:
    ids = tuple(run_ids)
    marks = ",".join("?" * len(ids))
    done = site.query(f"select count(*) from runs_run where id in ({marks}) and status in {FINISHED}", ids)
    return done == [(len(ids),)]


def wait_for_runs(site, run_ids, timeout: float) -> bool:
    return bool(wait_until(lambda: all_finished(site, run_ids), timeout, interval=1.0))


def _json(value):
    """A JSON column as read: text on SQLite, already parsed on PostgreSQL."""
    return json.loads(value) if isinstance(value, str) else value


def measured_by_rows(site, run_id: int, full_ids: list[str]) -> tuple[bool, float | None, float | None]:
    """(correct, best speed-up over eager, the low end of that speed-up's 95% interval) of a run, from its stored
    rows: an evaluation counts when its status is correct, it ran every scenario of the task's full set, and each
    scenario it ran is correct. The interval is the harness's own arithmetic on the stored noise
    (gpu_harness.figures.geomean_interval; None where the rows hold none)."""
    correct, best, low = False, None, None
    for status, stored in site.query("select status, verdict from runs_evaluation where run_id = ?", (run_id,)):
        verdict = _json(stored)
        scenarios = verdict.get("scenarios") or []
        ran = {s["id"] for s in scenarios}
        if status != "correct" or not set(full_ids) <= ran or not all(s.get("correct") for s in scenarios):
            continue
        correct = True
        eager = ((verdict.get("geomean") or {}).get("eager") or {}).get("speedup")
        if eager is not None and (best is None or eager > best):
            interval = figures.geomean_interval(verdict, "eager")
            best, low = eager, interval[0] if interval else None
    return correct, best, low


def fast_by_rows(rows: list[tuple[bool, float | None, float | None]], p: float) -> int:
    """How many of an arm's problems count toward fast_p: correct, and (p > 0) a speed-up over eager above p,
    held at the low end of its interval where one was measured (a speed-up inside the noise is none)."""

    def fast(correct, eager, low):
        held = low if low is not None else eager
        return correct and (p == 0 or (held is not None and held > p))

    return sum(1 for row in rows if fast(*row))


def check_fast_p_against_rows(site, board: dict, runs: list[tuple], problems: int) -> dict[str, list]:
    """Assert that the scoreboard's fast_p per arm is what the rows say, at every threshold, over `problems`
    problems; returns model -> its runs' (correct, eager, low) read from the rows."""
    expected = {}
    for run_id, model, _task, scenario_ids in runs:
        expected.setdefault(model, []).append(measured_by_rows(site, run_id, _json(scenario_ids)))
    for arm in board["arms"]:
        by_rows = [fast_by_rows(expected[arm["arm"]], p) for p in board["thresholds"]]
        assert [f["fast"] for f in arm["fast_p"]] == by_rows, arm
        assert all(f["of"] == problems for f in arm["fast_p"]), arm
    return expected


def scoreboard_table(board: dict) -> str:
    """The scoreboard as text, to quote: fast_p per arm, then per problem and arm its status, correctness and
    best verified speed-up over eager (its interval's low end) and over torch.compile."""
    lines = [f"suite study {board['suite_study']['id']} over {board['suite_study']['suite']}"]
    for arm in board["arms"]:
        shown = ", ".join(f"fast_{f['p']:g} {f['text']}" for f in arm["fast_p"])
        lines.append(f"  {arm['arm']}: {shown}; {arm['evaluations']} evaluations")
    lines.append(f"  {'problem':<40} {'arm':<18} {'status':<10} {'correct':<8} {'x eager (low)':<18} x compile")
    for problem in board["problems"]:
        for cell in problem["arms"]:
            if cell is None:
                continue
            eager = figures.format_speedup(cell["eager"])
            low = figures.format_speedup(cell["eager_low"], missing="-")
            lines.append(
                f"  {problem['problem']:<40} {cell['arm']:<18} {cell['status']:<10} {str(cell['correct']):<8}"
                f" {eager + ' (' + low + ')':<18} {figures.format_speedup(cell['compiled'])}"
            )
    return "\n".join(lines)
