"""Reviewer audit finding 4: a question whose review timeout had run out stayed "waiting" on the review queue, in
the badge, the runs list and the run page's count while its worker had not yet reported the approval by timeout
(a parked run resumes on the next free GPU; a worker may be offline), though every decision on it is refused
(409, "its review timeout ... ran out"): the queue offered buttons that could only fail. Now such a question waits
on nobody, as a finished run's does: the agent asks it as proposed."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from runs.models import Question
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def _proposed(review_timeout_s: int, ago_s: int) -> Question:
    host, _ = make_worker(name=f"gpu-{review_timeout_s}-{ago_s}")
    make_run(review_mode="review_timeout", review_timeout_s=review_timeout_s)
    run = run_claim(worker=host)
    proposed = event(run.pk, 0, "question_proposed", question_payload("q-1", f"Asked {ago_s} s ago?"))
    proposed["ts"] = (datetime.now(UTC) - timedelta(seconds=ago_s)).isoformat()
    [outcome] = worker_events_record(items=[(host, proposed)])
    assert outcome.stored, outcome.error
    return Question.objects.get(run=run)


def test_a_question_whose_review_timeout_ran_out_waits_on_no_reviewer(client):
    client.force_login(make_user("rita", "reviewer"))
    ran_out = _proposed(review_timeout_s=60, ago_s=3_600)
    within = _proposed(review_timeout_s=86_400, ago_s=60)
    short_within = _proposed(review_timeout_s=600, ago_s=30)
    page = client.get(reverse("review_queue")).content.decode()
    assert f'data-question="{ran_out.pk}"' not in page
    assert f'data-question="{within.pk}"' in page and f'data-question="{short_within.pk}"' in page
    assert f'<tr data-run="{ran_out.run_id}">' not in page.split('id="waiting-on-you"')[1].split("</section>")[0]
    assert client.get(reverse("pending_count")).json() == {"pending": 2}
    assert client.get(reverse("run_summary", args=[ran_out.run_id])).json()["pending_questions"] == 0
    assert client.get(reverse("run_summary", args=[within.run_id])).json()["pending_questions"] == 1
    rows = client.get(reverse("runs_rows")).content.decode()
    row = rows.split(f'<tr data-run="{ran_out.run_id}">')[1].split("</tr>")[0]
    assert "review_queue" not in row and reverse("review_queue") not in row
