"""The kernels list filtered by a task (`/kernels/?task=NAME`, the run page's "Kernels" link) shows that task's
kernels in each of its tables, its best included, and a name that is no task's is a 404 naming the tasks: before,
a mistyped name (or a release's, softmax-rows-sm90) showed "No released kernels" and "No kernels from runs yet",
which is false, under a "Best per task" of every other task."""

import pytest
from django.urls import reverse

from tests.dashboard.helpers import make_user
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import a_run, measured
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def best_per_task(page: str) -> str:
    return page[page.index('id="best-per-task"') : page.index("<h2>Released")]


def test_a_task_filter_shows_only_that_tasks_best(viewer):
    record(a_run(make_task("matmul_cpu"), model="a"), 0, "evaluation", measured(2.4, 2.2, 2.6))
    record(a_run(make_task("other_cpu"), model="b"), 0, "evaluation", measured(3.1, 3.0, 3.2, source="// o\n"))
    every = best_per_task(viewer.get(reverse("kernels")).content.decode())
    assert 'data-task="matmul_cpu"' in every and 'data-task="other_cpu"' in every
    page = viewer.get(reverse("kernels") + "?task=other_cpu").content.decode()
    assert 'data-task="other_cpu"' in best_per_task(page) and 'data-task="matmul_cpu"' not in best_per_task(page)


@pytest.mark.parametrize("name", ["softmax-rows-sm90", "no_such_task", "a\x00b"])
def test_a_task_filter_naming_no_task_is_a_404_that_names_the_tasks(viewer, name):
    make_task("matmul_cpu")
    make_task("other_cpu")
    response = viewer.get(reverse("kernels"), {"task": name})
    assert response.status_code == 404
    page = response.content.decode()
    assert "No released kernels" not in page and "No kernels from runs yet" not in page
    assert "the tasks: matmul_cpu, other_cpu" in page
