"""Reviewer audit finding 5: an edit or a replacement whose text shows nothing (zero-width spaces, a byte-order
mark, a word joiner: characters Python's strip() keeps) was stored and sent, so the agent was asked an empty
question; only whitespace was refused. Now text with no visible character is refused as an empty one is."""

import pytest
from django.urls import reverse

from runs.models import Directive, DirectiveAction, Question, QuestionStatus
from runs.services import ServiceError, question_decide, run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db

INVISIBLE = ["\u200b", " \u200b\u200c\u200d ", "\ufeff", "\u2060\n\u00ad"]


@pytest.fixture
def question():
    host, _ = make_worker()
    make_run(review_mode="review")
    run = run_claim(worker=host)
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "question_proposed", question_payload("q-1")))])
    assert outcome.stored, outcome.error
    return Question.objects.get(run=run)


@pytest.mark.parametrize("decision", ["edit", "replace"])
@pytest.mark.parametrize("text", INVISIBLE)
def test_an_edit_that_shows_nothing_is_refused_and_nothing_is_sent(client, question, decision, text):
    client.force_login(make_user("rita", "reviewer"))
    response = client.post(
        reverse("review_decide", args=[question.pk]),
        {"decision": decision, "text": text},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == "an edit or a replacement needs the question's text"
    assert Question.objects.get(pk=question.pk).status == QuestionStatus.PROPOSED
    assert not Directive.objects.filter(action=DirectiveAction.QUESTION_DECISION).exists()


def test_the_service_refuses_it_too(question):
    with pytest.raises(ServiceError, match="an edit needs the new text"):
        question_decide(question=question, reviewer=None, action="edit", text="\u200b\u200b")


def test_an_edit_with_a_visible_character_among_invisible_ones_is_taken(client, question):
    client.force_login(make_user("rita", "reviewer"))
    response = client.post(
        reverse("review_decide", args=[question.pk]),
        {"decision": "edit", "text": "\u200bWhy?"},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 200
