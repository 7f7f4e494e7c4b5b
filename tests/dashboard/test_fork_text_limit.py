"""A fork's own question is held to 10,000 characters (runs.forms.PERSON_TEXT_MAX) by the service as well as by
the form: docs/fork.md says the service refuses what the page does, with a ServiceError. run_fork took a question
of any length from a caller the form is not in front of."""

import io

import pytest

from runs.forms import PERSON_TEXT_MAX
from runs.models import Run
from runs.services import ServiceError, run_fork, trace_import
from tests.dashboard.helpers import api_models_configured, make_user  # noqa: F401 - the fixture
from tests.dashboard.test_forks import DEMO, QUESTION_SEQ
from tests.foundation.factories import make_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("api_models_configured")]


@pytest.fixture
def parent():
    make_task()
    return trace_import(lines=io.BytesIO(DEMO.read_bytes()), name="demo.jsonl")


def test_a_forks_own_question_at_the_limit_is_taken_whole(parent):
    text = "é" * PERSON_TEXT_MAX
    fork = run_fork(parent=parent, step_seq=QUESTION_SEQ, action="write", text=text, user=make_user("o", "operator"))
    assert fork.fork["decision"]["text"] == text


def test_a_forks_own_question_one_past_the_limit_is_refused_by_the_service_naming_it(parent):
    assert PERSON_TEXT_MAX == 10_000
    with pytest.raises(ServiceError, match=r"at most 10,000 characters \(10,001 given\)"):
        run_fork(
            parent=parent,
            step_seq=QUESTION_SEQ,
            action="write",
            text="y" * (PERSON_TEXT_MAX + 1),
            user=make_user("o", "operator"),
        )
    assert not Run.objects.filter(parent=parent).exists()
