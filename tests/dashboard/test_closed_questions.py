"""A question whose run has finished is closed (issue 34, item 6): deciding it answers 409 with the reason,
stores nothing and sends no directive to a worker that no longer holds the run, and the pages show it closed."""

import html

import pytest
from django.urls import reverse

from runs.models import Directive, DirectiveAction, Question, QuestionStatus, Run
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import evaluation_payload, event, make_user, make_worker, question_payload
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


def compare_of(client, *runs) -> tuple[str, dict]:
    """The compare page of `runs` as its reader sees its text, and its JSON export's questions by text."""
    query = reverse("run_compare") + "?runs=" + ",".join(str(r.pk) for r in runs)
    page = html.unescape(client.get(query).content.decode())
    series = client.get(query + "&format=json").json()["series"]
    return page, {s["run_id"]: s["questions"] for s in series}


def test_a_closed_question_is_closed_undecided_on_the_compare_page_not_proposed_by_nobody(
    client, stopped_while_waiting
):
    run, _ = stopped_while_waiting
    host, _ = make_worker("other-host")
    make_run(review_mode="review")
    waiting = run_claim(worker=host)
    [outcome] = worker_events_record(items=[(host, event(waiting.pk, 0, "question_proposed", question_payload("q-2")))])
    assert outcome.stored, outcome.error
    page, questions = compare_of(client, run, waiting)
    timeline = page[page.index('id="compare-timeline"') : page.index('id="compare-grids"')]
    assert "closed undecided: the run stopped while it waited for a reviewer" in timeline
    assert "waiting for a reviewer" in timeline and "by nobody" not in timeline
    ((closed,),) = [questions[run.pk]]
    assert (closed["decided_by"], closed["decision"]) == ("nobody", "proposed")
    assert closed["decision_text"] == "closed undecided: the run stopped while it waited for a reviewer"
    ((still,),) = [questions[waiting.pk]]
    assert (still["decided_by"], still["decision_text"]) == ("nobody yet", "waiting for a reviewer")


def test_an_imported_runs_undecided_question_is_closed_and_its_status_on_the_runs_list_says_it_is_the_claim(
    client, stopped_while_waiting
):
    from tests.dashboard.test_imported_figures import exported, import_lines

    run, _ = stopped_while_waiting
    client.force_login(make_user("otto", "operator"))
    # Its trace, made to say that a full evaluation met the goal and the run succeeded with the question undecided.
    records = exported(client, run)
    at = next(i for i, r in enumerate(records) if r.get("kind") == "question_proposed")
    proposed = records[at]
    status = {"status": "succeeded", "reason": "goal_met", "detail": "goal confirmed by a fresh full evaluation"}
    records[at + 1 : at + 1] = [
        {**proposed, "seq": 1, "kind": "evaluation", "payload": evaluation_payload(2.5)},
        {**proposed, "seq": 2, "kind": "status", "payload": status},
    ]
    assert import_lines(client, records).status_code == 302
    imported = Run.objects.exclude(pk=run.pk).get()
    assert (imported.status, imported.questions.get().status) == ("succeeded", QuestionStatus.PROPOSED)
    page, questions = compare_of(client, imported, run)
    assert "closed undecided: the run succeeded while it waited for a reviewer" in page
    assert "nobody yet" not in page and "proposed by" not in page
    assert questions[imported.pk][0]["decided_by"] == "nobody"
    rows = html.unescape(client.get(reverse("runs_rows")).content.decode())
    row = rows[rows.index(f'<tr data-run="{imported.pk}">') :].split("</tr>")[0]
    status_cell = row[row.index('class="status-succeeded"') :].split("</td>")[0]
    # Said in the cell itself, not only in its title (a tooltip nobody hovers): the status is the trace's claim.
    claim = status_cell.split(">", 1)[1]
    assert 'class="status-claim">the trace\'s claim, not measured here' in claim


def _waiting_with_timeout(client, review_timeout_s: int, proposed_ago_s: int):
    """A review_timeout run whose question was proposed `proposed_ago_s` ago by its worker's clock."""
    from datetime import UTC, datetime, timedelta

    host, _ = make_worker()
    make_run(review_mode="review_timeout", review_timeout_s=review_timeout_s)
    run = run_claim(worker=host)
    proposed = event(run.pk, 0, "question_proposed", question_payload("q-1"))
    proposed["ts"] = (datetime.now(UTC) - timedelta(seconds=proposed_ago_s)).isoformat()
    [outcome] = worker_events_record(items=[(host, proposed)])
    assert outcome.stored, outcome.error
    client.force_login(make_user("rita", "reviewer"))
    return run, Question.objects.get(run=run)


def test_a_question_whose_review_timeout_ran_out_is_not_decided_since_the_agent_asks_it_as_proposed(client):
    run, question = _waiting_with_timeout(client, review_timeout_s=60, proposed_ago_s=3_600)
    response = client.post(
        reverse("review_decide", args=[question.pk]), {"decision": "veto"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 409
    assert "its review timeout (60 s) ran out" in response.json()["error"]
    question.refresh_from_db()
    assert (question.status, question.reviewer) == (QuestionStatus.PROPOSED, None)
    assert not Directive.objects.filter(action=DirectiveAction.QUESTION_DECISION).exists()


def test_a_question_within_its_review_timeout_is_decided(client):
    run, question = _waiting_with_timeout(client, review_timeout_s=86_400, proposed_ago_s=60)
    response = client.post(
        reverse("review_decide", args=[question.pk]), {"decision": "veto"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200 and Question.objects.get(pk=question.pk).status == QuestionStatus.VETOED
