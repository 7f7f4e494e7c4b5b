"""The evaluation page says whether the candidate's process had a sandbox of its own (the verdict's `child_sandbox`,
gpu_harness/childbox.py), in words, and "not recorded" for a verdict from before the harness recorded it."""

import re

import pytest
from django.urls import reverse

from runs.models import Evaluation
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import evaluation_payload, event, make_user, make_worker
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


def evaluation_page(client, child_sandbox: str | None) -> str:
    """The evaluation page of a verdict whose `child_sandbox` is the one given (None: a verdict without it)."""
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    payload = evaluation_payload(1.5)
    if child_sandbox is not None:
        payload["result"]["child_sandbox"] = child_sandbox
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "evaluation", payload))])
    assert outcome.stored, outcome.error
    client.force_login(make_user("vera"))
    html = client.get(reverse("evaluation_detail", args=[Evaluation.objects.get(run=run).pk])).content.decode()
    return " ".join(re.search(r'id="evaluation-candidate-process">(.*?)</span>', html, re.S).group(1).split())


@pytest.mark.parametrize(
    "child_sandbox, shown",
    [
        ("bubblewrap", "candidate process: contained (bubblewrap)"),
        ("none", "candidate process: not contained: the kernel's process had no sandbox of its own"),
        (None, "candidate process: not recorded"),
    ],
)
def test_the_evaluation_page_says_whether_the_candidates_process_was_contained(client, child_sandbox, shown):
    assert evaluation_page(client, child_sandbox) == shown.replace("'", "&#x27;")
