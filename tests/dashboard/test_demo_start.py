"""The demo starts on demand from the runs list, for whoever is there to watch it."""

import pytest
from django.urls import reverse

from runs.demo import DEMO_TRACE, demo_config
from runs.models import Run
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db


def test_an_operator_starts_the_demo_from_the_runs_list_and_lands_on_its_page(client):
    make_task()  # matmul_cpu, the task the demo records
    client.force_login(make_user("olga", "operator"))
    home = client.get(reverse("home")).content.decode()
    assert 'id="first-steps"' in home and 'id="start-demo-button"' in home
    response = client.post(reverse("demo_start"))
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.pk])
    config = demo_config()
    assert run.model == f"replay:{DEMO_TRACE}" and run.review_mode == "auto"
    assert run.starting_kernel == config["starting_kernel"]
    assert run.goal == (config["goal"]["baseline"], config["goal"]["speedup"])
    assert run.started_by.username == "olga"
    assert 'id="first-steps"' not in client.get(reverse("home")).content.decode()


def test_the_demo_says_why_it_cannot_start_without_its_task(client):
    client.force_login(make_user("olga", "operator"))
    response = client.post(reverse("demo_start"), follow=True)
    assert "The demo cannot start: the demo needs task matmul_cpu" in response.content.decode()
    assert not Run.objects.exists()


def test_a_viewer_cannot_start_the_demo_and_is_not_offered_it(client):
    make_task()
    client.force_login(make_user("vera"))
    home = client.get(reverse("home")).content.decode()
    assert "start-demo-button" not in home and "ask one to start the demo" in home
    assert client.post(reverse("demo_start")).status_code == 403
    assert not Run.objects.exists()


def test_the_review_demo_is_the_same_recording_in_review_mode(client):
    make_task()
    client.force_login(make_user("olga", "operator"))
    home = client.get(reverse("home")).content.decode()
    assert 'id="start-review-demo-button"' in home and "Start the review demo" in home
    response = client.post(reverse("demo_start"), {"review": "1"}, follow=True)
    run = Run.objects.get()
    assert run.model == f"replay:{DEMO_TRACE}" and run.review_mode == "review"
    assert "it stops at its first question until you approve, edit or veto it" in response.content.decode()
