"""Suites (runs/services/suites.py, runs/task_pages/selectors_suites.py, runs/task_pages/views_suites.py): a suite read from its
manifest (whole or not at all), a study over it that queues one run per arm on every imported problem (all or
none), and its scoreboard: per problem what the harness verified, fast_p per arm over problems, the questions
before large gains, as a page, CSV and JSON; 404 for unknown ids, 403 for roles below operator on the form."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.models import Run, Study, Suite, SuiteProblem, SuiteStudy
from runs.services import ServiceError, run_claim, suite_study_start, suite_sync, worker_events_record
from runs.task_pages.scoreboard import fast_p, wilson_interval
from runs.task_pages.selectors_suites import run_measured, suite_study_scoreboard
from tests.dashboard.helpers import (
    api_models_configured,  # noqa: F401 - the fixture
    event,
    make_user,
    make_worker,
    question_payload,
    usage_event,
)
from tests.foundation.factories import make_task
from tests.foundation.suite_folders import manifest, problem_name, write_suite

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("api_models_configured")]

FULL = ("r128_c256", "r256_c256")  # the scenarios of tests/foundation/suite_folders.py


def make_problem_task(index: int):
    return make_task(name=problem_name(index), goal_baseline="eager", goal_speedup=1.0, scenario_ids=list(FULL))


def make_suite(tmp_path, imported=3, **kwargs) -> Suite:
    """A suite of `imported` problems whose tasks are on the dashboard, plus the refused/failed ones asked for."""
    for index in range(imported):
        make_problem_task(index)
    (tmp_path / "suite.json").write_text(json.dumps(manifest(imported, **kwargs)))
    return suite_sync(tmp_path, name="kb_test")


def verdict(eager, *, compiled=None, correct=True, scenarios=FULL, source="// k\n") -> dict:
    """A verdict as the harness returns it, over `scenarios`, with speed-ups over eager (and torch.compile)."""
    geomean = {"eager": {"speedup": eager if correct else None, "count": len(scenarios)}}
    if compiled is not None:
        geomean["compiled"] = {"speedup": compiled, "count": len(scenarios)}
    return {
        "task": "t",
        "kernel_sha256": "",
        "kernel_source": source,
        "status": "correct" if correct else "incorrect",
        "reason": None,
        "host": "cpu-a",
        "device_name": "cpu",
        "scenarios": [
            {"id": sid, "params": {}, "correct": correct, "error": 0.0, "reason": None, "time_ms": 1.0, "speedup": {}}
            for sid in scenarios
        ],
        "geomean": geomean,
        "started_at": "2026-11-30T12:00:00+00:00",
        "finished_at": "2026-11-30T12:00:01+00:00",
    }


def record(run, seq, kind, payload):
    [outcome] = worker_events_record(items=[(run.worker, event(run.pk, seq, kind, payload))])
    assert outcome.stored, outcome.error


def evaluation(run, seq, result):
    payload = {"purpose": "tool", "kernel_path": "kernel.cpp", "kernel_source": result["kernel_source"]}
    record(run, seq, "evaluation", {**payload, "scenario_set": "full", "result": result})


def spend(run, seq, **counts):
    """A model call's usage event: the only kind whose counts and cost a run's totals take (docs/protocol.md 1.1)."""
    [outcome] = worker_events_record(items=[(run.worker, usage_event(run.pk, seq, **counts))])
    assert outcome.stored, outcome.error


# ------------------------------------------------------------------------------------------------ the suite


def test_a_suite_is_read_with_each_problems_outcome_reason_and_task(tmp_path):
    suite = make_suite(tmp_path, imported=2, refused=1, check_failed=1)
    assert (suite.name, suite.source, suite.format) == ("kb_test", "KernelBench level_test", "kernelbench")
    rows = list(SuiteProblem.objects.filter(suite=suite).order_by("position"))
    assert [(p.name, p.outcome, p.task.name if p.task else None) for p in rows] == [
        ("suite_p00", "imported", "suite_p00"),
        ("suite_p01", "imported", "suite_p01"),
        ("kb_hub_0", "refused", None),
        ("kb_broken_0", "check failed", None),
    ]
    assert rows[2].reason.startswith("downloads its model") and suite.manifest["problems"][0]["file"] == rows[0].file


def test_a_second_read_replaces_the_problems_and_a_malformed_manifest_changes_nothing(tmp_path):
    suite = make_suite(tmp_path, imported=2, refused=1)
    (tmp_path / "suite.json").write_text(json.dumps(manifest(1, format="gpumode")))
    again = suite_sync(tmp_path, name="kb_test")
    assert again.pk == suite.pk and again.format == "gpumode" and again.problems.count() == 1
    broken = manifest(2)
    broken["problems"][1]["outcome"] = "imported maybe"
    (tmp_path / "suite.json").write_text(json.dumps(broken))
    with pytest.raises(ServiceError, match="outcome 'imported maybe' is none of"):
        suite_sync(tmp_path, name="kb_test")
    kept = Suite.objects.get()
    assert kept.format == "gpumode" and kept.problems.count() == 1 and kept.manifest["format"] == "gpumode"


def test_sync_tasks_loads_a_suite_folder_in_kseek_tasks_dir_and_skips_a_malformed_one(tmp_path, monkeypatch):
    good = write_suite(tmp_path / "kb_good", imported=2, refused=1)
    bad = tmp_path / "kb_bad"
    bad.mkdir()
    (bad / "suite.json").write_text('{"problems": "all of them"}')
    monkeypatch.setenv("KSEEK_TASKS_DIR", f"{good}:{bad}")
    out, err = io.StringIO(), io.StringIO()
    call_command("sync_tasks", stdout=out, stderr=err)
    assert "suite kb_good: KernelBench level_test, 3 problems, 2 tasks linked" in out.getvalue()
    assert f"suite {bad}: skipped:" in err.getvalue() and "problems must be a non-empty list" in err.getvalue()
    suite = Suite.objects.get()
    assert suite.name == "kb_good" and suite.folder == str(good.resolve())
    assert sorted(suite.problems.exclude(task=None).values_list("task__name", flat=True)) == ["suite_p00", "suite_p01"]


# ------------------------------------------------------------------------------------------ the suite study


def test_a_suite_study_queues_one_run_per_arm_on_every_imported_problem(tmp_path):
    suite = make_suite(tmp_path, imported=3, refused=1, check_failed=1)
    suite_study = suite_study_start(suite=suite, setting="questions", values=["on", "off"], model="m", budget_steps=7)
    studies = list(Study.objects.filter(suite_study=suite_study).order_by("pk"))
    assert [s.task.name for s in studies] == ["suite_p00", "suite_p01", "suite_p02"]
    for study in studies:
        runs = list(study.runs.order_by("pk"))
        assert [r.asks_questions for r in runs] == [True, False]
        assert all(r.budget_steps == 7 and r.model == "m" and r.status == "queued" for r in runs)
    # The queue hands them out as any run: to a worker serving their target, oldest first.
    host, _ = make_worker()
    assert run_claim(worker=host).task.name == "suite_p00"


@pytest.mark.parametrize(
    "setting,values,message",
    [
        ("questions", ["on"], "2 to 8 distinct values"),
        ("questions", ["on", "perhaps"], "on or off"),
        ("review_mode", ["auto", "review_timeout"], "review_timeout_s"),  # the first problem's second run: none queued
    ],
)
def test_a_suite_study_that_cannot_start_queues_nothing(tmp_path, setting, values, message):
    suite = make_suite(tmp_path, imported=2)
    with pytest.raises(ServiceError, match=message):
        suite_study_start(suite=suite, setting=setting, values=values, model="m")
    assert (Run.objects.count(), Study.objects.count(), SuiteStudy.objects.count()) == (0, 0, 0)


def test_a_suite_without_a_runnable_problem_refuses_a_study(tmp_path):
    (tmp_path / "suite.json").write_text(json.dumps(manifest(2)))  # the tasks are not on the dashboard
    suite = suite_sync(tmp_path, name="kb_test")
    with pytest.raises(ServiceError, match="no imported problem whose task is on the dashboard"):
        suite_study_start(suite=suite, setting="questions", values=["on", "off"], model="m")


# ------------------------------------------------------------------------------------------ the scoreboard


@pytest.fixture
def played(tmp_path):
    """A study of two models over three problems, its runs' evaluations stored as a worker sends them:

    problem  model-a                                       model-b
    p00      full, correct: 3.0x eager, 1.2x compile;      full, wrong
             a quick one at 9.0x (not verified)
    p01      full, correct: 1.2x eager (compile not run)   full, correct: 0.5x eager
    p02      nothing yet                                   1.0x, a question, 2.5x, 1.1x (all full, correct)
    """
    suite = make_suite(tmp_path, imported=3, refused=1)
    suite_study = suite_study_start(suite=suite, setting="model", values=["model-a", "model-b"], model="model-a")
    host, _ = make_worker()
    runs = {}
    for _ in range(6):
        run = run_claim(worker=host)
        runs[(run.task.name[-3:], run.model[-1])] = run
    evaluation(runs["p00", "a"], 0, verdict(3.0, compiled=1.2))
    evaluation(runs["p00", "a"], 1, verdict(9.0, scenarios=FULL[:1], source="// quick\n"))
    spend(runs["p00", "a"], 2, tokens_in=100, cost_usd=0.25)
    spend(runs["p00", "a"], 3, cost_usd=0.5)
    evaluation(runs["p00", "b"], 0, verdict(None, correct=False))
    evaluation(runs["p01", "a"], 0, verdict(1.2))
    evaluation(runs["p01", "b"], 0, verdict(0.5))
    b2 = runs["p02", "b"]
    # Measured with the harness's intervals (1% either side): the rise to 2.5x is a large gain beyond the noise.
    evaluation(b2, 0, {**noisy(1.0, 0.01), "kernel_source": "// 1\n"})
    record(b2, 1, "question_proposed", question_payload("q-1", "Which loads are not coalesced?"))
    record(b2, 2, "question_decided", {"question_ref": "q-1", "action": "approve", "by": "auto"})
    evaluation(b2, 3, {**noisy(2.5, 0.01), "kernel_source": "// 2\n"})
    evaluation(b2, 4, verdict(1.1, source="// 3\n"))
    return suite_study, runs


def _fast(board, arm):
    (entry,) = [a for a in board["arms"] if a["arm"] == arm]
    return [(f["p"], f["fast"], f["of"]) for f in entry["fast_p"]]


def test_the_scoreboard_counts_only_verified_evaluations_and_every_problem(played):
    suite_study, runs = played
    board = suite_study_scoreboard(suite_study.pk)
    cells = {(row["task"][-3:], cell["arm"][-1]): cell for row in board["problems"] for cell in row["arms"]}
    assert cells["p00", "a"]["correct"] and cells["p00", "a"]["eager"] == 3.0  # not the quick 9.0
    assert cells["p00", "a"]["compiled"] == 1.2 and cells["p01", "a"]["compiled"] is None
    assert (cells["p00", "a"]["evaluations"], cells["p00", "a"]["verified_evaluations"]) == (2, 1)
    assert cells["p00", "a"]["cost_usd"] == 0.75 and cells["p00", "a"]["tokens_in"] == 100
    assert not cells["p00", "b"]["correct"] and cells["p00", "b"]["eager"] is None
    assert not cells["p02", "a"]["correct"] and cells["p02", "a"]["evaluations"] == 0
    assert cells["p02", "b"]["eager"] == 2.5
    assert [row["problem"] for row in board["problems"]] == ["1_ScaleAdd.py", "2_ScaleAdd.py", "3_ScaleAdd.py"]
    assert _fast(board, "model-a") == [(0.0, 2, 3), (1.0, 2, 3), (1.5, 1, 3), (2.0, 1, 3)]
    assert _fast(board, "model-b") == [(0.0, 2, 3), (1.0, 1, 3), (1.5, 1, 3), (2.0, 1, 3)]
    (arm_b,) = [a for a in board["arms"] if a["arm"] == "model-b"]
    assert arm_b["fast_p"][1]["interval"] == wilson_interval(1, 3)
    # The bank's attribution: the question asked at 1.0x was followed by 2.5x, a large gain.
    assert [(g["run_id"], g["text"], g["gain"]) for g in arm_b["large_gains"]] == [
        (runs["p02", "b"].pk, "Which loads are not coalesced?", 2.5)
    ]


def test_an_imported_runs_evaluation_is_never_verified(played):
    _, runs = played
    run = Run.objects.get(pk=runs["p00", "a"].pk)
    run.imported_from = "trace.jsonl"  # unsaved: what the scoreboard reads of a run made from a trace
    measured = run_measured(run, [verdict(3.0)])
    assert measured == {
        "correct": False,
        "eager": None,
        "eager_low": None,
        "eager_high": None,
        "eager_noise_unknown": False,
        "compiled": None,
        "compiled_low": None,
        "compiled_high": None,
        "eager_text": "—",
        "compiled_text": "n/a",
        "evaluations": 1,
        "verified_evaluations": 0,
    }


def noisy(eager: float, spread: float) -> dict:
    """A verified verdict whose every scenario is `eager` x faster than eager, each median timed within +-spread
    (as a fraction): the interval the harness would have measured."""
    out = verdict(eager)
    for scenario in out["scenarios"]:
        scenario["speedup"] = {"eager": eager}
        scenario["time_ci_ms"] = [1.0 - spread, 1.0 + spread]
        scenario["baseline_ms"] = {"eager": eager}
        scenario["baseline_ci_ms"] = {"eager": [eager * (1 - spread), eager * (1 + spread)]}
    return out


def test_a_speedup_inside_the_noise_does_not_count_as_fast(played):
    _, runs = played
    run = Run.objects.get(pk=runs["p00", "a"].pk)
    wide = run_measured(run, [noisy(1.05, 0.05)])  # 1.05x, its interval about 0.95x to 1.16x
    assert wide["correct"] and wide["eager"] == pytest.approx(1.05) and wide["eager_low"] < 1.0
    assert fast_p([wide], 1.0)["fast"] == 0 and fast_p([wide], 0.0)["fast"] == 1
    tight = run_measured(run, [noisy(1.05, 0.005)])  # the same point, its interval clear of 1.0
    assert tight["eager_low"] > 1.0 and fast_p([tight], 1.0)["fast"] == 1
    # The scoreboard writes each with its interval: the first is no speed-up at all (issue 34, item 4).
    assert wide["eager_text"].startswith("no difference (0.9") and tight["eager_text"].startswith("1.050× (1.0")


# ------------------------------------------------------------------------------------------------ the pages


def test_the_suite_pages_list_problems_what_each_imported_as_and_why_others_did_not(client, tmp_path):
    suite = make_suite(tmp_path, imported=2, refused=1)
    client.force_login(make_user("vera"))
    listing = client.get(reverse("suites")).content.decode()
    assert f'href="{reverse("suite_detail", args=[suite.pk])}"' in listing and "KernelBench level_test" in listing
    page = client.get(reverse("suite_detail", args=[suite.pk])).content.decode()
    assert f'<a href="{reverse("task_detail", args=["suite_p00"])}">suite_p00</a>' in page
    assert "downloads its model from a hub" in page and 'class="outcome-refused"' in page
    assert "start-suite-study" not in page  # a viewer is offered no start
    assert 'id="suites-link"' in client.get(reverse("tasks")).content.decode()
    assert client.get(reverse("suite_detail", args=[999])).status_code == 404


def test_the_suite_study_form_queues_the_study_for_operators_only(client, tmp_path):
    suite = make_suite(tmp_path, imported=2)
    url = reverse("suite_study_start", args=[suite.pk])
    form = {"model": "claude-sonnet-4-6", "review_mode": "auto", "setting": "questions", "values": "on,off"}
    for role in ("viewer", "reviewer"):
        client.force_login(make_user(f"u-{role}", None if role == "viewer" else role))
        assert client.get(url).status_code == 403 and client.post(url, form).status_code == 403
    assert SuiteStudy.objects.count() == 0
    client.force_login(make_user("olga", "operator"))
    assert client.get(url).status_code == 200
    assert client.get(reverse("suite_study_start", args=[999])).status_code == 404
    bad = client.post(url, {**form, "values": "on"})
    assert bad.status_code == 400 and "2 to 8 distinct values" in bad.content.decode()
    response = client.post(url, form)
    suite_study = SuiteStudy.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("suite_scoreboard", args=[suite_study.pk])
    assert Run.objects.filter(study__suite_study=suite_study).count() == 4
    assert suite_study.created_by.username == "olga"


def test_the_scoreboard_page_and_its_csv_and_json_exports(client, played):
    suite_study, runs = played
    client.force_login(make_user("vera"))
    page = client.get(reverse("suite_scoreboard", args=[suite_study.pk])).content.decode()
    assert '<td class="fast-p" data-p="1.0" data-fast="2" data-of="3">2/3 (67%; 95% CI ' in page
    assert "Which loads are not coalesced?" in page and '<td class="compiled">n/a</td>' in page
    exported = client.get(reverse("suite_scoreboard_json", args=[suite_study.pk])).json()
    assert exported == json.loads(json.dumps(suite_study_scoreboard(suite_study.pk)))
    rows = list(
        csv.DictReader(io.StringIO(client.get(reverse("suite_scoreboard_csv", args=[suite_study.pk])).content.decode()))
    )
    assert len(rows) == 6 and {r["arm"] for r in rows} == {"model-a", "model-b"}
    (p00a,) = [r for r in rows if r["task"] == "suite_p00" and r["arm"] == "model-a"]
    assert (p00a["correct"], p00a["speedup_eager"], p00a["speedup_compiled"]) == ("True", "3.0", "1.2")
    table = client.get(reverse("suite_scoreboard_csv", args=[suite_study.pk]) + "?table=fast_p").content.decode()
    fast = list(csv.DictReader(io.StringIO(table)))
    assert [(r["arm"], r["p"], r["fast"], r["of"]) for r in fast][:2] == [
        ("model-a", "0.0", "2", "3"),
        ("model-a", "1.0", "2", "3"),
    ]
    for name in ("suite_scoreboard", "suite_scoreboard_csv", "suite_scoreboard_json"):
        assert client.get(reverse(name, args=[999])).status_code == 404


def test_the_command_starts_a_suite_study_by_the_suites_name(tmp_path):
    make_suite(tmp_path, imported=2)
    out = io.StringIO()
    call_command(
        "start_suite_study", "kb_test", "--setting", "questions", "--values", "on,off", "--model", "m", stdout=out
    )
    suite_study = SuiteStudy.objects.get()
    assert f"suite study {suite_study.pk} of kb_test: on, off queued" in out.getvalue()
    assert Run.objects.filter(study__suite_study=suite_study).count() == 4
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no suite named 'nope'"):
        call_command("start_suite_study", "nope", "--setting", "questions", "--values", "on,off", "--model", "m")


def test_the_csv_writes_a_formula_like_text_as_text(client, played):
    suite_study, _ = played
    SuiteProblem.objects.filter(suite=suite_study.suite, name="suite_p00").update(file='=HYPERLINK("http://x","y")')
    client.force_login(make_user("vera"))
    text = client.get(reverse("suite_scoreboard_csv", args=[suite_study.pk])).content.decode()
    problems = {r["problem"] for r in csv.DictReader(io.StringIO(text))}
    assert '\'=HYPERLINK("http://x","y")' in problems and not any(p.startswith("=") for p in problems)


def test_a_spreadsheet_cell_quotes_only_formula_like_texts():
    from runs.csv_cells import spreadsheet_cell

    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert spreadsheet_cell(text) == "'" + text
    assert spreadsheet_cell(-1.5) == -1.5 and spreadsheet_cell(None) == "" and spreadsheet_cell("a=b") == "a=b"


def test_a_best_whose_noise_is_unknown_says_so_where_fast_p_does_not_count_it(played):
    # The figure-labels audit, finding 5: a best whose interval was lost among others (figures.noise_unknown) was
    # written as a bare "1.500×" in the × eager cell while fast_1 did not count it; it now says "(noise unknown)".
    _, runs = played
    run = Run.objects.get(pk=runs["p00", "a"].pk)
    partial = noisy(1.5, 0.01)
    for name in ("time_ci_ms", "baseline_ci_ms"):
        del partial["scenarios"][0][name]  # one scenario without its intervals, the other with them
    measured = run_measured(run, [partial])
    assert measured["eager_noise_unknown"] and fast_p([measured], 1.0)["fast"] == 0
    assert measured["eager_text"] == "1.500× (noise unknown)"


def test_the_scoreboard_csv_gives_each_speedups_interval_and_the_pages_words(client, played):
    # The figure-labels audit, finding 7: the CSV gave speedup_compiled with no interval at all and
    # speedup_eager with its low end alone, so a 1.02x torch.compile figure inside the noise (or a slowdown whose
    # interval holds 1.0) read as a measured difference; each now has its interval and the page's words.
    suite_study, runs = played
    within = verdict(1.5, compiled=1.02, source="// p02 a\n")
    for scenario in within["scenarios"]:
        scenario.update(time_ms=1.0, time_ci_ms=[1.0, 1.0], speedup={"eager": 1.5, "compiled": 1.02})
        scenario["baseline_ms"] = {"eager": 1.5, "compiled": 1.02}
        scenario["baseline_ci_ms"] = {"eager": [1.45, 1.55], "compiled": [0.95, 1.1]}
    evaluation(runs["p02", "a"], 0, within)
    client.force_login(make_user("vera"))
    body = client.get(reverse("suite_scoreboard_csv", args=[suite_study.pk])).content.decode()
    (row,) = [r for r in csv.DictReader(io.StringIO(body)) if r["task"] == "suite_p02" and r["arm"] == "model-a"]
    assert (row["speedup_compiled"], row["speedup_compiled_low"], row["speedup_compiled_high"]) == (
        "1.02",
        "0.95",
        "1.1",
    )
    assert row["speedup_compiled_text"] == "no difference (0.950–1.10×)"
    assert (row["speedup_eager_low"], row["speedup_eager_high"]) == ("1.45", "1.55")
    assert row["speedup_eager_text"] == "1.500× (1.45–1.55×)"
