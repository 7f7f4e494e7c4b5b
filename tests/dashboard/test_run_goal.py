"""A run is judged against its own goal, and every page shows that goal: the run page's header and evaluation
table, the chart's goal line and points, the review queue's header, the bank's figures. The task's goal is only
the default a run starts from (here the task says 2.0x over naive, the run 0.5x over numpy)."""

import pytest
from django.urls import reverse

from questionbank.bank import BankEntry
from questionbank.models import BankQuestion
from questionbank.services import bank_sync
from runs.selectors_bank import attributions, run_histories
from runs.services import evaluation_record, kernel_record, question_decide, question_propose, step_record
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def verdict(naive: float, numpy: float, *, correct: bool = True) -> dict:
    """A verdict on the task's full set (n256, n512), with its speedup over both baselines."""
    return {
        "status": "correct" if correct else "incorrect",
        "scenarios": [{"id": sid, "correct": correct} for sid in ("n256", "n512")],
        "geomean": {"naive": {"speedup": naive, "count": 2}, "numpy": {"speedup": numpy, "count": 2}},
    }


class OwnGoalRun:
    """A run whose goal (0.5x over numpy) differs from its task's (2.0x over naive), written through the
    services in the order a worker's events would write it."""

    def __init__(self):
        self.task = make_task(goal_baseline="naive", goal_speedup=2.0)
        self.run = make_run(self.task, goal_baseline="numpy", goal_speedup=0.5)
        self.seq = 0

    def step(self, kind, payload):
        step = step_record(run=self.run, seq=self.seq, kind=kind, payload=payload).step
        self.seq += 1
        return step

    def evaluate(self, source, result):
        step = self.step("evaluation", {"purpose": "tool", "result": result})
        kernel = kernel_record(source=source, run=self.run, task=self.task, language="cpp", step=step)
        return evaluation_record(kernel=kernel, run=self.run, step=step, result=result)

    def propose(self, text="Which data is fetched twice?", bank_entry=None):
        return question_propose(
            run=self.run,
            text=text,
            source="self",
            decision_point="plateau",
            bank_entry=bank_entry,
            step=self.step("question_proposed", {"question_ref": f"q-{self.seq}", "text": text, "by": "model"}),
        )


@pytest.fixture
def own_goal():
    return OwnGoalRun()


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def test_the_run_page_shows_the_runs_goal_and_each_evaluation_over_its_baseline(viewer, own_goal):
    own_goal.evaluate("// k1", verdict(naive=3.0, numpy=0.6))
    page = viewer.get(reverse("run_detail", args=[own_goal.run.pk])).content.decode()
    assert "Best speedup over numpy (goal 0.5×)" in page
    assert "Speedup over numpy" in page and "Speedup over naive" not in page
    assert "0.600×" in page and "3.000×" not in page.split("<h2>Evaluations</h2>")[1]


def test_the_chart_draws_the_runs_goal_line_and_its_points_over_the_runs_baseline(viewer, own_goal):
    own_goal.evaluate("// k1", verdict(naive=3.0, numpy=0.6))
    own_goal.evaluate("// k2", verdict(naive=9.0, numpy=0.9, correct=False))  # not verified: the best stays
    chart = viewer.get(reverse("run_chart", args=[own_goal.run.pk])).json()
    assert chart["goal"] == 0.5 and chart["baseline"] == "numpy"
    assert [p["speedup"] for p in chart["points"]] == [0.6, 0.9]
    assert [b["best"] for b in chart["best"]] == [0.6, 0.6]


def test_the_review_queue_shows_the_runs_goal(client, own_goal):
    client.force_login(make_user("rita", "reviewer"))
    own_goal.evaluate("// k1", verdict(naive=3.0, numpy=0.6))
    own_goal.propose()
    page = client.get(reverse("review_queue")).content.decode()
    assert "(goal 0.5× over numpy)" in page and "2.0×" not in page


def test_the_runs_best_speedup_is_over_the_runs_goal_baseline(own_goal):
    own_goal.evaluate("// k1", verdict(naive=3.0, numpy=0.6))
    own_goal.run.refresh_from_db()
    assert own_goal.run.best_speedup == 0.6
    assert own_goal.run.best_speedups == {"naive": 3.0, "numpy": 0.6}


def test_the_banks_figures_measure_a_question_over_the_runs_goal_baseline(own_goal):
    bank_sync([BankEntry("layer-reuse", "Which data is fetched twice?", "layer", ("plateau",))])
    entry = BankQuestion.objects.get(key="layer-reuse")
    own_goal.evaluate(own_goal.run.starting_kernel, verdict(naive=1.0, numpy=0.5))  # the reference
    question_decide(question=own_goal.propose(bank_entry=entry), reviewer=None, action="approve")
    own_goal.evaluate("// k1", verdict(naive=3.0, numpy=0.75))
    [history] = run_histories()
    assert history.reference == 0.5 and [m.speedup for m in history.measurements] == [0.5, 0.75]
    [asked] = attributions()
    assert (asked.before, asked.after) == (0.5, 0.75) and asked.gain == pytest.approx(1.5)


def test_a_verdict_not_correct_on_every_scenario_moves_no_best_anywhere(viewer, own_goal):
    """The server's best, the chart's best line and the bank all use one rule (gpu_harness.figures.all_correct):
    a `correct` status with a failed scenario, or with no scenario at all, verifies nothing."""
    forged = verdict(naive=3.0, numpy=0.6)
    forged["scenarios"][1]["correct"] = False
    own_goal.evaluate("// k1", forged)
    own_goal.evaluate("// k2", dict(verdict(naive=4.0, numpy=0.8), scenarios=[]))
    own_goal.run.refresh_from_db()
    assert own_goal.run.best_speedup is None and own_goal.run.best_speedups == {}
    assert viewer.get(reverse("run_chart", args=[own_goal.run.pk])).json()["best"] == []


def harness_line(**extra) -> dict:
    """One line of a harness --trace: a correct verdict of attention_fwd on its one scenario."""
    return {
        "kind": "evaluation",
        "note": "",
        "task": "attention_fwd",
        "kernel_sha256": "",
        "kernel_source": "// k\n",
        "status": "correct",
        "scenarios": [{"id": "s1", "params": {}, "correct": True}],
        "geomean": {"cudnn": {"speedup": 1.1, "count": 1}},
        **extra,
    }


def test_a_kernel_shows_the_arch_its_verdict_was_built_for(viewer):
    """Not a fixed sm_90a: the verdict's own `build.arch` (here from a harness --trace imported as a run)."""
    import json

    from runs.models import Kernel
    from runs.services import trace_import

    make_task(name="attention_fwd", target="cuda-sm90", goal_baseline="cudnn", scenario_ids=["s1"])
    line = harness_line(build={"arch": "sm_100a", "cache_hit": False})
    run = trace_import(lines=[json.dumps(line)], name="arch.jsonl")
    kernel = Kernel.objects.get(run=run)
    assert kernel.target_arch == "sm_100a"
    assert "cuda · sm_100a" in viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("../../lab/attention_fwd_sm90/trace.jsonl.xz", "import:trace.jsonl.xz"),
        ("C:\\traces\\arch.jsonl", "import:arch.jsonl"),
        ("arch.jsonl", "import:arch.jsonl"),
    ],
)
def test_a_harness_traces_model_label_is_its_file_name_and_imported_from_keeps_the_path(name, model):
    # A released kernel's development trace is imported by a path (load_released_kernels), which the run's model
    # label showed whole: "import:../../lab/attention_fwd_sm90/trace.jsonl.xz" on every page that names the model.
    import json

    from runs.services import trace_import

    make_task(name="attention_fwd", target="cuda-sm90", goal_baseline="cudnn", scenario_ids=["s1"])
    run = trace_import(lines=[json.dumps(harness_line())], name=name)
    assert run.model == model and run.imported_from == f"trace {name}"
