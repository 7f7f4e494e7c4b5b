"""Every page renders for a viewer, and every action is refused to a role below the one it needs."""

import json
import re

import pytest
from django.urls import reverse

from runs.forms import PERSON_TEXT_MAX
from runs.models import Directive, Evaluation, Kernel, Question, QuestionStatus, Run, RunStatus, WorkerHost
from runs.services import (
    kernel_record,
    kernel_release,
    question_propose,
    run_claim,
    trace_import,
    worker_connected,
    worker_disconnected,
    worker_events_record,
)
from tests.dashboard.helpers import (
    api_models_configured,  # noqa: F401 - the fixture
    evaluation_payload,
    event,
    make_user,
    make_worker,
    question_payload,
)
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def worker_run(**fields):
    host, _ = make_worker()
    make_run(**fields)
    return run_claim(worker=host)


def record(run, seq, kind, payload):
    """Store an event as the server stores its worker's: through the one store, with what it implies."""
    [outcome] = worker_events_record(items=[(run.worker, event(run.pk, seq, kind, payload))])
    assert outcome.stored, outcome.error


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


@pytest.fixture
def reviewer(client):
    client.force_login(make_user("rita", "reviewer"))
    return client


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def test_the_migration_makes_the_three_roles():
    from django.contrib.auth.models import Group

    assert set(Group.objects.values_list("name", flat=True)) >= {"viewer", "reviewer", "operator"}


@pytest.mark.parametrize("name", ["home", "review_queue", "kernels", "bank", "trace_import", "workers"])
def test_every_page_sends_an_anonymous_visitor_to_log_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_a_viewer_sees_every_page_of_a_run_with_an_evaluation_and_a_question(viewer):
    run = worker_run()
    record(run, 0, "status", {"status": "running", "reason": "started"})
    record(run, 1, "evaluation", evaluation_payload(1.5, failing="n512"))
    record(run, 2, "evaluation", evaluation_payload(1.8, source="// faster\n"))
    record(run, 3, "question_proposed", question_payload("q-1", "Is the loop order right?"))
    evaluation = Evaluation.objects.filter(run=run, status="incorrect").get()
    kernel = Kernel.objects.get(run=run, source="// faster\n")
    pages = {
        reverse("home"): "<h1>Runs</h1>",
        reverse("run_detail", args=[run.pk]): "Speedup over evaluations",
        reverse("review_queue"): "Is the loop order right?",
        reverse("kernels"): kernel.sha256[:12],
        reverse("kernel_detail", args=[kernel.pk]): "Came from",
        reverse("evaluation_detail", args=[evaluation.pk]): "1 failing scenario",
        reverse("bank"): "Question bank",
        reverse("kernel_diff") + f"?a={evaluation.kernel_id}&b={kernel.pk}": "faster",
    }
    for url, text in pages.items():
        response = viewer.get(url)
        assert response.status_code == 200, url
        assert text in response.content.decode(), url


@pytest.mark.parametrize("name", ["trace_import", "workers"])
def test_operator_pages_are_forbidden_to_a_reviewer(reviewer, name):
    assert reviewer.get(reverse(name)).status_code == 403


def test_a_viewer_may_not_decide_message_start_or_stop(viewer):
    run = worker_run()
    record(run, 0, "question_proposed", question_payload("q-1"))
    question = Question.objects.get(run=run)
    assert viewer.post(reverse("review_decide", args=[question.pk]), {"decision": "approve"}).status_code == 403
    assert viewer.post(reverse("run_message", args=[run.pk]), {"text": "hi"}).status_code == 403
    assert viewer.post(reverse("run_control", args=[run.pk]), {"action": "stop"}).status_code == 403
    assert (
        viewer.post(reverse("run_start"), {"task": run.task.name, "model": "m", "review_mode": "auto"}).status_code
        == 403
    )
    question.refresh_from_db()
    assert question.status == QuestionStatus.PROPOSED and not Directive.objects.exists()
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING


def test_a_reviewer_may_decide_and_message_but_not_control_runs(reviewer):
    run = worker_run()
    record(run, 0, "question_proposed", question_payload("q-1"))
    question = Question.objects.get(run=run)
    response = reviewer.post(
        reverse("review_decide", args=[question.pk]), {"decision": "veto"}, HTTP_ACCEPT="application/json"
    )
    assert response.json() == {"ok": True, "status": "vetoed", "question_id": question.pk}
    again = reviewer.post(
        reverse("review_decide", args=[question.pk]), {"decision": "approve"}, HTTP_ACCEPT="application/json"
    )
    assert again.status_code == 409
    assert reviewer.post(reverse("run_message", args=[run.pk]), {"text": "look at the cache"}).status_code == 302
    assert [d.action for d in Directive.objects.order_by("pk")] == ["question_decision", "human_message"]
    assert reviewer.post(reverse("run_control", args=[run.pk]), {"action": "pause"}).status_code == 403


def test_an_edit_without_text_is_refused_with_a_message(reviewer):
    run = worker_run()
    record(run, 0, "question_proposed", question_payload("q-1"))
    question = Question.objects.get(run=run)
    response = reviewer.post(
        reverse("review_decide", args=[question.pk]), {"decision": "edit", "text": " "}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400 and "text" in response.json()["error"]


def test_an_edit_over_the_length_limit_is_refused_for_its_length_alone_and_the_question_stays_proposed(reviewer):
    run = worker_run()
    record(run, 0, "question_proposed", question_payload("q-1"))
    question = Question.objects.get(run=run)
    response = reviewer.post(
        reverse("review_decide", args=[question.pk]),
        {"decision": "edit", "text": "y" * (PERSON_TEXT_MAX + 1)},
        HTTP_ACCEPT="application/json",
    )
    error = response.json()["error"]
    # One limit for every text a person writes to the agent: an edit was held to 4,000, a fork's question to 10,000.
    assert PERSON_TEXT_MAX == 10_000
    assert response.status_code == 400 and "at most 10000 characters (it has 10001)" in error
    assert "needs the question's text" not in error
    assert Question.objects.get(pk=question.pk).status == QuestionStatus.PROPOSED


@pytest.mark.usefixtures("api_models_configured")
def test_an_operator_starts_a_run_from_the_page_with_budgets(operator):
    task = make_task()
    response = operator.post(
        reverse("run_start"),
        {
            "task": task.name,
            "model": "claude-sonnet-4-6",
            "review_mode": "review",
            "budget_steps": "40",
            "budget_cost_usd": "1.5",
        },
    )
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.pk])
    assert (run.status, run.budget_steps, run.started_by.username) == (RunStatus.QUEUED, 40, "olga")


def test_a_start_with_a_timeout_mode_but_no_timeout_is_refused_on_the_form(operator):
    task = make_task()
    response = operator.post(reverse("run_start"), {"task": task.name, "model": "m", "review_mode": "review_timeout"})
    assert response.status_code == 400 and not Run.objects.exists()
    assert "a timeout is needed" in response.content.decode()


def test_an_operator_pauses_resumes_and_stops_a_run_and_a_stopped_run_cannot_resume(operator):
    run = worker_run()
    for action, status in (("pause", "paused"), ("resume", "running"), ("stop", "stopped")):
        operator.post(reverse("run_control", args=[run.pk]), {"action": action})
        assert Run.objects.get(pk=run.pk).status == status
    response = operator.post(
        reverse("run_control", args=[run.pk]), {"action": "resume"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 409 and "finished" in response.json()["message"]
    assert list(Directive.objects.values_list("action", flat=True)) == ["pause", "resume", "stop"]


def test_an_operator_creates_a_worker_token_shown_once_and_revokes_it(operator):
    page = operator.post(reverse("workers"), {"name": "gpu-z", "gpus": "H200,H200"}).content.decode()
    host = WorkerHost.objects.get(name="gpu-z")
    assert host.token_prefix in page and 'id="new-token"' in page
    assert 'id="new-token"' not in operator.get(reverse("workers")).content.decode()
    operator.post(reverse("worker_revoke", args=[host.pk]))
    host.refresh_from_db()
    assert host.revoked_at is not None


def test_the_workers_page_and_a_run_page_say_which_host_is_offline_since_when(operator):
    run = worker_run()
    host = run.worker

    def row():
        page = operator.get(reverse("workers")).content.decode()
        return re.search(rf"<tr><td>{host.name}</td>.*?</tr>", page, re.S).group(0)

    assert "never connected" in row()
    offline_note = re.compile(r'<span id="run-worker-offline"[^>]*>')
    worker_connected(worker=host, connection="specific.abc")
    assert "connected</span> since" in row()
    assert "hidden" in offline_note.search(operator.get(reverse("run_detail", args=[run.pk])).content.decode()).group(0)

    assert worker_disconnected(worker=host, connection="specific.abc")
    host.refresh_from_db()
    since = host.disconnected_at.strftime("%Y-%m-%d %H:%M:%S")
    assert f"offline</span> since {since}" in row()
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "hidden" not in offline_note.search(page).group(0) and f"offline since {since}" in page


def test_the_kernel_download_is_the_source_with_a_cu_name():
    from django.test import Client

    kernel = kernel_release(kernel=kernel_record(source="__global__ void k() {}\n", language="cuda"), name="attn-v1")
    client = Client()
    client.force_login(make_user("vera"))
    response = client.get(reverse("kernel_download", args=[kernel.pk]))
    assert response.content == b"__global__ void k() {}\n"
    assert response["Content-Disposition"] == 'attachment; filename="attn-v1.cu"'


def test_kernel_source_is_highlighted_and_shows_the_question_before_it(viewer):
    run = worker_run()
    record(run, 0, "question_proposed", question_payload("q-1", "Have you tried blocking?"))
    record(run, 1, "question_decided", {"question_ref": "q-1", "action": "approve", "by": "auto"})
    record(run, 2, "evaluation", evaluation_payload(1.9, source="int main() { return 0; }\n"))
    kernel = Kernel.objects.get(run=run)
    page = viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    assert 'class="source' in page and '<span class="kt">int</span>' in page
    assert "Have you tried blocking?" in page.split('id="question-before"')[1].split("</dd>")[0]


def test_plotly_is_served_from_the_installed_package_and_pygments_css_too(client):
    response = client.get(reverse("plotly_js"))
    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and b"plotly" in body[:2000].lower() and len(body) > 1_000_000
    assert ".source" in client.get(reverse("pygments_css")).content.decode()


def test_the_pending_count_is_in_the_navigation_of_every_page(viewer):
    run = worker_run()
    question_propose(run=run, text="one?", source="self")
    question_propose(run=run, text="two?", source="self")
    page = viewer.get(reverse("kernels")).content.decode()
    assert 'id="pending-count" class="badge badge-on"' in page and ">2</span>" in page
    assert viewer.get(reverse("pending_count")).json() == {"pending": 2}


def test_the_runs_list_filters_by_task(viewer):
    make_run(task=make_task("alpha"), model="model-alpha")
    make_run(task=make_task("beta"), model="model-beta")
    page = viewer.get(reverse("home") + "?task=beta").content.decode()
    assert "model-beta" in page and "model-alpha" not in page


def test_a_trace_export_imports_back_as_an_equal_run(operator):
    run = worker_run()
    record(run, 0, "status", {"status": "running", "reason": "started"})
    record(run, 1, "question_proposed", question_payload("q-1"))
    record(run, 2, "question_decided", {"question_ref": "q-1", "action": "edit", "text": "Better?", "by": "auto"})
    record(run, 3, "evaluation", evaluation_payload(2.4))  # the goal is 2x: a stored verdict confirms the success
    record(run, 4, "status", {"status": "succeeded", "reason": "goal_met"})
    exported = b"".join(operator.get(reverse("trace_export", args=[run.pk])).streaming_content).decode().splitlines()
    kinds = [json.loads(line).get("kind") or json.loads(line)["type"] for line in exported]
    assert kinds == [
        "run",
        "status",
        "question_proposed",
        "question_decided",
        "evaluation",
        "status",
        "question",
        "evaluation",
    ]

    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("run.jsonl", "\n".join(exported).encode())
    response = operator.post(reverse("trace_import"), {"trace": upload})
    imported = Run.objects.exclude(pk=run.pk).get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[imported.pk])
    # The trace's figures are its claims: the run keeps its outcome, but no verified best (issue 34).
    assert (imported.step_count, imported.status, imported.best_speedup) == (5, "succeeded", None)
    question = Question.objects.get(run=imported)
    assert (question.status, question.text, question.original_text) == (
        "edited",
        "Better?",
        "What limits the kernel now?",
    )


def test_the_trace_export_says_which_question_a_reviewer_wrote_in_place_of_the_proposal(reviewer):
    run = worker_run()
    record(run, 0, "question_proposed", question_payload("q-1"))
    record(run, 1, "question_proposed", question_payload("q-2"))
    for ref, decision in (("q-1", "edit"), ("q-2", "replace")):
        question = next(q for q in Question.objects.filter(run=run) if q.step.payload["question_ref"] == ref)
        answer = reviewer.post(
            reverse("review_decide", args=[question.pk]),
            {"decision": decision, "text": f"{decision}: what now?"},
            HTTP_ACCEPT="application/json",
        )
        assert answer.status_code == 200, answer.content
    exported = b"".join(reviewer.get(reverse("trace_export", args=[run.pk])).streaming_content).decode()
    lines = [json.loads(line) for line in exported.splitlines()]
    questions = {q["text"]: q for q in lines if q.get("type") == "question"}
    assert questions["edit: what now?"]["replaced"] is False and questions["replace: what now?"]["replaced"] is True
    assert {q["status"] for q in questions.values()} == {"edited"}
    assert all(q["trace_reviewer"] is None and q["trace_proposed_by"] is None for q in questions.values())


def test_a_harness_trace_imports_as_a_run_of_evaluations():
    from tests.dashboard.helpers import eval_result

    make_task()
    lines = [
        json.dumps({"kind": "evaluation", "note": "first", "summary": "x", **eval_result(1.2)}),
        json.dumps({"kind": "evaluation", "note": "", "summary": "y", **eval_result(2.4, source="// v2\n")}),
    ]
    run = trace_import(lines=lines, name="matmul.trace")
    assert run.step_count == 2 and run.best_speedup is None and run.model == "import:matmul.trace"
    assert Evaluation.objects.filter(run=run).count() == 2


def test_a_broken_trace_is_refused_with_the_line_number(operator):
    from django.core.files.uploadedfile import SimpleUploadedFile

    make_task()
    upload = SimpleUploadedFile("bad.jsonl", b'{"v":1}\nnot json\n{"v":1}\n')
    response = operator.post(reverse("trace_import"), {"trace": upload})
    assert response.status_code == 400 and "line 2 is not JSON" in response.content.decode()
    assert not Run.objects.exists()


def test_a_trace_of_an_unknown_task_is_refused():
    from runs.services import ServiceError

    with pytest.raises(ServiceError, match="not known"):
        trace_import(lines=[json.dumps({"kind": "evaluation", "note": "", "task": "nope", "scenarios": []})], name="x")


# Bad input answered as bad input (issue 15, finding 18): a form error or a 400 with the reason, never a 500.


def envelope(seq: int, kind: str, payload: dict, **fields) -> dict:
    """A trace line as the agent loop writes it (docs/protocol.md 1.1), with `fields` replaced."""
    return {
        "v": 1,
        "run_id": "local-1",
        "seq": seq,
        "kind": kind,
        "ts": "2026-11-30T12:00:00+00:00",
        "payload": payload,
        "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
    } | fields


# A model call's usage: the only kind whose counts a run's totals take (docs/protocol.md 1.1).
USAGE_PAYLOAD = {"purpose": "turn", "model": "m", "tokens_in": 1, "tokens_out": 2, "cost_usd": 0}
NOTE_LINE = json.dumps(
    envelope(0, "status", {"status": "running", "reason": "started", "config": {"task": "matmul_cpu"}})
)


START_FORM_MAX = {
    "budget_steps": 1_000_000,
    "budget_tokens": 10**12,
    "budget_wall_s": 30 * 86_400,
    "budget_evaluations": 100_000,
    "review_timeout_s": 7 * 86_400,
    "budget_cost_usd": 100_000,
}


@pytest.mark.parametrize("field", sorted(START_FORM_MAX))
@pytest.mark.parametrize("value", ["99999999999999999999", "9223372036854775808", "2147483648"])
def test_a_budget_or_timeout_too_large_for_its_column_is_a_form_error_on_the_start_form(operator, field, value):
    if value == "2147483648" and field == "budget_tokens":
        pytest.skip("tokens are a 64-bit column, and 2**31 tokens a budget the form takes")
    task = make_task()
    form = {"task": task.name, "model": "m", "review_mode": "review_timeout", "review_timeout_s": "60", field: value}
    response = operator.post(reverse("run_start"), form)
    assert response.status_code == 400 and not Run.objects.exists()
    assert (
        f'class="error">Ensure this value is less than or equal to {START_FORM_MAX[field]}' in response.content.decode()
    )


@pytest.mark.usefixtures("api_models_configured")
def test_each_budget_is_taken_up_to_its_ceiling_and_refused_above_it_on_either_database(operator):
    task = make_task()
    at_ceiling = {field: str(ceiling) for field, ceiling in START_FORM_MAX.items()}
    form = {"task": task.name, "model": "m", "review_mode": "review_timeout"}
    for field, ceiling in START_FORM_MAX.items():
        response = operator.post(reverse("run_start"), {**form, **at_ceiling, field: str(ceiling + 1)})
        assert response.status_code == 400 and not Run.objects.exists(), field
    response = operator.post(reverse("run_start"), {**form, **at_ceiling})
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert (Run.objects.get().budget_tokens, Run.objects.get().budget_steps) == (10**12, 1_000_000)


@pytest.mark.parametrize(
    "query, reason",
    [
        ("limit=abc", "limit must be a whole number from 1 to 500, not 'abc'"),
        ("limit=0", "limit must be"),
        ("limit=-5", "limit must be"),
        ("limit=501", "limit must be"),
        ("limit=99999999999999999999", "limit must be"),
        ("limit=1e3", "limit must be"),
        ("limit=%207", "limit must be"),
        ("after=abc", "after must be a whole number from -1 to 2147483647"),
        ("after=-2", "after must be"),
        ("after=2147483648", "after must be"),
        ("after=" + "9" * 5000, "after must be"),
        ("before=1.5", "before must be"),
        ("around=-99999999999999999999", "around must be"),
        ("kind=bogus", "unknown kind 'bogus'"),
    ],
)
def test_the_steps_api_answers_a_bad_query_parameter_with_400_and_the_reason(viewer, query, reason):
    run = make_run()
    response = viewer.get(reverse("run_steps", args=[run.pk]) + "?" + query)
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert reason in response.json()["error"]


def test_a_kernel_diff_with_an_id_that_is_not_a_number_is_a_bad_request(viewer):
    response = viewer.get(reverse("kernel_diff") + "?a=abc&b=1")
    assert response.status_code == 400 and "pick two kernels" in response.content.decode()


def upload(name: str, content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


@pytest.mark.parametrize(
    "bad_line, reason",
    [
        (b"[" * 100_000 + b"]" * 100_000, "line 1 nests deeper than 64 levels"),
        (
            json.dumps(
                envelope(0, "tool_call", {"call_id": "c1", "name": "shell", "input": json.loads("[" * 500 + "]" * 500)})
            ).encode(),
            "line 1 nests deeper than 64 levels",
        ),
        (
            json.dumps(envelope(2**31, "note", {"text": "a", "level": "info"})).encode(),
            "seq must be at most 2147483647",
        ),
        (
            json.dumps(envelope(0, "note", {"text": "a", "level": "info"}, usage={"tokens_in": 2**40})).encode(),
            "usage.tokens_in must be at most 2147483647",
        ),
        (
            json.dumps(envelope(0, "note", {"text": "a", "level": "info"}, ts="2026-13-45T99:00:00")).encode(),
            "timestamp",
        ),
        (b"\xff\xfe not utf-8", "line 1 is not UTF-8 text"),
    ],
)
def test_a_trace_line_the_import_cannot_take_is_refused_on_the_form_and_nothing_is_stored(operator, bad_line, reason):
    make_task()
    response = operator.post(
        reverse("trace_import"), {"trace": upload("bad.jsonl", bad_line + b"\n" + NOTE_LINE.encode())}
    )
    assert response.status_code == 400 and reason in response.content.decode()
    assert not Run.objects.exists()


def test_a_trace_over_the_upload_limit_is_refused_naming_the_limit_and_nothing_is_stored(operator, settings):
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES = 4096
    make_task()
    response = operator.post(
        reverse("trace_import"), {"trace": upload("big.jsonl", ((NOTE_LINE + "\n") * 100).encode())}
    )
    assert response.status_code == 413
    page = " ".join(response.content.decode().split())
    assert "the import takes at most 4,096 bytes (0.004 MiB) (KSEEK_TRACE_UPLOAD_MAX_BYTES=4096)" in page
    assert not Run.objects.exists()
    # A file within the limit is taken; one over FILE_UPLOAD_MAX_MEMORY_SIZE from its temporary file, line by line.
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES, settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 2**20, 1024
    lines = [NOTE_LINE] + [
        json.dumps(envelope(seq, "usage", USAGE_PAYLOAD, usage={"tokens_in": 1, "tokens_out": 2, "cost_usd": 0}))
        for seq in range(1, 2500)
    ]
    response = operator.post(reverse("trace_import"), {"trace": upload("long.jsonl", "\n".join(lines).encode())})
    run = Run.objects.get()
    assert response.status_code == 302
    assert (run.step_count, run.last_seq, run.tokens_in, run.tokens_out, run.status) == (
        2500,
        2499,
        2499,
        4998,
        "stopped",
    )
