"""A question whose run has finished is closed (issue 34, item 6): deciding it answers 409 with the reason,
stores nothing and sends no directive to a worker that no longer holds the run, and the pages show it closed."""

import pytest
from django.urls import reverse

from runs.models import Directive, DirectiveAction, Question, QuestionStatus, Run
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def stopped_while_waiting(client):
    """A run in review mode whose question waits for a reviewer, stopped by an operator from its page."""
    host, _ = make_worker()
    make_run(review_mode="review")
    run = run_claim(worker=host)
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "question_proposed", question_payload("q-1")))])
    assert outcome.stored, outcome.error
    client.force_login(make_user("olga", "operator"))
    assert client.post(reverse("run_control", args=[run.pk]), {"action": "stop"}).status_code == 302
    assert Run.objects.get(pk=run.pk).status == "stopped"
    client.force_login(make_user("rita", "reviewer"))
    return run, Question.objects.get(run=run)


@pytest.mark.parametrize("decision", ["approve", "edit", "replace", "veto"])
def test_a_question_of_a_stopped_run_is_not_decided_and_no_directive_is_sent(client, stopped_while_waiting, decision):
    run, question = stopped_while_waiting
    response = client.post(
        reverse("review_decide", args=[question.pk]),
        {"decision": decision, "text": "Where does the time go?"},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 409
    assert response.json() == {
        "ok": False,
        "error": f"question {question.pk} is closed: run {run.pk} has finished (stopped) and nobody waits for "
        "a decision",
    }
    question.refresh_from_db()
    assert (question.status, question.decided_at, question.reviewer) == (QuestionStatus.PROPOSED, None, None)
    assert not Directive.objects.filter(action=DirectiveAction.QUESTION_DECISION).exists()


def test_the_review_form_of_a_closed_question_says_why_on_the_queue(client, stopped_while_waiting):
    run, question = stopped_while_waiting
    page = client.post(reverse("review_decide", args=[question.pk]), {"decision": "approve"}, follow=True)
    html = page.content.decode()
    assert f"question {question.pk} is closed: run {run.pk} has finished (stopped)" in html
    assert f'data-question="{question.pk}"' not in html and 'id="review-empty"' in html
    assert Question.objects.get(pk=question.pk).status == QuestionStatus.PROPOSED


def test_a_closed_question_shows_closed_on_the_run_page_and_waits_on_nobody(client, stopped_while_waiting):
    run, question = stopped_while_waiting
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="run-questions-closed"' in page
    assert "closed undecided, the run stopped while it waited for a reviewer" in page
    assert client.get(reverse("run_summary", args=[run.pk])).json()["pending_questions"] == 0
    assert client.get(reverse("pending_count")).json() == {"pending": 0}
    rows = client.get(reverse("runs_rows")).content.decode()
    assert reverse("review_queue") not in rows  # the runs list links no waiting question of it


def test_a_waiting_question_of_a_running_run_is_not_shown_closed(client):
    host, _ = make_worker()
    make_run(review_mode="review")
    run = run_claim(worker=host)
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "question_proposed", question_payload("q-1")))])
    assert outcome.stored
    client.force_login(make_user("rita", "reviewer"))
    assert 'id="run-questions-closed"' not in client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert client.get(reverse("run_summary", args=[run.pk])).json()["pending_questions"] == 1
    assert reverse("review_queue") in client.get(reverse("runs_rows")).content.decode()
