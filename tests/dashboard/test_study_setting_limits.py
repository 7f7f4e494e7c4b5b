"""One ceiling for each whole-number run setting, whichever way a run is started (runs.models.RUN_SETTING_MAX):
the start form, a study's values, the settings a study's runs share, and `start_suite_study`. A study once took
1,000,001 steps or 2,592,001 s of wall time that the start form refuses, refused a token budget over 10^9 that the
start form takes, and `start_suite_study --budget-steps -5` ended in a database IntegrityError."""

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs.models import BUDGET_COST_USD_MAX, RUN_SETTING_MAX, Run, Study, SuiteStudy
from runs.services import ServiceError, study_start, suite_sync
from tests.dashboard.helpers import (
    api_models_configured,  # noqa: F401 - the fixture
    make_user,
)
from tests.foundation.factories import make_task
from tests.foundation.suite_folders import manifest, problem_name

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("api_models_configured")]

BUDGETS = ("budget_steps", "budget_tokens", "budget_wall_s", "budget_evaluations")


def test_the_ceilings_are_the_start_forms():
    assert RUN_SETTING_MAX == {
        "review_timeout_s": 7 * 86_400,
        "budget_steps": 1_000_000,
        "budget_tokens": 10**12,
        "budget_wall_s": 30 * 86_400,
        "budget_evaluations": 100_000,
    }


@pytest.mark.parametrize("setting", BUDGETS)
def test_a_study_takes_each_budget_up_to_the_start_forms_ceiling_and_refuses_one_past_it(setting):
    most = RUN_SETTING_MAX[setting]
    study = study_start(task=make_task(), setting=setting, values=["1", str(most)], model="m")
    assert sorted(getattr(run, setting) for run in study.runs.all()) == [1, most]
    with pytest.raises(ServiceError, match=f"{setting} values are whole numbers from 1 to {most:,}, not '{most + 1}'"):
        study_start(task=make_task(name="other"), setting=setting, values=["1", str(most + 1)], model="m")
    assert Study.objects.count() == 1


def test_the_study_form_refuses_a_value_past_the_ceiling_naming_it(client):
    client.force_login(make_user("op", "operator"))
    task = make_task()
    form = {"task": task.name, "model": "m", "review_mode": "auto", "setting": "budget_steps"}
    response = client.post(reverse("study_start"), {**form, "values": "1, 1000001"})
    assert response.status_code == 400 and not Run.objects.exists()
    assert "whole numbers from 1 to 1,000,000" in response.content.decode()


@pytest.mark.parametrize(
    "name,value",
    [(name, bad) for name, most in RUN_SETTING_MAX.items() for bad in (0, -5, most + 1, 10**20)]
    + [("budget_cost_usd", Decimal(-1)), ("budget_cost_usd", Decimal(BUDGET_COST_USD_MAX + 1))],
)
def test_a_study_refuses_shared_settings_outside_their_ceiling_with_their_name(name, value):
    with pytest.raises(ServiceError, match=f"{name} is a "):
        study_start(task=make_task(), setting="questions", values=["on", "off"], model="m", **{name: value})
    assert not Run.objects.exists()


def test_a_study_takes_shared_settings_at_their_ceiling():
    at_ceiling = {**RUN_SETTING_MAX, "budget_cost_usd": Decimal(BUDGET_COST_USD_MAX)}
    study = study_start(task=make_task(), setting="questions", values=["on", "off"], model="m", **at_ceiling)
    run = study.runs.first()
    assert (run.budget_steps, run.budget_tokens, run.review_timeout_s) == (1_000_000, 10**12, 7 * 86_400)


def _suite(tmp_path):
    make_task(name=problem_name(0), goal_baseline="eager", goal_speedup=1.0)
    (tmp_path / "suite.json").write_text(json.dumps(manifest(1)))
    return suite_sync(tmp_path, name="kb_limits")


@pytest.mark.parametrize("budget", ["-5", "1000001", "99999999999999999999"])
def test_start_suite_study_refuses_a_budget_outside_its_ceiling_with_a_command_error(tmp_path, budget):
    _suite(tmp_path)
    args = ["start_suite_study", "kb_limits", "--setting", "questions", "--values", "on,off", "--model", "m"]
    with pytest.raises(CommandError, match="budget_steps is a whole number from 1 to 1,000,000"):
        call_command(*args, "--budget-steps", budget)
    assert not SuiteStudy.objects.exists() and not Run.objects.exists()
    call_command(*args, "--budget-steps", "1000000")
    assert set(Run.objects.values_list("budget_steps", flat=True)) == {1_000_000}


def test_a_studys_shared_model_is_held_to_its_120_characters():
    model = "claude-" + "m" * 113
    study = study_start(task=make_task(), setting="questions", values=["on", "off"], model=model)
    assert {run.model for run in study.runs.all()} == {model}
    with pytest.raises(ServiceError, match="a model id has at most 120 characters"):
        study_start(task=make_task(name="other"), setting="questions", values=["on", "off"], model=model + "x")
    assert Study.objects.count() == 1
