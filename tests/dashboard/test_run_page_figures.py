"""The run page says what each figure is (the audit of 2026-12-05): the feed writes an evaluation as its
Evaluations table does (a speed-up inside the noise is "no difference"), an imported lab trace's evaluations keep
their figure and the set they covered, and the chart's data carries each point's interval and standing."""

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from runs.models import Run
from runs.services import run_claim
from tests.dashboard.helpers import (  # noqa: F401 - api_models_configured: a fixture
    api_models_configured,
    eval_result,
    evaluation_payload,
    make_user,
    make_worker,
)
from tests.dashboard.test_imported_figures import held_run, quick_payload, record
from tests.foundation.factories import make_task


def noisy(payload: dict, low: float, high: float) -> dict:
    """`payload` with an interval on every scenario's speed-up over naive: the candidate's time 1.5 ms held in
    [1.5/high*k, ...]; built so that the geometric mean's interval is about [low, high]."""
    for scenario in payload["result"]["scenarios"]:
        speedup = scenario["speedup"]["naive"]
        base = speedup * scenario["time_ms"]
        scenario["baseline_ms"] = {"naive": base}
        scenario["baseline_ci_ms"] = {"naive": [base, base]}
        scenario["time_ci_ms"] = [base / high, base / low]
    return payload


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def feed_lines(client, run) -> dict[int, str]:
    steps = client.get(reverse("run_steps", args=[run.pk])).json()["steps"]
    return {step["seq"]: step["summary"] for step in steps}


@pytest.mark.django_db
def test_the_feed_writes_a_speedup_inside_the_noise_as_no_difference_like_the_evaluations_table(operator):
    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "evaluation", noisy(quick_payload(1.085, "// a\n"), 0.41, 1.67))
    record(run, 1, "evaluation", noisy(evaluation_payload(1.5, source="// b\n"), 1.4, 1.6))
    lines = feed_lines(operator, run)
    assert lines[0].startswith("correct, no difference (0.410–1.67×) over naive")
    assert "1.085" not in lines[0] and "(tool, quick)" in lines[0]
    assert lines[1].startswith("correct, speedup 1.500× (1.40–1.60×) over naive")
    page = html.unescape(operator.get(reverse("run_detail", args=[run.pk])).content.decode())
    assert "no difference (0.410–1.67×)" in page  # the table says the same


def harness_line(speedup: float, note: str) -> dict:
    """A `python -m gpu_harness eval --trace` line: the verdict alone, no purpose, set or goal."""
    return {"kind": "evaluation", "note": note, **eval_result(speedup, source=f"// {note}\n")}


@pytest.mark.django_db
def test_an_imported_harness_trace_keeps_each_evaluations_figure_and_set_in_the_feed(operator):
    make_task()
    screen = harness_line(2.0, "screen")
    screen["scenarios"] = screen["scenarios"][:1]
    lines_text = "\n".join(json.dumps(line) for line in (harness_line(1.25, "full"), screen))
    response = operator.post(reverse("trace_import"), {"trace": SimpleUploadedFile("lab.jsonl", lines_text.encode())})
    assert response.status_code == 302, response.content.decode()[-600:]
    run = Run.objects.get()
    lines = feed_lines(operator, run)
    assert lines[0].startswith("correct, speedup 1.250× over naive (tool, full, imported, cpu)"), lines[0]
    assert lines[1].startswith("correct, speedup 2.000× over naive (tool, quick, imported on 1 of 2 scenarios, cpu)")
    single = operator.get(reverse("run_step", args=[run.pk, 0])).json()
    assert single["summary"] == lines[0]


def test_the_workers_console_writes_a_speedup_inside_the_noise_as_no_difference_too():
    from agentloop import protocol

    payload = noisy(evaluation_payload(1.158), 0.54, 2.08)
    payload["goal"], payload["goal_met"] = {"baseline": "naive", "speedup": 0.5}, True
    line = protocol.event_summary("evaluation", payload)
    assert line.startswith("correct, no difference (0.540–2.08×) over naive GOAL MET (tool, quick)"), line
    assert protocol.event_summary("evaluation", evaluation_payload(1.2)).startswith("correct, speedup 1.200×")


@pytest.mark.django_db
def test_the_review_queue_shows_the_steps_before_a_question_in_the_feeds_words(operator):
    from tests.dashboard.helpers import question_payload

    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "evaluation", noisy(quick_payload(1.085, "// a\n"), 0.41, 1.67))
    record(run, 1, "question_proposed", question_payload("q1"))
    page = html.unescape(operator.get(reverse("review_queue")).content.decode())
    recent = page[page.index("Last steps before it") :]
    assert "correct, no difference (0.410–1.67×) over naive" in recent and "1.085" not in recent


def imported_lab_run(client) -> Run:
    """An imported harness trace (a released kernel's development run): evaluations only, no usage, no start."""
    make_task()
    lines_text = "\n".join(json.dumps(harness_line(s, f"v{s}")) for s in (1.25, 1.5))
    response = client.post(reverse("trace_import"), {"trace": SimpleUploadedFile("lab.jsonl", lines_text.encode())})
    assert response.status_code == 302
    return Run.objects.get()


def page_of(client, run) -> str:
    return html.unescape(client.get(reverse("run_detail", args=[run.pk])).content.decode())


@pytest.mark.django_db
def test_an_imported_runs_header_puts_the_claim_under_its_own_label_never_under_best(operator):
    run = imported_lab_run(operator)
    page = page_of(operator, run)
    best = page[page.index("<dt>Best speedup") :].split("</div>")[0]
    assert '<dd id="run-best">—</dd>' in best and "1.500" not in best and "run-best-claimed" not in best
    claim = page[page.index("<dt>The trace's claim over naive</dt>") :].split("</div>")[0]
    assert 'id="run-best-claimed"' in claim and "1.500×" in claim and "the trace's claim" in claim


@pytest.mark.django_db
def test_an_imported_run_without_usage_shows_cost_and_tokens_unknown_and_no_host_or_live_feed(operator):
    run = imported_lab_run(operator)
    page = page_of(operator, run)
    assert '<dd id="run-tokens">unknown: the trace records none</dd>' in page
    assert '<dd id="run-cost">unknown: the trace records none</dd>' in page
    assert "$0.0000" not in page and "no worker yet" not in page
    assert "imported: no host of this site ran it" in page
    assert "data-live" not in page  # the feed does not say it follows a run that does not run on
    summary = operator.get(reverse("run_summary", args=[run.pk])).json()
    assert (summary["usage_unknown"], summary["imported"]) == (True, True)


@pytest.mark.django_db
def test_a_run_measured_here_keeps_its_cost_tokens_host_and_live_feed(operator):
    host, _ = make_worker()
    run = held_run(host)
    page = page_of(operator, run)
    assert '<dd id="run-cost">$0.0000</dd>' in page and 'data-live="1"' in page
    assert operator.get(reverse("run_summary", args=[run.pk])).json()["usage_unknown"] is False


@pytest.mark.django_db
def test_fork_here_is_offered_only_on_a_run_that_can_be_forked(operator):
    lab = imported_lab_run(operator)
    page = page_of(operator, lab)
    assert "data-fork-url" not in page and 'id="fork-unavailable"' in page
    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "status", {"status": "running", "reason": "started", "config": {"task": "matmul_cpu"}})
    page = page_of(operator, run)
    assert "data-fork-url" in page and 'id="fork-unavailable"' not in page


@pytest.mark.django_db
@pytest.mark.usefixtures("api_models_configured")  # the fork's model can run here: the refusal is the parent's
def test_a_verify_run_offers_no_fork_and_its_page_and_the_fork_service_say_why(operator):
    """A fork of a "Verify here" run was offered and queued: an agent run with no conversation and the verify
    run's one-evaluation budget, which failed on that budget at once."""
    from runs.services import ServiceError, run_fork
    from runs.services.verify import kernel_verify

    lab = imported_lab_run(operator)
    host, _ = make_worker()
    queued = kernel_verify(kernel=lab.evaluations.first().kernel)
    verify = run_claim(worker=host)
    assert verify.pk == queued.pk
    record(verify, 0, "status", {"status": "running", "reason": "started", "config": {"model": "verify"}})
    record(verify, 1, "evaluation", evaluation_payload(1.5))
    page = html.unescape(page_of(operator, verify))
    assert "data-fork-url" not in page
    assert "No “Fork here”: this is a Verify here run, one full evaluation of a stored kernel with no agent" in page
    with pytest.raises(ServiceError, match="cannot be forked at step #1: this is a Verify here run"):
        run_fork(parent=verify, step_seq=1, model="claude-sonnet-4-6", user=None)
    assert not Run.objects.filter(parent=verify).exists()


@pytest.mark.django_db
def test_a_verify_run_takes_no_message_and_has_no_review_mode(operator, settings):
    from runs.services.verify import kernel_verify

    lab = imported_lab_run(operator)
    verify = kernel_verify(kernel=lab.evaluations.first().kernel)
    page = page_of(operator, verify)
    assert 'id="message-form"' not in page and "approved automatically" not in page
    assert "none: a verify run has no agent" in page


@pytest.mark.django_db
def test_without_javascript_the_page_says_why_the_feed_and_chart_are_empty_and_shows_elapsed(operator):
    from datetime import timedelta

    host, _ = make_worker()
    run = held_run(host)
    Run.objects.filter(pk=run.pk).update(finished_at=run.started_at + timedelta(hours=67, minutes=34, seconds=2))
    page = page_of(operator, run)
    assert '<dd id="run-elapsed">67h 34m 2s</dd>' in page
    assert 'id="feed-noscript"' in page and 'id="speedup-chart-noscript"' in page
    assert page.index("<noscript>") < page.index('id="feed-noscript"')


@pytest.mark.django_db
def test_the_chart_data_carries_each_points_interval_and_standing(operator):
    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "evaluation", noisy(quick_payload(1.085, "// a\n"), 0.41, 1.67))
    record(run, 1, "evaluation", noisy(evaluation_payload(1.5, source="// b\n"), 1.4, 1.6))
    record(run, 2, "evaluation", evaluation_payload(1.7, source="// c\n"))
    chart = operator.get(reverse("run_chart", args=[run.pk])).json()
    quick, full, bare = chart["points"]
    assert (quick["standing"], quick["no_difference"], quick["partial"]) == ("quick", True, "")
    assert [round(v, 2) for v in quick["interval"]] == [0.41, 1.67]
    assert (full["standing"], full["no_difference"]) == ("verified", False)
    assert [round(v, 2) for v in full["interval"]] == [1.4, 1.6]
    assert bare["interval"] is None and bare["standing"] == "verified"
    assert chart["axis_label"] == "speedup over naive"


def best_library_line(speedup: float, scenarios: int = 2) -> dict:
    """A harness line over best_library that timed eager alone, of a task whose libraries are eager and compile."""
    line = harness_line(speedup, f"bl{speedup}")
    line["scenarios"] = line["scenarios"][:scenarios]
    line["libraries"] = ["eager"]
    line["geomean"] = {"best_library": {"speedup": speedup, "count": scenarios}}
    for scenario in line["scenarios"]:
        scenario["speedup"] = {"best_library": speedup}
    return line


@pytest.mark.django_db
def test_an_imported_charts_axis_names_the_scope_timed_and_marks_partial_claims(operator):
    make_task(goal_baseline="best_library", goal_speedup=1.0, spec={"libraries": ["eager", "compile"]})
    lines_text = "\n".join(json.dumps(line) for line in (best_library_line(1.9), best_library_line(2.5, 1)))
    response = operator.post(reverse("trace_import"), {"trace": SimpleUploadedFile("lab.jsonl", lines_text.encode())})
    assert response.status_code == 302, response.content.decode()[-400:]
    chart = operator.get(reverse("run_chart", args=[Run.objects.get().pk])).json()
    assert chart["axis_label"] == "speedup over best_library (best of eager only; not timed: compile)"
    full, subset = chart["points"]
    assert (full["standing"], full["partial"]) == ("imported", "best of eager only; not timed: compile")
    assert subset["partial"] == "on 1 of 2 scenarios · best of eager only; not timed: compile"
    assert chart["best"] == []  # a claim never moves the best-so-far line


@pytest.mark.django_db
def test_the_feed_says_goal_met_and_full_set_by_the_servers_reading_never_the_senders(operator):
    host, _ = make_worker()
    run = held_run(host)  # the task's goal: 2.0x over naive on its full set (n256, n512)
    boast = quick_payload(3.0, "// one scenario\n")
    boast["scenario_set"], boast["goal_met"] = "full", True  # what the worker says of a one-scenario verdict
    record(run, 0, "evaluation", boast)
    short = evaluation_payload(1.5, source="// below the goal\n")
    short["goal_met"] = True
    record(run, 1, "evaluation", short)
    met = evaluation_payload(2.5, source="// at the goal\n")
    met["scenario_set"] = "full"
    record(run, 2, "evaluation", met)  # the worker did not say so; the server's reading does
    lines = feed_lines(operator, run)
    assert "GOAL MET" not in lines[0] and lines[0].endswith("(tool, quick)"), lines[0]
    assert "GOAL MET" not in lines[1], lines[1]
    assert lines[2].startswith("correct, speedup 2.500× over naive GOAL MET (tool, full)"), lines[2]


@pytest.mark.django_db
def test_an_imported_traces_feed_marks_each_evaluation_imported_and_its_goal_met_as_its_claim(operator):
    make_task()
    boast = evaluation_payload(99.0, source="// forged\n")
    boast["scenario_set"], boast["goal_met"] = "full", True
    lines_text = "\n".join(
        json.dumps(
            {
                "v": 1,
                "run_id": "local-1",
                "seq": seq,
                "kind": kind,
                "ts": "2026-12-06T10:00:00+00:00",
                "payload": payload,
                "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
            }
        )
        for seq, (kind, payload) in enumerate(
            [("status", {"status": "running", "reason": "started"}), ("evaluation", boast)]
        )
    )
    response = operator.post(reverse("trace_import"), {"trace": SimpleUploadedFile("run.jsonl", lines_text.encode())})
    assert response.status_code == 302, response.content.decode()[-600:]
    line = feed_lines(operator, Run.objects.get())[1]
    assert "GOAL MET" not in line, line
    assert line.endswith("(tool, full, imported, cpu; goal met: the trace's claim)"), line


@pytest.mark.django_db
def test_the_evaluations_table_and_the_chart_name_the_machine_of_each_figure(operator):
    """One run's figures may come from two cards (a lab's trace holds H100 screens beside H200 ones): each row of
    the Evaluations table and each point of the chart names the machine its verdict ran on, "—" where none."""
    host, _ = make_worker()
    run = held_run(host)
    for seq, device in enumerate(["NVIDIA H200", "NVIDIA H100 80GB HBM3", None]):
        payload = evaluation_payload(1.5 + seq, source=f"// {seq}\n")
        payload["result"]["device_name"] = device
        record(run, seq, "evaluation", payload)
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    table = page[page.index('id="run-evaluations"') :]
    table = table[: table.index("</table>")]
    assert "<th>Machine</th>" in table
    for device in ("<td>NVIDIA H200</td>", "<td>NVIDIA H100 80GB HBM3</td>", "<td>—</td>"):
        assert device in table
    points = operator.get(reverse("run_chart", args=[run.pk])).json()["points"]
    assert [p["device"] for p in points] == ["NVIDIA H200", "NVIDIA H100 80GB HBM3", "—"]


@pytest.mark.django_db
def test_the_evaluation_page_says_which_scenarios_it_ran_by_what_it_ran(operator):
    """A release's results name no set (the page said "scenarios: —" over a full run); a verdict that says "full"
    over a subset is not taken at its word."""
    host, _ = make_worker()
    run = held_run(host)
    whole = evaluation_payload(1.5, source="// whole\n")
    whole.pop("scenario_set", None)
    whole["result"].pop("scenario_set", None)
    record(run, 0, "evaluation", whole)
    part = quick_payload(1.2, "// part\n")
    part["scenario_set"] = part["result"]["scenario_set"] = "full"
    record(run, 1, "evaluation", part)
    pages = [
        html.unescape(operator.get(reverse("evaluation_detail", args=[e.pk])).content.decode())
        for e in run.evaluations.order_by("pk")
    ]
    assert "scenarios: full (2 scenarios)" in pages[0]
    assert "scenarios: a subset (1 of 2 scenarios)" in pages[1]
