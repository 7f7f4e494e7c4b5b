"""A message to a running agent is held to the limit of every text a person writes to it (runs.forms.
PERSON_TEXT_MAX, 10,000 characters, docs/protocol.md 2.3): one at the limit is sent whole, one past it is refused
with words naming the limit and its length (it was "the message is empty or too long"), and nothing is sent."""

import pytest
from django.urls import reverse

from runs.forms import PERSON_TEXT_MAX
from runs.models import Directive, DirectiveAction
from runs.services import run_claim
from tests.dashboard.helpers import make_user, make_worker
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(client):
    host, _ = make_worker()
    make_run()
    client.force_login(make_user("rita", "reviewer"))
    return run_claim(worker=host)


def test_a_message_at_the_limit_is_sent_whole(client, running):
    text = "é" * PERSON_TEXT_MAX
    response = client.post(reverse("run_message", args=[running.pk]), {"text": text}, HTTP_ACCEPT="application/json")
    assert response.status_code == 200 and response.json()["ok"]
    assert Directive.objects.get(action=DirectiveAction.HUMAN_MESSAGE).fields["text"] == text


def test_a_message_one_past_the_limit_is_refused_naming_the_limit_and_nothing_is_sent(client, running):
    response = client.post(
        reverse("run_message", args=[running.pk]),
        {"text": "y" * (PERSON_TEXT_MAX + 1)},
        HTTP_ACCEPT="application/json",
    )
    assert PERSON_TEXT_MAX == 10_000
    assert response.status_code == 400
    assert "at most 10000 characters (it has 10001)" in response.json()["message"]
    assert not Directive.objects.filter(action=DirectiveAction.HUMAN_MESSAGE).exists()


def test_the_page_flashes_the_limit_too(client, running):
    response = client.post(
        reverse("run_message", args=[running.pk]), {"text": "y" * (PERSON_TEXT_MAX + 1)}, follow=True
    )
    assert "at most 10000 characters (it has 10001)" in response.content.decode()
