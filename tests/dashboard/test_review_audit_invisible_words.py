"""Reviewer audit finding 6: what else a person writes to the agent took text that shows nothing as finding 5's
edit did: a fork's own question ("Ask my own question") and a message to a running run, of zero-width spaces or a
byte-order mark alone, were stored and sent. Now both are refused as empty ones are."""

import io

import pytest
from django.urls import reverse

from runs.models import Directive, DirectiveAction, Run
from runs.services import ServiceError, run_claim, run_fork, trace_import
from tests.dashboard.helpers import api_models_configured, make_user, make_worker  # noqa: F401 - the fixture
from tests.dashboard.test_forks import DEMO, QUESTION_SEQ
from tests.foundation.factories import make_run, make_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("api_models_configured")]

INVISIBLE = "\u200b\ufeff \u2060"


def test_a_forks_own_question_that_shows_nothing_is_refused():
    make_task()
    parent = trace_import(lines=io.BytesIO(DEMO.read_bytes()), name="demo.jsonl")
    olga = make_user("olga", "operator")
    with pytest.raises(ServiceError, match="write the question"):
        run_fork(parent=parent, step_seq=QUESTION_SEQ, action="write", text=INVISIBLE, user=olga)
    assert Run.objects.filter(parent=parent).count() == 0


def test_a_message_that_shows_nothing_is_refused_and_nothing_is_sent(client):
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    client.force_login(make_user("rita", "reviewer"))
    response = client.post(reverse("run_message", args=[run.pk]), {"text": INVISIBLE}, HTTP_ACCEPT="application/json")
    assert response.status_code == 400 and response.json()["message"] == "the message is empty"
    assert not Directive.objects.filter(action=DirectiveAction.HUMAN_MESSAGE).exists()
