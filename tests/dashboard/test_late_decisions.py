"""A reviewer's decision stored before the review timeout but never acted on: the worker, which counts the timeout
by its own clock (or was offline when the decision was sent), asked the proposal as it was and reports
`question_decided` by timeout. What the agent was told is the run's record: the question becomes the proposal
approved by timeout, and the reviewer's decision is kept, said to have come too late, on the run page and in the
export (runs.services.questions.question_decision_reported)."""

import json
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from runs.models import Question, QuestionStatus
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db

PROPOSAL = "What limits the kernel now?"


@pytest.fixture
def waiting(client):
    """A run in review-timeout mode whose question waits, and a reviewer logged in."""
    host, _ = make_worker()
    make_run(review_mode="review_timeout", review_timeout_s=3600)
    run = run_claim(worker=host)
    proposed = {**event(run.pk, 0, "question_proposed", question_payload("q-1")), "ts": datetime.now(UTC).isoformat()}
    [outcome] = worker_events_record(items=[(host, proposed)])  # proposed now: its timeout is an hour away
    assert outcome.stored, outcome.error
    client.force_login(make_user("rita", "reviewer"))
    return host, run, Question.objects.get(run=run)


def _decide(client, question, decision, text=""):
    response = client.post(
        reverse("review_decide", args=[question.pk]),
        {"decision": decision, "text": text},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 200, response.content


def _worker_says(host, run, seq, by, action="approve"):
    payload = {"question_ref": "q-1", "action": action, "by": by}
    [outcome] = worker_events_record(items=[(host, event(run.pk, seq, "question_decided", payload))])
    assert outcome.stored, outcome.error


def test_a_veto_the_agent_never_got_gives_way_to_its_timeout_and_is_kept_as_too_late(client, waiting):
    host, run, question = waiting
    _decide(client, question, "veto")
    assert Question.objects.get(pk=question.pk).status == QuestionStatus.VETOED
    _worker_says(host, run, 1, by="timeout")
    question.refresh_from_db()
    assert (question.status, question.reviewer, question.text) == (QuestionStatus.APPROVED, None, PROPOSAL)
    assert question.unheard_decision.startswith("vetoed by rita at ")
    assert "asked the proposal as it was (review timeout)" in question.unheard_decision
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="run-questions-unheard"' in page and "vetoed by rita at " in page
    export = b"".join(client.get(reverse("trace_export", args=[run.pk])).streaming_content).decode()
    [line] = [x for x in map(json.loads, export.splitlines()) if x.get("type") == "question"]
    assert line["status"] == "approved" and line["unheard_decision"] == question.unheard_decision


def test_an_edit_the_agent_never_got_leaves_the_proposal_as_what_was_asked(client, waiting):
    host, run, question = waiting
    _decide(client, question, "edit", "Which layer holds the time?")
    _worker_says(host, run, 1, by="timeout")
    question.refresh_from_db()
    assert (question.status, question.text, question.original_text) == (QuestionStatus.APPROVED, PROPOSAL, "")
    assert question.unheard_decision.startswith("edited by rita at ")
    assert ": Which layer holds the time?;" in question.unheard_decision


def test_a_decision_the_agent_got_stays_the_reviewers(client, waiting):
    host, run, question = waiting
    _decide(client, question, "veto")
    _worker_says(host, run, 1, by="reviewer", action="veto")
    question.refresh_from_db()
    assert (question.status, question.reviewer.username, question.unheard_decision) == ("vetoed", "rita", "")
    assert 'id="run-questions-unheard"' not in client.get(reverse("run_detail", args=[run.pk])).content.decode()


def test_a_timeout_reported_twice_changes_nothing_the_second_time(waiting):
    host, run, question = waiting
    _worker_says(host, run, 1, by="timeout")
    _worker_says(host, run, 2, by="timeout")
    question.refresh_from_db()
    assert (question.status, question.reviewer, question.unheard_decision) == (QuestionStatus.APPROVED, None, "")
