"""Studies (runs/services/studies.py): N runs of one task that differ in one setting, queued together from one
form, each with its value; compare opens on them; bad values are refused and nothing is queued."""

import csv
import io
import re

import pytest
from django.urls import reverse

from runs.models import Run, Study
from runs.services import ServiceError, run_assignment, run_claim, study_start
from tests.dashboard.helpers import (
    api_models_configured,  # noqa: F401 - the fixture
    make_user,
    make_worker,
)
from tests.foundation.factories import make_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("api_models_configured")]


def test_a_study_of_questions_on_and_off_queues_one_run_each_and_the_off_run_is_assigned_without_questions():
    study = study_start(task=make_task(), setting="questions", values=["on", " off", "on"], model="m", budget_steps=5)
    runs = list(study.runs.order_by("pk"))
    assert [r.asks_questions for r in runs] == [True, False] and all(r.budget_steps == 5 for r in runs)
    host, _ = make_worker()
    first, second = run_claim(worker=host), run_claim(worker=host)
    assert "questions" not in run_assignment(first)  # on: the field is left out, as before
    assert run_assignment(second)["questions"] is False


@pytest.mark.parametrize(
    "setting,values,field,expected",
    [
        ("model", ["claude-sonnet-4-6", "openai:qwen3-coder"], "model", ["claude-sonnet-4-6", "openai:qwen3-coder"]),
        ("review_mode", ["auto", "review"], "review_mode", ["auto", "review"]),
        ("budget_steps", ["10", "20", "40"], "budget_steps", [10, 20, 40]),
        ("budget_evaluations", ["3", "6"], "budget_evaluations", [3, 6]),
    ],
)
def test_a_study_varies_exactly_one_setting(setting, values, field, expected):
    study = study_start(task=make_task(), setting=setting, values=values, model="m", budget_tokens=1000)
    runs = list(study.runs.order_by("pk"))
    assert [getattr(r, field) for r in runs] == expected
    assert all(r.budget_tokens == 1000 and r.asks_questions for r in runs)


@pytest.mark.parametrize(
    "setting,values,message",
    [
        ("questions", ["on"], "2 to 8 distinct values"),
        ("questions", ["on", "maybe"], "on or off"),
        ("review_mode", ["auto", "sometimes"], "review modes are"),
        ("budget_steps", ["10", "-1"], "whole numbers"),
        ("budget_steps", ["10", "²"], "whole numbers"),  # isdigit, but int() refused it: a 500
        ("budget_tokens", ["10", "9" * 5000], "whole numbers"),  # over int()'s 4,300 digits: a 500 too
        ("budget_steps", [str(n) for n in range(1, 10)], "2 to 8"),
        ("temperature", ["0", "1"], "a study varies one of"),
        ("review_mode", ["auto", "review_timeout"], "review_timeout_s"),  # the second run cannot start: none do
    ],
)
def test_bad_study_values_are_refused_and_nothing_is_queued(setting, values, message):
    with pytest.raises(ServiceError, match=message):
        study_start(task=make_task(), setting=setting, values=values, model="m")
    assert Run.objects.count() == 0 and Study.objects.count() == 0


def test_the_study_form_queues_the_runs_and_opens_the_comparison_on_them(client):
    make_task()
    client.force_login(make_user("olga", "operator"))
    assert client.get(reverse("study_start")).status_code == 200
    response = client.post(
        reverse("study_start"),
        {
            "task": "matmul_cpu",
            "model": "claude-sonnet-4-6",
            "review_mode": "auto",
            "setting": "questions",
            "values": "on,off",
        },
    )
    study = Study.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_compare") + f"?study={study.pk}"
    compared = client.get(response["Location"] + "&format=json").json()
    ids = [row["run_id"] for row in compared["summary"]]
    assert ids == list(study.runs.order_by("pk").values_list("pk", flat=True)) and len(ids) == 2
    page = client.get(reverse("run_detail", args=[ids[1]])).content.decode()
    assert "questions = off" in page and 'id="run-questions-off"' in page
    assert client.get(reverse("run_compare") + "?study=999").status_code == 404
    bad = client.post(
        reverse("study_start"),
        {"task": "matmul_cpu", "model": "m", "review_mode": "auto", "setting": "questions", "values": "on"},
    )
    assert bad.status_code == 400 and "2 to 8 distinct values" in bad.content.decode()


DEMO_REPLAY = "replay:agentloop/replays/matmul_cpu_demo.jsonl"


def test_a_study_of_a_recording_keeps_the_recorded_goal_and_kernel_as_a_single_run_of_it_does(client):
    make_task()  # its own goal is 2.0x over naive; the demo recording's is 0.5x
    client.force_login(make_user("olga", "operator"))
    form = {"task": "matmul_cpu", "model": DEMO_REPLAY, "review_mode": "auto"}
    assert client.post(reverse("run_start"), form).status_code == 302
    single = Run.objects.get(study=None)
    response = client.post(reverse("study_start"), {**form, "setting": "budget_steps", "values": "50,100"})
    assert response.status_code == 302
    studied = list(Study.objects.get().runs.order_by("pk"))
    assert single.goal == ("naive", 0.5)
    assert [r.goal for r in studied] == [single.goal] * 2
    assert all(r.starting_kernel == single.starting_kernel != "// naive\n" for r in studied)


def test_a_study_of_models_gives_the_recording_its_goal_and_the_api_model_the_tasks():
    task = make_task()
    recordings = {DEMO_REPLAY: {"task": "matmul_cpu", "goal": {"baseline": "naive", "speedup": 0.5}}}
    study = study_start(
        task=task, setting="model", values=[DEMO_REPLAY, "claude-sonnet-4-6"], model="m", recordings=recordings
    )
    assert [r.goal for r in study.runs.order_by("pk")] == [("naive", 0.5), ("naive", 2.0)]


def test_a_study_refuses_a_recording_of_another_task_and_queues_nothing():
    recordings = {"replay:softmax.jsonl": {"task": "softmax_rows", "goal": {"baseline": "torch", "speedup": 1.2}}}
    with pytest.raises(ServiceError, match="recording of task softmax_rows"):
        study_start(
            task=make_task(), setting="model", values=["replay:softmax.jsonl", "m2"], model="m", recordings=recordings
        )
    assert Run.objects.count() == 0 and Study.objects.count() == 0


def test_the_study_page_names_the_setting_and_each_runs_value_of_it(client):
    study = study_start(task=make_task(), setting="budget_steps", values=["10", "40"], model="m")
    client.force_login(make_user("vera"))
    page = client.get(reverse("run_compare") + f"?study={study.pk}").content.decode()
    assert 'id="study-setting"' in page and "step budget (budget_steps)" in page
    for run in study.runs.all():
        assert f'<td class="study-value" data-run="{run.pk}">{run.budget_steps}</td>' in page
    exported = client.get(reverse("run_compare") + f"?study={study.pk}&format=json").json()
    assert exported["study"]["setting"] == "budget_steps"
    assert sorted(exported["study"]["values"].values()) == ["10", "40"]


def test_a_studys_csv_gives_each_runs_value_and_its_page_links_share_and_export_the_study(client):
    """The study's page linked its CSV and JSON as `?runs=...`, which drops the study (its JSON then had no
    `study`), and its CSV had no column saying which run was which arm."""
    study = study_start(task=make_task(), setting="budget_steps", values=["10", "40"], model="m")
    client.force_login(make_user("vera"))
    page = client.get(reverse("run_compare") + f"?study={study.pk}").content.decode()
    for link in ("compare-link", "compare-csv", "compare-json"):
        assert re.search(rf'id="{link}" href="[^"]*\?study={study.pk}[&"]', page), link
    exported = client.get(reverse("run_compare") + f"?study={study.pk}&format=csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert list(rows[0])[:3] == ["run_id", "study_setting", "study_value"]
    by_run = {int(row["run_id"]): (row["study_setting"], row["study_value"]) for row in rows}
    assert by_run == {run.pk: ("budget_steps", str(run.budget_steps)) for run in study.runs.all()}
