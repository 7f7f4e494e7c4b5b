"""Reviewer audit finding 8: the review queue did not say when a question's review timeout runs out, so a
reviewer editing one could not know that the agent would ask it as proposed in a minute, and met a refusal
(409) instead. Now each item says until when it can be decided, or that its run waits for a decision."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from runs.models import Question
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def _proposed(proposed_at: datetime, **run_settings) -> Question:
    host, _ = make_worker(name=f"gpu-{run_settings.get('review_mode')}")
    make_run(**run_settings)
    run = run_claim(worker=host)
    proposed = {**event(run.pk, 0, "question_proposed", question_payload("q-1")), "ts": proposed_at.isoformat()}
    [outcome] = worker_events_record(items=[(host, proposed)])
    assert outcome.stored, outcome.error
    return Question.objects.get(run=run)


def test_the_queue_says_when_a_questions_review_timeout_runs_out_or_that_its_run_waits(client):
    client.force_login(make_user("rita", "reviewer"))
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=60)
    timed = _proposed(at, review_mode="review_timeout", review_timeout_s=3_600)
    waits = _proposed(at, review_mode="review")
    page = client.get(reverse("review_queue")).content.decode()
    timed_item = page.split(f'data-question="{timed.pk}"')[1].split("</article>")[0]
    runs_out = at + timedelta(seconds=3_600)
    assert (
        f"Decide by {runs_out:%Y-%m-%d %H:%M:%S} UTC: the review timeout (3600 s) then runs out and the agent asks "
        "it as proposed." in timed_item
    )
    waits_item = page.split(f'data-question="{waits.pk}"')[1].split("</article>")[0]
    assert "No review timeout: the run waits for a decision." in waits_item
