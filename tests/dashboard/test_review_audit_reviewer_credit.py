"""Reviewer audit finding 3: a worker's `question_decided` by a reviewer, for a question the dashboard holds
undecided, was credited to whichever account of this site it named (a viewer, the admin), though a reviewer's
decision made here is stored before any worker hears of it. Now only a fork's own decision (docs/protocol.md 2.10)
is credited, to the operator the fork's decision names; any other is recorded as the agent acted on it and credited
to no one, as an imported trace's names are never looked up (fails closed)."""

from datetime import UTC, datetime

import pytest

from runs.models import Question, QuestionStatus, Run
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def _proposed(fork=None, ref="q-1"):
    host, _ = make_worker()
    run = make_run(review_mode="review")
    if fork is not None:
        Run.objects.filter(pk=run.pk).update(fork=fork, fork_seq=3)
    run = run_claim(worker=host)
    proposed = {
        **event(run.pk, 0, "question_proposed", question_payload(ref.format(run=run.pk))),
        "ts": datetime.now(UTC).isoformat(),
    }
    [outcome] = worker_events_record(items=[(host, proposed)])
    assert outcome.stored, outcome.error
    return host, run


def _worker_says(host, run, ref="q-1", **payload):
    decided = event(
        run.pk, 1, "question_decided", {"question_ref": ref.format(run=run.pk), "by": "reviewer", **payload}
    )
    [outcome] = worker_events_record(items=[(host, decided)])
    assert outcome.stored, outcome.error
    return Question.objects.get(run=run)


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_a_reviewers_decision_the_dashboard_never_made_is_credited_to_no_account(role):
    make_user("someone", role)
    host, run = _proposed()
    question = _worker_says(host, run, action="veto", reviewer="someone")
    assert (question.status, question.reviewer, question.trace_reviewer) == (QuestionStatus.VETOED, None, "")


FORK = {"decision": {"action": "write", "text": "Mine?", "by": "olga"}}


def test_a_forks_own_decision_is_credited_to_the_operator_who_forked(client):
    olga = make_user("olga", "operator")
    host, run = _proposed(fork=FORK, ref="q-{run}-fork")
    question = _worker_says(host, run, ref="q-{run}-fork", action="approve", reviewer="olga", fork_decision=True)
    assert (question.status, question.reviewer) == (QuestionStatus.APPROVED, olga)


def test_a_fork_decision_on_another_question_than_the_forks_is_credited_to_no_one(client):
    make_user("olga", "operator")
    host, run = _proposed(fork=FORK)
    question = _worker_says(host, run, action="veto", reviewer="olga", fork_decision=True)
    assert (question.status, question.reviewer) == (QuestionStatus.VETOED, None)


def test_a_fork_decision_naming_another_account_than_the_forks_operator_is_credited_to_no_one():
    make_user("olga", "operator")
    make_user("mallory", "operator")
    host, run = _proposed(fork=FORK, ref="q-{run}-fork")
    question = _worker_says(host, run, ref="q-{run}-fork", action="approve", reviewer="mallory", fork_decision=True)
    assert (question.status, question.reviewer) == (QuestionStatus.APPROVED, None)
