"""What a visitor sees: the landing page lists runs for a signed-in user and sends anyone else to log in."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def test_an_anonymous_visitor_is_sent_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_a_signed_in_user_sees_the_runs(client):
    run = make_run()
    client.force_login(get_user_model().objects.create_user("viewer", password="pw-123456789"))
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>Runs</h1>" in page and run.task.name in page and "replay:demo" in page


def test_the_status_filter_shows_only_matching_runs(client):
    make_run(model="model-a")
    client.force_login(get_user_model().objects.create_user("viewer", password="pw-123456789"))
    assert "model-a" in client.get("/?status=queued").content.decode()
    assert "model-a" not in client.get("/?status=running").content.decode()
    # An unknown filter value shows everything rather than failing.
    assert client.get("/?status=nonsense").status_code == 200


def test_logging_in_with_the_form_reaches_the_runs_page(client):
    get_user_model().objects.create_user("viewer", password="pw-123456789")
    response = client.post(reverse("login"), {"username": "viewer", "password": "pw-123456789"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("home")
    assert "<h1>Runs</h1>" in response.content.decode()


def test_every_model_is_in_the_admin(admin_client):
    for model in ["task", "run", "step", "question", "kernel", "evaluation", "workerhost"]:
        assert admin_client.get(f"/admin/runs/{model}/").status_code == 200, model
    assert admin_client.get("/admin/questionbank/bankquestion/").status_code == 200


def test_static_files_are_served_without_collectstatic(client):
    response = client.get("/static/css/kseek.css")
    assert response.status_code == 200
