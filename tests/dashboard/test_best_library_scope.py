"""A best_library figure says what it is the best of (issue 35's goal is the strongest library): an evaluation
that timed eager alone, or ran where a library is not installed, shows which libraries it missed on the run page,
the kernel page and the kernel list, and a figure over every library is chosen before a higher one over some.
Runs are made through the real event store, pages through the views."""

import pytest
from django.urls import reverse

from runs.models import Evaluation, Run
from runs.services import run_claim, run_start
from runs.services.kernels import evaluation_meets_goal, run_goal_evaluation
from tests.dashboard.helpers import evaluation_payload, make_user, make_worker
from tests.dashboard.test_imported_figures import record, shown
from tests.foundation.factories import make_task

LIBRARIES = ["eager", "compile", "quack"]
EAGER_ONLY = "best of eager only; not timed: compile, quack"


def library_payload(speedup: float, source: str, libraries: list[str], notes: dict | None = None) -> dict:
    """A full-set, all-correct verdict whose best_library is the best of `libraries` (as the harness writes it)."""
    payload = evaluation_payload(speedup, source=source)
    result = payload["result"]
    for scenario in result["scenarios"]:
        scenario["speedup"] = {"eager": speedup, "best_library": speedup}
    result["geomean"] = {name: {"speedup": speedup, "count": 2} for name in ("eager", "best_library")}
    result["libraries"] = libraries
    result["baseline_notes"] = notes or {}
    return payload


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def library_task(name: str = "matmul_cpu"):
    """A task whose goal is its best library, over LIBRARIES (its spec, as sync_tasks stores the harness's)."""
    return make_task(name=name, goal_baseline="best_library", goal_speedup=5.0, spec={"libraries": LIBRARIES})


def held_run(task, host_name: str = "gpu-a") -> Run:
    """A run of `task` claimed by a worker of its own, as a worker's evaluations reach the event store."""
    host, _ = make_worker(name=host_name)
    started = run_start(task=task, model="claude-sonnet-4-6")
    assert run_claim(worker=host).pk == started.pk
    return Run.objects.get(pk=started.pk)


@pytest.fixture
def run():
    return held_run(library_task())


@pytest.mark.django_db
def test_a_figure_over_eager_alone_says_so_on_every_page_that_shows_it(operator, run):
    record(run, 0, "evaluation", library_payload(1.8, "// screened\n", ["eager"]))

    page = shown(operator.get(reverse("run_detail", args=[run.pk])))
    assert f"1.800× · {EAGER_ONLY}" in page  # the run header's best and its Evaluations row
    assert page.count(EAGER_ONLY) >= 2

    evaluation = Evaluation.objects.get(run=run)
    kernel_page = shown(operator.get(reverse("kernel_detail", args=[evaluation.kernel_id])))
    assert f"In this evaluation it is the {EAGER_ONLY}." in kernel_page

    kernels = shown(operator.get(reverse("kernels")))
    best = kernels[kernels.index('id="best-per-task"') : kernels.index("<h2>Released")]
    assert f"1.800× ({EAGER_ONLY})" in best
    assert f"1.800× ({EAGER_ONLY}) over best_library" in kernels[kernels.index('id="kernel-groups"') :]


@pytest.mark.django_db
def test_a_library_not_installed_where_it_ran_is_named_and_a_complete_evaluation_needs_no_note(operator, run):
    record(run, 0, "evaluation", library_payload(1.3, "// a\n", LIBRARIES, {"quack": "quack is not installed"}))
    record(run, 1, "evaluation", library_payload(1.1, "// b\n", LIBRARIES))

    page = shown(operator.get(reverse("run_detail", args=[run.pk])))
    assert "1.300× · best of eager, compile only; not timed: quack" in page
    assert "1.100×" in page and "1.100× ·" not in page

    complete = Evaluation.objects.get(run=run, step__seq=1)
    kernel_page = shown(operator.get(reverse("kernel_detail", args=[complete.kernel_id])))
    assert "In this evaluation it is the" not in kernel_page


@pytest.mark.django_db
def test_the_kernel_list_chooses_the_figure_over_every_library_before_a_higher_one_over_eager(operator, run):
    source = "// one kernel, timed twice\n"
    record(run, 0, "evaluation", library_payload(1.8, source, ["eager"]))
    record(run, 1, "evaluation", library_payload(0.96, source, LIBRARIES))

    kernels = shown(operator.get(reverse("kernels")))
    groups = kernels[kernels.index('id="kernel-groups"') :]
    assert "0.960× over best_library" in groups
    assert "1.800×" not in groups

    # the kernel's page lists both evaluations, the one over eager alone with what it missed
    kernel_id = Evaluation.objects.filter(run=run).first().kernel_id
    kernel_page = shown(operator.get(reverse("kernel_detail", args=[kernel_id])))
    assert f'data-baseline="best_library">1.800× ({EAGER_ONLY})</span>' in kernel_page
    assert 'data-baseline="best_library">0.960×</span>' in kernel_page


@pytest.mark.django_db
def test_a_tasks_page_names_the_libraries_its_best_library_goal_is_over(operator, run):
    page = shown(operator.get(reverse("task_detail", args=[run.task.name])))
    assert "over best_library (geometric mean over the full scenario set); best_library: on each" in page
    assert "the fastest of eager, compile, quack that runs it, where installed" in page


@pytest.mark.django_db
def test_a_source_timed_in_two_runs_shows_its_figure_over_every_library(operator, run):
    """The same choice across kernels: a source's group takes the figure over every library that another run's
    kernel of the same source has, before a higher one over eager alone."""
    source = "// one source, two runs\n"
    record(run, 0, "evaluation", library_payload(1.8, source, ["eager"]))
    record(held_run(run.task, "gpu-b"), 0, "evaluation", library_payload(0.96, source, LIBRARIES))

    kernels = shown(operator.get(reverse("kernels")))
    groups = kernels[kernels.index('id="kernel-groups"') :]
    assert "0.960× over best_library" in groups and "1.800×" not in groups


@pytest.mark.django_db
def test_the_best_per_task_is_a_figure_over_every_library_before_a_higher_one_over_eager(operator, run):
    record(run, 0, "evaluation", library_payload(1.8, "// screened\n", ["eager"]))
    record(run, 1, "evaluation", library_payload(1.05, "// every library\n", LIBRARIES))

    kernels = shown(operator.get(reverse("kernels")))
    best = kernels[kernels.index('id="best-per-task"') : kernels.index("<h2>Released")]
    assert "1.050×" in best and "1.800×" not in best


@pytest.mark.django_db
def test_a_runs_best_over_eager_alone_says_so_in_the_runs_list_the_compare_page_and_its_csv(operator, run):
    record(run, 0, "evaluation", library_payload(1.8, "// screened\n", ["eager"]))
    run.refresh_from_db()
    assert run.best_library_scope == EAGER_ONLY

    rows = shown(operator.get(reverse("runs_rows")))
    assert f'1.800× · {EAGER_ONLY} <small class="over">over best_library</small>' in rows  # a list of many tasks

    second = held_run(library_task("softmax_other"), "gpu-b")
    record(second, 0, "evaluation", library_payload(1.1, "// every library\n", LIBRARIES))

    url = reverse("run_compare") + f"?runs={run.pk},{second.pk}"
    page = shown(operator.get(url))
    assert f"1.800× · {EAGER_ONLY}" in page
    summary = operator.get(url + "&format=json").json()["summary"]
    assert [row["best_library_scope"] for row in summary] == [EAGER_ONLY, ""]


@pytest.mark.django_db
def test_a_later_best_over_every_library_clears_the_runs_scope(run):
    record(run, 0, "evaluation", library_payload(1.1, "// a\n", ["eager"]))
    record(run, 1, "evaluation", library_payload(1.3, "// b\n", LIBRARIES))
    run.refresh_from_db()
    assert run.best_speedup == pytest.approx(1.3) and run.best_library_scope == ""
    assert run.best_text() == "1.300×"


@pytest.mark.django_db
def test_a_best_library_goal_is_not_confirmed_by_an_evaluation_that_missed_a_library(operator, run):
    """6x over the best of eager and compile, where quack was not installed, is not the run's goal (5x over the
    task's best library): the server's check and the comparison refuse it; the same figure over every library
    confirms it."""
    record(run, 0, "evaluation", library_payload(6.0, "// a\n", LIBRARIES, {"quack": "quack is not installed"}))
    missed = Evaluation.objects.get(run=run, step__seq=0)
    assert not evaluation_meets_goal(missed, run) and run_goal_evaluation(run) is None
    other = held_run(library_task("softmax_other"), "gpu-b")
    record(other, 0, "evaluation", library_payload(6.0, "// c\n", LIBRARIES))
    compare = reverse("run_compare") + f"?runs={run.pk},{other.pk}&format=json"
    rows = operator.get(compare).json()["summary"]
    assert [row["goal_met"] for row in rows] == [False, True]
    assert rows[0]["best_library_scope"] == "best of eager, compile only; not timed: quack"

    record(run, 1, "evaluation", library_payload(6.0, "// b\n", LIBRARIES))
    complete = Evaluation.objects.get(run=run, step__seq=1)
    assert evaluation_meets_goal(complete, run) and run_goal_evaluation(run).pk == complete.pk
    first = operator.get(compare).json()["summary"][0]
    assert first["goal_met"] is True and first["evaluations_to_goal"] == 2
