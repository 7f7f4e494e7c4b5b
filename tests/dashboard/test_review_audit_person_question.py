"""Reviewer audit finding 9: a person's own question (a fork's "Ask my own question", `by: "human"`) is decided
by the person who wrote it: its worker reports the fork's approval right after the proposal. Until that report
came (a worker restarted between the two resends the decision later) the proposal waited in the review queue
like a self-asked one, and a reviewer's veto of the operator's question was stored and sent. Now such a question
waits on no reviewer, and a decision on it is refused (409), nothing stored or sent."""

import pytest
from django.urls import reverse

from runs.models import Directive, DirectiveAction, Question, QuestionStatus
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def test_a_persons_own_question_waits_on_no_reviewer_and_is_not_theirs_to_decide(client):
    host, _ = make_worker()
    make_run(review_mode="review")
    run = run_claim(worker=host)
    own = {**question_payload(f"q-{run.pk}-fork", "Did you try shared memory?"), "by": "human", "bank_key": None}
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "question_proposed", own))])
    assert outcome.stored, outcome.error
    question = Question.objects.get(run=run)
    client.force_login(make_user("rita", "reviewer"))
    page = client.get(reverse("review_queue")).content.decode()
    assert f'data-question="{question.pk}"' not in page and client.get(reverse("pending_count")).json()["pending"] == 0
    response = client.post(
        reverse("review_decide", args=[question.pk]), {"decision": "veto"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 409
    assert response.json()["error"] == (
        f"question {question.pk} is not a reviewer's to decide: it is a person's own question, asked as they wrote it"
    )
    assert Question.objects.get(pk=question.pk).status == QuestionStatus.PROPOSED
    assert not Directive.objects.filter(action=DirectiveAction.QUESTION_DECISION).exists()
