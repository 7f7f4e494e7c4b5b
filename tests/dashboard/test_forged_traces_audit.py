"""Forged traces, as an outside tester writes them (the forged-traces audit): each is refused naming its line and
storing nothing, or stored as an imported claim; none makes the import fail with a server error."""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agentloop.protocol import EVENT_MAX_BYTES, MESSAGE_MAX_BYTES
from runs.models import Run, Step
from runs.services import ServiceError, sha256_text, trace_import
from tests.dashboard.helpers import eval_result, make_user
from tests.dashboard.test_trace_import_rules import as_file, demo_events, refusal
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


def test_a_line_longer_than_any_message_a_worker_may_send_is_refused_unread():
    """Parsing takes many times a line's size in memory: a 32 MiB upload of one line of `{},` took 2.3 GB and 90
    seconds before its refusal. A line over MESSAGE_MAX_BYTES is refused before it is parsed."""
    make_task()
    huge = b"[" + b"{}," * (MESSAGE_MAX_BYTES // 3) + b"{}]\n"
    lines = io.BytesIO(huge + json.dumps(demo_events()[0]).encode() + b"\n")
    with pytest.raises(ServiceError) as refused:
        trace_import(lines=lines, name="huge.jsonl")
    assert str(refused.value) == (
        f"line 1 is {len(huge):,} bytes, over the 8,388,608 a line may hold (the largest message a worker may "
        "send, docs/protocol.md 2.1): it is not read"
    )
    assert not Run.objects.exists()


def test_an_event_over_the_limit_a_worker_is_held_to_is_refused_naming_its_line():
    """docs/protocol.md 2.1: the server stores an event of at most EVENT_MAX_BYTES; an import stored one of any size
    under the upload's limit (32 MiB), which no worker could have sent."""
    events = demo_events()
    tool_result = next(e for e in events if e["kind"] == "tool_result")
    tool_result["payload"]["output"] = "x" * EVENT_MAX_BYTES
    message = refusal(events)
    assert (
        message.startswith(f"line {tool_result['seq'] + 1} holds 4,19")
        and "over the limit of 4,194,304 bytes" in message
    )


def harness_verdict(**fields) -> dict:
    """A harness --trace line (tests.dashboard.helpers.eval_result) with its kernel_sha256 as the harness writes
    it, the sha256 of its kernel_source."""
    verdict = eval_result(3.0) | {"kind": "evaluation"} | fields
    return {"kernel_sha256": sha256_text(verdict["kernel_source"])} | verdict


def test_a_harness_trace_as_the_harness_writes_it_imports():
    make_task()
    run = trace_import(lines=as_file([harness_verdict(), harness_verdict(kernel_source="// v2\n")]), name="t.jsonl")
    assert run.evaluations.count() == 2


@pytest.mark.parametrize(
    "lines, words",
    [
        (
            [harness_verdict(), harness_verdict(task="softmax")],
            "line 2: the verdict is for task 'softmax', not the trace's task 'matmul_cpu'",
        ),
        (
            [harness_verdict(kernel_sha256="0" * 64)],
            "line 1: result.kernel_sha256 '0000000000000000' is not the sha256 of the kernel source",
        ),
    ],
)
def test_a_harness_verdict_of_another_task_or_another_source_is_refused_naming_its_line(lines, words):
    """A trace's claim is shown among its task's kernels, on its source's row: a verdict of another task, or one
    whose kernel_sha256 names another source than the one it carries (no harness writes either), was stored there
    all the same."""
    make_task("softmax")
    assert refusal(lines).startswith(words)


def test_an_agent_traces_evaluation_naming_another_source_is_refused_and_one_that_errored_is_not():
    events = demo_events()
    evaluation = next(e for e in events if e["kind"] == "evaluation")
    evaluation["payload"]["kernel_sha256"] = "f" * 64
    assert refusal(events).startswith(f"line {evaluation['seq'] + 1}: kernel_sha256 'ffffffffffffffff' is not")
    Run.objects.all().delete()
    # The agent's verdict when the harness died hashes the file's bytes, its text decoded with replacements.
    evaluation["payload"]["result"] |= {"status": "error", "scenarios": [], "geomean": {}, "kernel_sha256": "f" * 64}
    assert trace_import(lines=as_file(events), name="t.jsonl").evaluations.filter(status="error").count() == 1


def test_the_task_pages_recent_runs_mark_an_imported_run_and_its_status_as_the_traces_claim(client):
    """A trace that says it succeeded, with an evaluation that confirms its goal by its own figures, is shown
    `succeeded`: the runs list says imported and writes the claim under the status; the task page's recent runs
    showed a bare "Succeeded", as if this site had measured it."""
    events = demo_events()
    goal_check = [e for e in events if e["kind"] == "evaluation"][-1]
    make_task(scenario_ids=[s["id"] for s in goal_check["payload"]["result"]["scenarios"]])
    run = trace_import(lines=as_file(events), name="demo.jsonl")
    assert run.status == "succeeded"
    client.force_login(make_user("vera", "viewer"))
    row = client.get(reverse("task_detail", args=["matmul_cpu"])).content.decode().split(f'data-run="{run.pk}"')[1]
    row = row.split("</tr>")[0]
    assert '<small class="imported"' in row and "the trace&#x27;s claim, not measured here" in row


def with_nul(record: dict) -> str:
    """The record as a JSON line whose "@@" value holds a NUL character (as JSON writes it: \\u0000)."""
    return json.dumps(record).replace('"@@"', '"a\\u0000b"')


def export_with_nul(field: str, value="@@") -> list:
    return [with_nul(run_line() | {field: value})] + [event | {"run_id": 7} for event in demo_events()]


def started_config_with_nul(field: str, value="@@") -> list:
    events = demo_events()
    events[0]["payload"]["config"][field] = value
    return [with_nul(events[0])] + events[1:]


@pytest.mark.parametrize(
    "lines, where",
    [
        (export_with_nul("model"), "line 1: model holds"),
        (export_with_nul("origin"), "line 1: origin holds"),
        (export_with_nul("imported_from"), "line 1: imported_from holds"),
        (export_with_nul("goal", {"baseline": "@@", "speedup": 2.0}), "line 1: goal holds"),
        (started_config_with_nul("model"), "line 1: model holds"),
        (started_config_with_nul("starting_kernel"), "line 1: starting_kernel holds"),
        (started_config_with_nul("task"), "line 1: task holds"),
        ([with_nul(eval_result(3.0) | {"kind": "evaluation", "started_at": "@@"})], "line 1: origin holds"),
    ],
)
def test_a_nul_in_what_the_run_itself_is_made_from_is_refused_the_same_on_every_database(lines, where):
    """PostgreSQL cannot hold a NUL in a text value (its import failed with the database's own words) and SQLite
    stored it raw in the run's row: both now refuse the trace, naming the field and its line. NUL characters in an
    event's payload are escaped, and import (test_nul_escape)."""
    message = refusal(lines)
    assert message.startswith(where) and "a NUL character" in message


def test_a_nul_in_the_traces_name_is_refused_as_it_would_go_into_the_runs_row():
    make_task()
    with pytest.raises(ServiceError, match="file name holds a NUL"):
        trace_import(lines=as_file(demo_events()), name="a\x00b.jsonl")
    assert not Run.objects.exists()


def test_a_nul_in_an_events_payload_is_no_reason_to_refuse_the_trace():
    events = demo_events()
    events[0]["payload"]["config"]["prompt_note"] = "a\x00b"  # in the payload, not the run's row
    make_task()
    assert trace_import(lines=as_file(events), name="t.jsonl").step_count == len(events)


def test_a_trace_saved_with_a_byte_order_mark_imports_as_one_without():
    """Some editors (Windows' Notepad) start a UTF-8 file with U+FEFF; it was refused as "line 1 is not JSON"."""
    make_task()
    plain = trace_import(lines=as_file(demo_events()), name="plain.jsonl")
    marked = trace_import(lines=io.BytesIO(b"\xef\xbb\xbf" + as_file(demo_events()).getvalue()), name="bom.jsonl")
    assert marked.step_count == plain.step_count > 0 and marked.status == plain.status
    Run.objects.all().delete()
    assert refusal(["\ufeff", "\ufeffnot json"]).startswith("line 2 is not JSON")
