"""Reviewer audit finding 2: a worker's `question_decided` by a reviewer that differs from the decision the
dashboard stored (another action, another text, another reviewer, or a reviewer's where none was stored here).
It used to be dropped: the record kept the reviewer's veto of a question the agent says it asked. Now, as for the
timeout race (`Question.unheard_decision`), what the agent reports it acted on is the record, credited to no
reviewer here (the dashboard sent no such decision: it fails closed), and the stored decision is kept, said to be
one the agent did not act on (docs/protocol.md 1.2, `question_decided`)."""

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
    """A run in review mode whose question waits, a second reviewer, and rita logged in."""
    host, _ = make_worker()
    make_run(review_mode="review")
    run = run_claim(worker=host)
    proposed = {**event(run.pk, 0, "question_proposed", question_payload("q-1")), "ts": datetime.now(UTC).isoformat()}
    [outcome] = worker_events_record(items=[(host, proposed)])
    assert outcome.stored, outcome.error
    make_user("bob", "reviewer")
    client.force_login(make_user("rita", "reviewer"))
    return host, run, Question.objects.get(run=run)


def _decide(client, question, decision, text=""):
    response = client.post(
        reverse("review_decide", args=[question.pk]),
        {"decision": decision, "text": text},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 200, response.content


def _worker_says(host, run, seq, **payload):
    decided = event(run.pk, seq, "question_decided", {"question_ref": "q-1", "by": "reviewer", **payload})
    [outcome] = worker_events_record(items=[(host, decided)])
    assert outcome.stored, outcome.error


def test_a_veto_the_agent_reports_it_never_got_gives_way_to_what_it_asked(client, waiting):
    host, run, question = waiting
    _decide(client, question, "veto")
    _worker_says(host, run, 1, action="approve", reviewer="rita")
    question.refresh_from_db()
    assert (question.status, question.reviewer, question.text) == (QuestionStatus.APPROVED, None, PROPOSAL)
    assert question.unheard_decision.startswith("vetoed by rita at ")
    assert question.unheard_decision.endswith(
        "; the agent reported another decision (approve by reviewer rita) and acted on that one, not this"
    )
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="run-questions-unheard"' in page and "vetoed by rita at " in page
    export = b"".join(client.get(reverse("trace_export", args=[run.pk])).streaming_content).decode()
    [line] = [x for x in map(json.loads, export.splitlines()) if x.get("type") == "question"]
    assert (line["status"], line["reviewer"], line["unheard_decision"]) == ("approved", None, question.unheard_decision)


def test_an_edit_the_agent_reports_with_another_text_is_recorded_as_it_asked_it(client, waiting):
    host, run, question = waiting
    _decide(client, question, "edit", "Which layer holds the time?")
    _worker_says(host, run, 1, action="edit", text="Is it memory bound?", reviewer="rita")
    question.refresh_from_db()
    assert (question.status, question.text, question.original_text) == ("edited", "Is it memory bound?", PROPOSAL)
    assert question.reviewer is None and not question.replaced
    assert question.unheard_decision.startswith("edited by rita at ")
    assert ": Which layer holds the time?; the agent reported another decision (edit by reviewer rita)" in (
        question.unheard_decision
    )


def test_an_approval_the_agent_reports_as_a_veto_by_another_reviewer_is_credited_to_no_one(client, waiting):
    host, run, question = waiting
    _decide(client, question, "approve")
    _worker_says(host, run, 1, action="veto", reviewer="bob")
    question.refresh_from_db()
    assert (question.status, question.reviewer, question.trace_reviewer) == (QuestionStatus.VETOED, None, "")
    assert question.unheard_decision.startswith("approved by rita at ")
    assert "(veto by reviewer bob)" in question.unheard_decision


def test_the_compare_page_credits_an_overruled_decision_to_no_reviewer(client, waiting):
    host, run, question = waiting
    other = make_run()
    _decide(client, question, "approve")
    _worker_says(host, run, 1, action="veto", reviewer="bob")
    url = reverse("run_compare") + f"?runs={run.pk},{other.pk}&format=json"
    [marker] = client.get(url).json()["series"][0]["questions"]
    assert (marker["decided_by"], marker["decision_text"]) == (
        "no reviewer here, as the agent reports",
        "vetoed by no reviewer here, as the agent reports",
    )


def test_the_same_decision_named_by_another_reviewer_is_credited_to_no_one(client, waiting):
    host, run, question = waiting
    _decide(client, question, "veto")
    _worker_says(host, run, 1, action="veto", reviewer="bob")
    question.refresh_from_db()
    assert (question.status, question.reviewer) == (QuestionStatus.VETOED, None)
    assert question.unheard_decision.startswith("vetoed by rita at ")


@pytest.mark.parametrize(
    ("decision", "text", "reported"),
    [
        ("approve", "", {"action": "approve"}),
        ("veto", "", {"action": "veto"}),
        ("edit", "Which layer?", {"action": "edit", "text": "Which layer?", "original_text": PROPOSAL}),
        ("replace", "My own?", {"action": "replace", "text": "My own?"}),
    ],
)
def test_the_decision_the_agent_got_stays_the_reviewers(client, waiting, decision, text, reported):
    host, run, question = waiting
    _decide(client, question, decision, text)
    stored = Question.objects.get(pk=question.pk)
    _worker_says(host, run, 1, reviewer="rita", **reported)
    question.refresh_from_db()
    assert (question.status, question.text, question.reviewer.username, question.unheard_decision) == (
        stored.status,
        stored.text,
        "rita",
        "",
    )


def test_a_report_with_no_reviewer_name_of_the_stored_decision_stays_the_reviewers(client, waiting):
    host, run, question = waiting
    _decide(client, question, "veto")
    _worker_says(host, run, 1, action="veto")
    question.refresh_from_db()
    assert (question.status, question.reviewer.username, question.unheard_decision) == ("vetoed", "rita", "")


def test_a_report_after_the_agents_own_approval_by_timeout_changes_nothing(waiting):
    host, run, question = waiting
    _worker_says(host, run, 1, action="approve", by="timeout")
    _worker_says(host, run, 2, action="veto", reviewer="rita")
    question.refresh_from_db()
    assert (question.status, question.reviewer, question.unheard_decision) == (QuestionStatus.APPROVED, None, "")
