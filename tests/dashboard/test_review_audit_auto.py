"""Reviewer audit finding 1: a question of a run in review mode `auto` is approved by the agent itself, so no
reviewer decides it. It used to wait in the review queue between its proposal and the agent's approval, and a
reviewer's decision then was stored and sent, while the agent approved it anyway: the record said "vetoed by rita"
of a question the agent asked."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from runs.models import Directive, DirectiveAction, Question, QuestionStatus
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def auto_run_proposed(client):
    """A run in auto mode whose proposal is stored and whose auto approval has not arrived yet."""
    host, _ = make_worker()
    make_run(review_mode="auto")
    run = run_claim(worker=host)
    proposed = {**event(run.pk, 0, "question_proposed", question_payload("q-1")), "ts": datetime.now(UTC).isoformat()}
    [outcome] = worker_events_record(items=[(host, proposed)])
    assert outcome.stored, outcome.error
    client.force_login(make_user("rita", "reviewer"))
    return host, run, Question.objects.get(run=run)


def test_a_question_of_an_auto_run_is_not_in_the_review_queue(client, auto_run_proposed):
    _, _, question = auto_run_proposed
    page = client.get(reverse("review_queue")).content.decode()
    assert f'data-question="{question.pk}"' not in page and 'id="review-empty"' in page
    assert client.get(reverse("pending_count")).json() == {"pending": 0}


def test_a_reviewer_cannot_decide_a_question_of_an_auto_run(client, auto_run_proposed):
    host, run, question = auto_run_proposed
    response = client.post(
        reverse("review_decide", args=[question.pk]), {"decision": "veto"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 409
    assert response.json()["error"] == (
        f"question {question.pk} is not a reviewer's to decide: run {run.pk} is in review mode auto, so its agent "
        "approves each question it asks itself"
    )
    assert not Directive.objects.filter(action=DirectiveAction.QUESTION_DECISION).exists()
    approved = {"question_ref": "q-1", "action": "approve", "by": "auto"}
    [outcome] = worker_events_record(items=[(host, event(run.pk, 1, "question_decided", approved))])
    assert outcome.stored, outcome.error
    question.refresh_from_db()
    assert (question.status, question.reviewer, question.unheard_decision) == (QuestionStatus.APPROVED, None, "")
