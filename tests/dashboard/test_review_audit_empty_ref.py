"""Reviewer audit finding 10: a `question_proposed` whose `question_ref` was the empty string was stored, and a
reviewer's decision on it was stored too ("vetoed by rita") while no directive was sent, since a decision names
its question by that ref: the agent never heard of it and the record said it was decided. Now such a proposal is
refused for good (docs/protocol.md 1.2), and a decision on a stored proposal that names no ref is refused (409)."""

import pytest
from django.urls import reverse

from runs.models import Directive, Question, QuestionStatus, RefusedEvent, Step
from runs.services import run_claim, step_record, worker_events_record
from runs.services.questions import question_propose
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def test_a_proposal_with_an_empty_question_ref_is_refused_for_good():
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "question_proposed", question_payload("")))])
    assert not outcome.stored and not outcome.sender_revoked and not outcome.sender_superseded
    assert "a question_proposed needs a question_ref" in outcome.error
    assert not Question.objects.filter(run=run).exists() and not Step.objects.filter(run=run).exists()
    assert RefusedEvent.objects.filter(run=run, seq=0).exists()


def test_a_decision_on_a_stored_proposal_that_names_no_ref_is_refused_and_nothing_is_stored(client):
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    step = step_record(run=run, seq=0, kind="question_proposed", payload=question_payload("")).step
    question = question_propose(run=run, text="Where is the time?", source="self", step=step)  # (stored before)
    client.force_login(make_user("rita", "reviewer"))
    response = client.post(
        reverse("review_decide", args=[question.pk]), {"decision": "veto"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 409
    assert response.json()["error"] == (
        f"question {question.pk} names no question_ref, so no decision can reach its agent: it is not decided here"
    )
    assert Question.objects.get(pk=question.pk).status == QuestionStatus.PROPOSED
    assert not Directive.objects.exists()
