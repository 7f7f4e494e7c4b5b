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


# Model fields a start must refuse where the operator wrote them, and what the refusal names (issue 34 item 11).
REFUSED_MODELS = [
    ("replay:/etc/passwd", "names no recording this site holds"),
    ("replay:../../../../etc/passwd", "names no recording this site holds"),
    ("replay:agentloop/replays/../../../../etc/passwd", "names no recording this site holds"),
    ("replay:agentloop/replays/missing.jsonl", "names no recording this site holds"),
    ("verify", "start it from that page"),
    ("claude-sonnet-4-6", "it needs ANTHROPIC_API_KEY in the worker&#x27;s environment: not set here"),
    ("openai:qwen3-coder", "it needs OPENAI_BASE_URL in the worker&#x27;s environment"),
    ("openai:", "needs the model&#x27;s name"),
]


@pytest.mark.parametrize("model,reason", REFUSED_MODELS)
def test_the_start_form_refuses_a_model_that_cannot_run_here_with_the_reason_and_queues_nothing(
    operator, model, reason
):
    task = make_task()
    response = operator.post(reverse("run_start"), {"task": task.name, "model": model, "review_mode": "auto"})
    page = response.content.decode()
    assert response.status_code == 400 and reason in page, page[-3000:]
    assert not Run.objects.exists()


@pytest.mark.parametrize("model,reason", REFUSED_MODELS)
def test_the_study_form_refuses_such_a_model_as_its_model_or_as_one_of_its_values(operator, model, reason):
    task = make_task()
    form = {"task": task.name, "review_mode": "auto"}
    as_model = operator.post(
        reverse("study_start"), {**form, "model": model, "setting": "questions", "values": "on,off"}
    )
    as_value = operator.post(
        reverse("study_start"), {**form, "model": DEMO, "setting": "model", "values": f"{DEMO},{model}"}
    )
    for response in (as_model, as_value):
        assert response.status_code == 400 and reason in response.content.decode()
    assert not Run.objects.exists()


def test_the_study_service_refuses_such_a_model_and_queues_nothing(operator):
    from runs.models import Study
    from runs.services import ServiceError, study_start

    for model, _ in REFUSED_MODELS:
        with pytest.raises(ServiceError):
            study_start(task=make_task(), setting="model", values=[DEMO, model], model=DEMO)
    assert not Run.objects.exists() and not Study.objects.exists()


def test_a_fork_refuses_such_a_model_from_its_form_and_its_service(operator):
    import io

    from runs.services import ServiceError, run_fork, trace_import

    make_task()
    parent = trace_import(lines=io.BytesIO(open("agentloop/replays/matmul_cpu_demo.jsonl", "rb").read()), name="d")
    for model, reason in REFUSED_MODELS:
        response = operator.post(reverse("run_fork", args=[parent.pk]), {"seq": "1", "model": model})
        assert response.status_code == 400 and reason in response.content.decode(), model
        with pytest.raises(ServiceError):
            run_fork(parent=parent, step_seq=1, model=model)
    assert list(Run.objects.values_list("pk", flat=True)) == [parent.pk]
    # The shipped recording forks.
    assert operator.post(reverse("run_fork", args=[parent.pk]), {"seq": "1", "model": DEMO}).status_code == 302


def test_with_a_key_and_a_server_address_set_here_the_api_models_start(operator, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9000/v1")
    task = make_task()
    for model in ("claude-sonnet-4-6", "claude-opus-4-1", "openai:qwen3-coder"):
        response = operator.post(reverse("run_start"), {"task": task.name, "model": model, "review_mode": "auto"})
        assert response.status_code == 302, model
    assert sorted(Run.objects.values_list("model", flat=True)) == [
        "claude-opus-4-1",
        "claude-sonnet-4-6",
        "openai:qwen3-coder",
    ]
