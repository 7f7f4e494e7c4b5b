"""The demo is judged against the goal its trace records (0.5x over naive), not its task's (2.0x): where its
status or best shows, the page says which goal it met (audit finding 10: "Succeeded (goal met)" beside "no
difference" read as a success of the task's goal)."""

from html import unescape

import pytest
from django.urls import reverse

from runs.demo import demo_run_start, goal_note
from runs.services import run_claim
from tests.dashboard.helpers import make_user, make_worker
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import measured
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db

NOTE = "demo goal 0.500× over naive (the task's is 2.000×)"


def test_the_demos_own_goal_shows_where_its_status_and_best_show(client):
    make_task()  # matmul_cpu: 2.0x over naive
    client.force_login(make_user("vera"))
    host, _ = make_worker("host-demo")
    demo_run_start()
    run = run_claim(worker=host)
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    for url in (
        reverse("home"),
        reverse("kernels"),
        reverse("task_detail", args=["matmul_cpu"]),
        reverse("run_detail", args=[run.pk]),
    ):
        assert NOTE in unescape(client.get(url).content.decode()), url


def test_a_run_on_its_tasks_goal_gets_no_note_and_another_own_goal_says_whose():
    task = make_task()
    assert goal_note(make_run(task=task)) == ""
    assert goal_note(make_run(task=task, goal_baseline="numpy", goal_speedup=1.5)) == (
        "its own goal 1.500× over numpy (the task's is 2.000× over naive)"
    )
    assert goal_note(None) == ""
