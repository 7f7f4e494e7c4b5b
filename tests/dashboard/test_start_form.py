"""The start form offers the models that can run here and says what each needs."""

import re

import pytest
from django.urls import reverse

from runs.model_options import recorded_config
from runs.models import Run
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db

DEMO = "replay:agentloop/replays/matmul_cpu_demo.jsonl"


@pytest.fixture
def operator(client, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "KSEEK_MODEL"):
        monkeypatch.delenv(name, raising=False)
    client.force_login(make_user("olga", "operator"))
    return client


def start_form(client) -> str:
    html = client.get(reverse("run_start")).content.decode()
    return html[html.index('id="start-run"') :]


def offered(html: str) -> list[str]:
    datalist = html[html.index('<datalist id="model-options">') : html.index("</datalist>")]
    return re.findall(r'<option value="([^"]+)"', datalist)


def model_value(html: str) -> str:
    return re.search(r'<input type="text" name="model" value="([^"]*)"', html).group(1)


def test_without_an_api_key_the_form_offers_the_recorded_replays_and_says_what_the_others_need(operator):
    html = start_form(operator)
    assert offered(html) == [DEMO] and model_value(html) == DEMO
    assert "recorded run of matmul_cpu" in html and "with no API key" in html
    assert "ANTHROPIC_API_KEY in the worker&#x27;s environment: not set here" in html
    assert "OPENAI_BASE_URL in the worker&#x27;s environment" in html
    # The fields' help text is on the page.
    assert 'id="help-starting_kernel"' in html and "a kernel stored here" in html
    assert 'id="help-model"' in html


def test_a_configured_api_model_is_offered_first(operator, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9000/v1")
    html = start_form(operator)
    assert offered(html) == [DEMO, "claude-sonnet-4-6", "openai:MODEL"]
    assert model_value(html) == "claude-sonnet-4-6"
    assert "ANTHROPIC_API_KEY in the worker&#x27;s environment: set here" in html
    assert "set here (http://127.0.0.1:9000/v1)" in html


def test_a_replay_started_from_the_form_starts_from_its_recorded_kernel_and_goal(operator):
    task = make_task()
    response = operator.post(reverse("run_start"), {"task": task.name, "model": DEMO, "review_mode": "auto"})
    assert response.status_code == 302
    run = Run.objects.get()
    recorded = recorded_config(__import__("pathlib").Path("agentloop/replays/matmul_cpu_demo.jsonl"))
    assert run.starting_kernel == recorded["starting_kernel"]
    assert run.goal == (recorded["goal"]["baseline"], recorded["goal"]["speedup"])


def test_a_replay_on_another_task_is_refused_with_the_task_it_records(operator):
    other = make_task("other_cpu")
    response = operator.post(reverse("run_start"), {"task": other.name, "model": DEMO, "review_mode": "auto"})
    assert response.status_code == 400
    assert "this recording is of task matmul_cpu, not other_cpu" in response.content.decode()
    assert not Run.objects.exists()
