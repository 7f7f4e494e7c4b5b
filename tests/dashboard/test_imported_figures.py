"""Only a harness measured here is verified (issue 34, items 1, 2, 3 and 7): a trace's figures stay its claims,
marked imported on every page, and never a "best" or "verified" figure; a quick-set figure is labelled quick;
an honest round trip keeps the run's goal and outcome; a malformed goal is refused at import with its line; an
import notifies no one. Runs are made through the real event store and trace import, pages through the views."""

import html
import io
import json
import math
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from questionbank.bank import load_bank
from questionbank.services import bank_sync
from runs import notify
from runs.models import Kernel, ReviewMode, Run
from runs.selectors_bank import selection_stats
from runs.services import run_claim, run_start, sha256_text, worker_events_record
from tests.dashboard.helpers import (
    eval_result,
    evaluation_payload,
    event,
    make_user,
    make_worker,
    question_payload,
)
from tests.dashboard.test_notify import Receiver
from tests.foundation.factories import make_task

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
FORGED_SOURCE = 'extern "C" int kseek_matmul(const float*, const float*, float*, int, int, int) { return 0; }\n'


def record(run, seq, kind, payload):
    [outcome] = worker_events_record(items=[(run.worker, event(run.pk, seq, kind, payload))])
    assert outcome.stored, outcome.error


def held_run(host, **fields):
    run = run_start(task=make_task(), model="claude-sonnet-4-6", **fields)
    assert run_claim(worker=host).pk == run.pk
    return Run.objects.get(pk=run.pk)


def quick_payload(speedup, source):
    """An all-correct verdict on one scenario of the task's two: a quick-set figure."""
    payload = evaluation_payload(speedup, source=source)
    payload["result"]["scenarios"] = payload["result"]["scenarios"][:1]
    payload["result"]["geomean"]["naive"]["count"] = 1
    return payload


def shown(response) -> str:
    """A page as its reader sees its text: HTML entities unescaped."""
    return html.unescape(response.content.decode())


def exported(client, run) -> list[dict]:
    body = b"".join(client.get(reverse("trace_export", args=[run.pk])).streaming_content).decode()
    return [json.loads(line) for line in body.splitlines()]


def import_lines(client, records, name="run.jsonl"):
    text = "\n".join(json.dumps(r) if isinstance(r, dict) else r for r in records)
    return client.post(reverse("trace_import"), {"trace": SimpleUploadedFile(name, text.encode())})


def forge(records) -> list[dict]:
    """What issue 34 did: a do-nothing kernel as every evaluation's source, 99 as every speed-up."""
    for record_ in records:
        if record_.get("kind") != "evaluation":
            continue
        payload = record_["payload"]
        result = payload["result"]
        payload["kernel_source"] = result["kernel_source"] = FORGED_SOURCE
        payload["speedup"] = 99.0
        result["geomean"] = {name: {"speedup": 99.0, "count": 2} for name in result["geomean"]}
        for scenario in result["scenarios"]:
            scenario["speedup"] = {name: 99.0 for name in scenario["speedup"]}
    return records


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


@pytest.mark.django_db
def test_a_forged_import_is_marked_imported_everywhere_and_never_the_verified_best(operator):
    host, _ = make_worker()
    measured = held_run(host)
    record(measured, 0, "evaluation", evaluation_payload(1.5, source="// measured here\n"))
    record(measured, 1, "status", {"status": "failed", "reason": "budget_steps"})
    forged = forge(exported(operator, measured))
    status = next(r for r in forged if r.get("kind") == "status")
    status["payload"] = {"status": "succeeded", "reason": "goal_met", "detail": "goal confirmed by a full evaluation"}
    assert import_lines(operator, forged).status_code == 302
    imported = Run.objects.exclude(pk=measured.pk).get()
    claim = Kernel.objects.get(run=imported)

    kernels = shown(operator.get(reverse("kernels")))
    best = kernels[kernels.index('id="best-per-task"') : kernels.index("<h2>Released")]
    assert "1.500×" in best and "99.000×" not in best  # the best per task is the one measured here
    groups = kernels[kernels.index('id="kernel-groups"') :]
    forged_row = groups[groups.index(f'data-sha="{claim.sha256}"') :].split("</tr>")[0]
    assert "imported" in forged_row and "99.000× (imported: a trace's claim, on cpu, not measured here)" in forged_row
    assert forged_row.split('class="best-verified">')[1].startswith("—")  # no verified figure of its own

    page = shown(operator.get(reverse("run_detail", args=[imported.pk])))
    assert '<dd id="run-best">—</dd>' in page
    assert "99.000× (imported: the trace's claim, not measured here)" in page
    assert "the trace's claim, not measured here: goal_met" in page  # its outcome is the trace's word
    assert "99.000× (imported)" in page  # its Evaluations row
    assert imported.best_speedup is None and imported.best_speedups == {}

    kernel_page = shown(operator.get(reverse("kernel_detail", args=[claim.pk])))
    assert '<small class="imported">imported</small>' in kernel_page
    assert "imported: a trace's claim, not measured here" in kernel_page and 'id="verify-here"' in kernel_page
    evaluation = claim.evaluations.get()
    evaluation_page = shown(operator.get(reverse("evaluation_detail", args=[evaluation.pk])))
    assert 'data-standing="imported"' in evaluation_page

    compare = operator.get(reverse("run_compare") + f"?runs={measured.pk},{imported.pk}&format=json").json()
    by_run = {row["run_id"]: row for row in compare["summary"]}
    assert (by_run[imported.pk]["imported"], by_run[imported.pk]["best_speedup"]) == (True, None)
    assert by_run[imported.pk]["goal_met"] is False and by_run[measured.pk]["best_speedup"] == 1.5


@pytest.mark.django_db
def test_a_quick_figure_is_labelled_quick_and_the_headline_best_is_the_full_one(operator):
    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "evaluation", quick_payload(3.749, "// tiled\n"))  # the quick set's outlier
    record(run, 1, "evaluation", evaluation_payload(1.857, source="// tiled\n"))  # the same kernel, full set
    run.refresh_from_db()
    assert run.best_speedup == pytest.approx(1.857)

    page = shown(operator.get(reverse("run_detail", args=[run.pk])))
    assert '<dd id="run-best">1.857× (verified: full set)</dd>' in page
    assert "3.749× (quick: on the quick set only, not verified)" in page
    assert "3.749× (quick)" in page  # its Evaluations row
    chart = operator.get(reverse("run_chart", args=[run.pk])).json()
    assert [point["best"] for point in chart["best"]] == [pytest.approx(1.857)]
    assert chart["unverified"]["quick"] == pytest.approx(3.749)

    kernels = shown(operator.get(reverse("kernels")))
    best = kernels[kernels.index('id="best-per-task"') : kernels.index("<h2>Released")]
    assert "1.857×" in best and "3.749×" not in best
    assert "3.749× (quick, not verified)" in kernels


@pytest.mark.django_db
def test_an_exported_run_imported_back_keeps_its_goal_and_outcome_marked_imported(operator):
    host, _ = make_worker()
    run = held_run(host, goal_baseline="naive", goal_speedup=0.5)  # its own goal, not its task's 2.0x
    record(run, 0, "evaluation", evaluation_payload(0.6))
    record(run, 1, "status", {"status": "succeeded", "reason": "goal_met", "detail": "goal confirmed"})
    assert import_lines(operator, exported(operator, run)).status_code == 302
    imported = Run.objects.exclude(pk=run.pk).get()
    assert imported.goal == ("naive", 0.5)
    assert imported.status == "succeeded" and imported.status_reason.startswith("the trace's claim, not measured here")
    page = shown(operator.get(reverse("run_detail", args=[imported.pk])))
    assert "Best speedup over naive (goal 0.5×)" in page and 'id="run-imported"' in page


@pytest.mark.parametrize(
    ("goal", "problem"),
    [
        ({"baseline": "naive", "speedup": "fast"}, 'the goal\'s speedup must be a positive finite number, not "fast"'),
        ({"baseline": "naive", "speedup": -2}, "the goal's speedup must be a positive finite number, not -2"),
        ({"baseline": "naive", "speedup": math.inf}, "the goal's speedup must be a positive finite number"),
        ({"baseline": "", "speedup": 2}, "the goal's baseline must be a baseline's name"),
        ("fast", "the goal must be an object with a baseline and a speedup"),
    ],
)
@pytest.mark.django_db
def test_a_malformed_goal_is_refused_at_import_with_its_line(operator, goal, problem):
    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "status", {"status": "running", "reason": "started", "config": {"task": "matmul_cpu"}})
    record(run, 1, "evaluation", evaluation_payload(1.2))
    records = exported(operator, run)
    records[1]["payload"]["config"]["goal"] = goal  # line 2: the agent's started config
    response = import_lines(operator, records)
    assert response.status_code == 400
    assert f"line 2: {problem}" in shown(response)
    assert Run.objects.count() == 1  # nothing stored

    records = exported(operator, run)
    records[0]["goal"] = goal  # line 1: the export's run line
    response = import_lines(operator, records)
    assert response.status_code == 400 and "line 1: " in shown(response)
    assert Run.objects.count() == 1


@pytest.fixture
def quiet_sender():
    assert notify.wait_until_sent(30)
    yield
    assert notify.wait_until_sent(30)


@pytest.mark.django_db(transaction=True)
def test_a_trace_import_notifies_no_one(operator, settings, quiet_sender):
    hook = Receiver()
    try:
        settings.KSEEK_WEBHOOK_URL = hook.url
        host, _ = make_worker()
        run = held_run(host, review_mode=ReviewMode.REVIEW)
        record(run, 0, "question_proposed", question_payload("q-1"))  # a live run's question: one notice
        assert notify.wait_until_sent(30) and [body["event"] for body in hook.bodies] == ["waiting_review"]
        record(run, 1, "evaluation", evaluation_payload(2.4))
        record(run, 2, "status", {"status": "succeeded", "reason": "goal_met"})
        assert notify.wait_until_sent(30)
        before = len(hook.bodies)

        assert import_lines(operator, exported(operator, run)).status_code == 302
        assert notify.wait_until_sent(30)
        assert hook.bodies[before:] == []  # the imported question and outcome wait on, and tell, nobody
    finally:
        hook.close()


@pytest.mark.django_db
def test_a_released_kernels_results_file_is_the_releases_record_not_a_figure_measured_here(operator, tmp_path):
    # A results file is read from the repository: its kernel_sha256 is a field anyone can write, so a forged file
    # loads as readily as an honest one. It is shown as the release's record, never "measured here" nor a best;
    # only a harness of this site measuring the same source ("Verify here") makes a verified figure of it.
    make_task()
    source = "// released\n"
    forged = eval_result(99.0, source=source)
    forged["kernel_sha256"] = sha256_text(source)
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "k.cpp").write_text(source)
    (folder / "results.json").write_text(json.dumps(forged))
    manifest = 'name = "demo-release"\ntask = "matmul_cpu"\nsource = "k.cpp"\nresults = "results.json"\n'
    (folder / "release.toml").write_text(manifest)
    call_command("load_released_kernels", "--kernels-dir", str(tmp_path), stdout=io.StringIO())
    release = Kernel.objects.get(released=True)
    recorded = release.evaluations.get()
    assert (recorded.standing, recorded.recorded, recorded.imported) == ("recorded", True, False)

    kernels = shown(operator.get(reverse("kernels")))
    best = kernels[kernels.index('id="best-per-task"') : kernels.index("<h2>Released")]
    assert "99.000×" not in best and "No kernel is verified correct yet." in best
    row = kernels[kernels.index('data-release="demo-release"') :].split("</tr>")[0]
    assert (
        "99.000×" in row and "recorded on cpu, not measured here" in row and '<td class="verified">not yet</td>' in row
    )
    kernel_page = shown(operator.get(reverse("kernel_detail", args=[release.pk])))
    assert "measured here" not in kernel_page.replace("not measured here", "")
    assert 'data-standing="recorded"' in kernel_page and "results recorded with the release" in kernel_page
    evaluation_page = shown(operator.get(reverse("evaluation_detail", args=[recorded.pk])))
    assert 'data-standing="recorded"' in evaluation_page and 'data-standing="verified"' not in evaluation_page

    # A run of this site measures the same source: that figure, and only it, is verified and the task's best.
    host, _ = make_worker()
    verify = held_run(host)
    record(verify, 0, "evaluation", evaluation_payload(1.25, source=source))
    kernels = shown(operator.get(reverse("kernels")))
    best = kernels[kernels.index('id="best-per-task"') : kernels.index("<h2>Released")]
    assert "1.250×" in best and "99.000×" not in best
    row = kernels[kernels.index('data-release="demo-release"') :].split("</tr>")[0]
    assert "1.250×" in row.split('<td class="verified">')[1]
    kernel_page = shown(operator.get(reverse("kernel_detail", args=[release.pk])))
    assert 'class="verified-row"' in kernel_page and "1.250×" in kernel_page


@pytest.mark.django_db
def test_a_claim_on_a_subset_says_so_and_never_stands_for_the_full_sets_claim(operator):
    # A lab's trace screens variants on a few scenarios, then measures the full set: its screens' figures are
    # higher and are the trace's claims on a subset. The run's claimed best is the full set's, and every figure
    # on a subset is shown with how many scenarios it covers (the task has two).
    host, _ = make_worker()
    measured = held_run(host)
    record(measured, 0, "evaluation", quick_payload(3.0, "// screened variant\n"))
    record(measured, 1, "evaluation", evaluation_payload(1.2, source="// the release\n"))
    record(measured, 2, "status", {"status": "failed", "reason": "budget_steps"})
    assert import_lines(operator, exported(operator, measured)).status_code == 302
    imported = Run.objects.exclude(pk=measured.pk).get()

    page = shown(operator.get(reverse("run_detail", args=[imported.pk])))
    claimed = page.split('id="run-best-claimed"')[1].split("</dd>")[0]
    assert "1.200×" in claimed and "3.000×" not in claimed
    assert "<td>3.000× (imported, on 1 of 2 scenarios)</td>" in page  # its row of the Evaluations table
    kernels = shown(operator.get(reverse("kernels")))
    screened = Kernel.objects.get(run=imported, source="// screened variant\n")
    row = kernels[kernels.index(f'data-sha="{screened.sha256}"') :].split("</tr>")[0]
    assert "3.000×" in row and "on 1 of 2 scenarios" in row

    # With only a subset's claim, that claim is the run's claimed figure, and its label says it is a subset's.
    only_screen = held_run(host)
    record(only_screen, 0, "evaluation", quick_payload(2.5, "// another screen\n"))
    record(only_screen, 1, "status", {"status": "failed", "reason": "budget_steps"})
    assert import_lines(operator, exported(operator, only_screen), name="screen.jsonl").status_code == 302
    screen_run = Run.objects.exclude(pk__in=[measured.pk, imported.pk, only_screen.pk]).get()
    page = shown(operator.get(reverse("run_detail", args=[screen_run.pk])))
    claimed = page.split('id="run-best-claimed"')[1].split("</dd>")[0]
    assert "2.500×" in claimed and "the trace's claim on 1 of 2 scenarios, not measured here" in claimed


DEMO_TRACE = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"


@pytest.fixture
def demo_imported_beside_a_measured_run(operator):
    """The shipped demo trace imported (its question asked after a quick-set x0.168, then a quick x1.164 and a full
    goal check, x1.287: a gain of x7.65 if its claims counted), and a run of this site that measured the goal
    check's kernel on the full set. The task has the demo's 15 scenarios, so the goal check covers its full set."""
    records = [json.loads(line) for line in DEMO_TRACE.read_text().splitlines()]
    goal_check = [r for r in records if r["kind"] == "evaluation"][-1]["payload"]
    task = make_task(scenario_ids=[s["id"] for s in goal_check["result"]["scenarios"]])
    bank_sync(load_bank())
    assert import_lines(operator, records, name="demo.jsonl").status_code == 302
    imported = Run.objects.get()
    host, _ = make_worker()
    measured = run_start(task=task, model="claude-sonnet-4-6")
    assert run_claim(worker=host).pk == measured.pk
    record(Run.objects.get(pk=measured.pk), 0, "evaluation", goal_check)
    return imported, Run.objects.get(pk=measured.pk)


@pytest.mark.django_db
def test_an_imported_traces_claims_are_no_gain_on_the_bank_page_nor_in_an_assignments_stats(
    operator, demo_imported_beside_a_measured_run
):
    imported, _ = demo_imported_beside_a_measured_run
    key = imported.questions.get().bank_entry.key
    assert selection_stats()[key] == {"asked": 1, "mean_gain": None, "large_gain_rate": None}
    bank = shown(operator.get(reverse("bank")))
    row = bank[bank.index(f"<td>{key}</td>") :].split("</tr>")[0]
    assert "7.65" not in row and "<td>1</td>" in row  # asked once, with no gain
    assert "7.65" not in bank


@pytest.mark.django_db
def test_the_compare_page_gives_an_imported_run_no_gain_and_no_best_kernel_saying_why(
    operator, demo_imported_beside_a_measured_run
):
    imported, measured = demo_imported_beside_a_measured_run
    response = operator.get(reverse("run_compare") + f"?runs={measured.pk},{imported.pk}")
    page = shown(response)
    summary = {row["run_id"]: row for row in response.context["comparison"]["summary"]}
    assert summary[imported.pk]["largest_gain"] is None
    gain_cell = page[page.index(f'<tr data-run="{imported.pk}">') :].split('class="largest-gain">')[1]
    assert gain_cell.startswith("none measured: imported, its figures are the trace's claims")
    timeline = page[page.index('id="compare-timeline"') : page.index('id="compare-grids"')]
    assert "no gain measured: imported, its figures are the trace's claims" in timeline and "7.65" not in timeline
    grids = page[page.index('id="compare-grids"') :]
    assert (
        f"run {imported.pk} is imported: its evaluations are the trace's claims, not measured here, so it has no "
        "verified best kernel to compare" in grids
    )
    assert "ratio-grid" not in grids and "geometric mean" not in grids


@pytest.mark.django_db
def test_a_traces_question_decision_is_its_claim_never_a_local_account_nor_a_reviewers_own_question(operator):
    """Trace audit finding 4: a trace naming this site's admin as the reviewer who replaced its question."""
    from runs.models import Question
    from runs.selectors_bank import effectiveness_by_source, run_histories
    from tests.foundation.factories import make_run

    make_user("admin", "reviewer")
    native = make_run(task=make_task())
    events = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    decided = next(e for e in events if e["kind"] == "question_decided")
    decided["payload"] = {
        "question_ref": decided["payload"]["question_ref"],
        "action": "replace",
        "text": "A reviewer question nobody here wrote",
        "by": "reviewer",
        "reviewer": "admin",
    }
    assert import_lines(operator, events).status_code == 302
    imported = Run.objects.exclude(pk=native.pk).get()
    question = Question.objects.get(run=imported)
    assert (question.reviewer, question.trace_reviewer, question.text) == (
        None,
        "admin",
        "A reviewer question nobody here wrote",
    )
    # Not the reviewer's own question in the bank's figures, nor the bank entry's: the trace's claim, no one's.
    [history] = [h for h in run_histories() if h.run_id == imported.pk]
    assert [(q.key, q.source) for q in history.questions] == [(None, "")]
    assert "human" not in {row["source"] for row in effectiveness_by_source()}
    # The pages say whose word it is.
    page = shown(operator.get(reverse("run_detail", args=[imported.pk])))
    assert "question decisions, and who it says made them, are the trace's claims" in page
    compare = shown(operator.get(reverse("run_compare") + f"?runs={native.pk},{imported.pk}"))
    assert "edited by admin, as the trace says" in compare and "edited by admin<" not in compare


def summary_cells(page: str, run_id: int) -> tuple[str, str]:
    """The compare table's tokens and cost cells of a run, as text."""
    row = page[page.index(f'<tr data-run="{run_id}">') :].split("</tr>")[0]
    tokens = row.split('class="tokens">')[1].split("</td>")[0]
    cost = re.split(r'class="cost[^"]*">', row)[1].split("</td>")[0]
    return html.unescape(re.sub(r"<[^>]+>", "", tokens)), html.unescape(re.sub(r"<[^>]+>", "", cost))


@pytest.mark.django_db
def test_the_compare_page_writes_an_imported_runs_cost_as_the_traces_claim_or_unknown_never_a_measured_zero(
    operator, demo_imported_beside_a_measured_run
):
    # The demo trace records its model calls' usage, without a price (its scripted model has none): a floor.
    claimed, measured = demo_imported_beside_a_measured_run
    # The same trace without its usage events: it records no cost at all, which is unknown, not zero.
    records = [json.loads(line) for line in DEMO_TRACE.read_text().splitlines()]
    without = [r for r in records if r["kind"] != "usage"]
    assert import_lines(operator, [r | {"seq": seq} for seq, r in enumerate(without)]).status_code == 302
    imported = Run.objects.exclude(pk__in=[claimed.pk, measured.pk]).get()
    url = reverse("run_compare") + f"?runs={measured.pk},{imported.pk},{claimed.pk}"
    page = shown(operator.get(url))
    assert summary_cells(page, imported.pk) == ("unknown: the trace records none", "unknown: the trace records none")
    tokens = f"{claimed.tokens_in} / {claimed.tokens_out} the trace's claim"
    assert claimed.tokens_in > 0 and summary_cells(page, claimed.pk) == (
        tokens,
        f"at least ${claimed.cost_usd:.4f} (a model's price is unknown) the trace's claim",
    )
    assert summary_cells(page, measured.pk) == ("0 / 0", "$0.0000")  # measured here: no model call, a real zero
    rows = {row["run_id"]: row for row in operator.get(url + "&format=json").json()["summary"]}
    assert (rows[imported.pk]["cost_usd"], rows[imported.pk]["usage"]) == (None, "unknown: the trace records none")
    assert (rows[claimed.pk]["cost_usd"], rows[claimed.pk]["usage"]) == (float(claimed.cost_usd), "the trace's claim")
    assert [rows[run.pk]["cost_complete"] for run in (imported, claimed, measured)] == [None, False, True]
    assert (rows[measured.pk]["cost_usd"], rows[measured.pk]["usage"]) == (0.0, "measured")
    # The run page says the same of the imported run.
    run_page = shown(operator.get(reverse("run_detail", args=[imported.pk])))
    assert 'id="run-cost">unknown: the trace records none</dd>' in run_page


@pytest.mark.django_db
def test_a_question_an_imported_trace_says_a_person_proposed_is_its_claim_never_a_human_question(operator):
    """A trace's `by: "human"` is its word: kept as such (Question.trace_proposed_by), no human question in the
    bank's figures nor in an assignment's stats, and the pages say whose word it is."""
    from runs.models import Question
    from runs.selectors_bank import effectiveness_by_source, run_histories
    from tests.foundation.factories import make_run

    bank_sync(load_bank())
    native = make_run(task=make_task())
    records = [json.loads(line) for line in DEMO_TRACE.read_text().splitlines()]
    proposed = next(r for r in records if r["kind"] == "question_proposed")
    proposed["payload"]["by"] = "human"
    assert import_lines(operator, records, name="human.jsonl").status_code == 302
    imported = Run.objects.exclude(pk=native.pk).get()
    question = Question.objects.get(run=imported)
    assert (question.trace_proposed_by, question.reviewer, question.trace_reviewer) == ("human", None, "")
    [history] = [h for h in run_histories() if h.run_id == imported.pk]
    assert [(q.key, q.source) for q in history.questions] == [(None, "")]
    assert "human" not in {row["source"] for row in effectiveness_by_source()}
    assert selection_stats().get(proposed["payload"]["bank_key"], {"asked": 0})["asked"] == 0
    response = operator.get(reverse("run_compare") + f"?runs={native.pk},{imported.pk}")
    [row] = [r for r in response.context["comparison"]["summary"] if r["run_id"] == imported.pk]
    assert row["questions_by_reviewers"] == 0
    page = shown(response)
    timeline = page[page.index('id="compare-timeline"') :]
    assert "a person's question, as the trace says; approved by automatic, as the trace says" in timeline
    assert "its questions and who it says proposed them" in shown(
        operator.get(reverse("run_detail", args=[imported.pk]))
    )


@pytest.mark.django_db
def test_a_persons_question_sent_by_this_sites_worker_is_still_a_human_question(operator):
    """The other side: a fork operator's own question, proposed by a worker of this site (`by: "human"`)."""
    from runs.models import Question
    from runs.selectors_bank import run_histories

    host, _ = make_worker()
    run = held_run(host)
    record(run, 0, "question_proposed", {"question_ref": "q-0", "text": "Have you profiled it?", "by": "human"})
    question = Question.objects.get(run=run)
    assert (question.source, question.trace_proposed_by) == ("human", "")
    [history] = [h for h in run_histories() if h.run_id == run.pk]
    assert [(q.key, q.source) for q in history.questions] == [(None, "human")]


@pytest.mark.django_db
def test_the_compare_table_writes_an_imported_runs_status_as_the_traces_claim(operator):
    host, _ = make_worker()
    measured = held_run(host)
    record(measured, 0, "evaluation", evaluation_payload(1.5, source="// measured here\n"))
    record(measured, 1, "status", {"status": "failed", "reason": "budget_steps"})
    forged = forge(exported(operator, measured))
    status = next(r for r in forged if r.get("kind") == "status")
    status["payload"] = {"status": "succeeded", "reason": "goal_met", "detail": "goal confirmed by a full evaluation"}
    assert import_lines(operator, forged).status_code == 302
    imported = Run.objects.exclude(pk=measured.pk).get()
    page = shown(operator.get(reverse("run_compare") + f"?runs={measured.pk},{imported.pk}"))
    row = page[page.index(f'<a href="/runs/{imported.pk}/">') :].split("</tr>")[0]
    assert '<td class="status-succeeded">succeeded <small class="imported">the trace\'s claim</small></td>' in row
    own = page[page.index(f'<a href="/runs/{measured.pk}/">') :].split("</tr>")[0]
    assert '<td class="status-failed">failed</td>' in own  # a run measured here is its own word


@pytest.mark.django_db
def test_the_runs_list_writes_an_imported_runs_unrecorded_cost_as_unknown_never_a_measured_zero(operator):
    # A harness trace (evaluations only, as a released kernel's development trace is) records no model call: its
    # run page says its cost is unknown, and the runs list said "$0.0000" (new-user audit finding 1).
    make_task()
    harness_line = {"kind": "evaluation", "note": "", "summary": "", **eval_result(1.5, source="int k;")}
    assert import_lines(operator, [harness_line], name="lab.jsonl").status_code == 302
    imported = Run.objects.get()
    row = shown(operator.get(reverse("home"))).split(f'<tr data-run="{imported.pk}">')[1].split("</tr>")[0]
    cost = html.unescape(re.sub(r"<[^>]+>", "", re.split(r'class="cost[^"]*">', row)[1].split("</td>")[0]))
    assert cost == "unknown: the trace records none"
