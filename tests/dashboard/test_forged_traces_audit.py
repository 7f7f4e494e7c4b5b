"""Forged traces, as an outside tester writes them (the forged-traces audit): each is refused naming its line and
storing nothing, or stored as an imported claim; none makes the import fail with a server error."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from runs.models import Run, Step
from tests.dashboard.helpers import eval_result, make_user
from tests.dashboard.test_trace_import_rules import demo_events, refusal
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db

SURROGATE = '"a\\ud800"'  # a lone surrogate as JSON writes it: no UTF-8 text, and so no database, holds one


def run_line() -> dict:
    return {"v": 1, "type": "run", "id": 7, "task": "matmul_cpu", "model": "m", "created_at": "2026-11-30T11:00:00Z"}


def with_surrogate(record: dict) -> str:
    """The record as a JSON line whose "@@" value is a lone surrogate."""
    return json.dumps(record).replace('"@@"', SURROGATE)


def export_with(field: str) -> list:
    return [with_surrogate(run_line() | {field: "@@"})] + [event | {"run_id": 7} for event in demo_events()]


def started_config_with(field: str) -> list:
    events = demo_events()
    events[0]["payload"]["config"][field] = "@@"
    return [with_surrogate(events[0])] + events[1:]


def harness_line_with(field: str) -> list:
    return [with_surrogate(eval_result(3.0) | {"kind": "evaluation", field: "@@"})]


@pytest.mark.parametrize(
    "lines, where",
    [
        (export_with("model"), "line 1: model holds"),
        (export_with("origin"), "line 1: origin holds"),
        (export_with("imported_from"), "line 1: imported_from holds"),
        (started_config_with("model"), "line 1: payload.config.model holds"),
        (started_config_with("starting_kernel"), "line 1: payload.config.starting_kernel holds"),
        (started_config_with("task"), "line 1: payload.config.task holds"),
        (harness_line_with("kernel_sha256"), "line 1: kernel_sha256 holds"),
    ],
)
def test_a_lone_surrogate_in_what_the_run_itself_is_made_from_is_refused_naming_the_line(lines, where):
    """The run line's and the started config's fields (and a harness trace's first verdict, its origin) make the
    run's own row, written before any event is parsed: a lone surrogate there raised UnicodeEncodeError, a 500."""
    message = refusal(lines)
    assert message.startswith(where) and "'\\ud800', a lone surrogate, at character 1" in message


def test_the_upload_page_answers_a_lone_surrogate_in_the_run_line_with_the_form_not_a_server_error(client):
    make_task()
    client.force_login(make_user("olga", "operator"))
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in export_with("model")) + "\n"
    response = client.post(reverse("trace_import"), {"trace": SimpleUploadedFile("run-7.jsonl", text.encode())})
    assert response.status_code == 400 and "a lone surrogate" in response.content.decode()
    assert not Run.objects.exists() and not Step.objects.exists()
