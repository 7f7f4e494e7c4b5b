"""Studies ("ablations in one click"): N runs of one task that differ in one setting, started together and
tagged as one study, so that the compare page opens on them (docs/fork.md, "Studies")."""

from __future__ import annotations

from decimal import Decimal
from typing import cast

from django.db import transaction

from runs.model_options import model_options, model_refusal, recorded_start
from runs.models import (
    BUDGET_COST_USD_MAX,
    COMPARE_MAX,
    COMPARE_MIN,
    RUN_SETTING_MAX,
    STUDY_SETTINGS,
    ReviewMode,
    Run,
    Study,
    Task,
)
from runs.services.errors import ServiceError
from runs.services.runs import run_start

# The settings a study can vary (their names on the page: runs.models); study_values reads each one's values.
SETTINGS = tuple(STUDY_SETTINGS)
_QUESTIONS = {"on": True, "off": False}


def _positive(setting: str, word: str) -> int:
    # ASCII digits, no more than the ceiling has, before int(): str.isdigit takes "²" (which int() refuses with a
    # ValueError: the form's 500) and int() refuses a text of over 4,300 digits the same way. The ceiling is the
    # start form's (RUN_SETTING_MAX): a study's run takes the budgets a single run may have, no more, no fewer.
    most = RUN_SETTING_MAX[setting]
    if not (word.isascii() and word.isdigit()) or len(word) > len(str(most)) or not 1 <= int(word) <= most:
        raise ServiceError(f"{setting} values are whole numbers from 1 to {most:,}, not {word[:40]!r}")
    return int(word)


def _settings_refusal(settings: dict) -> str | None:
    """Why the settings every run of a study shares cannot be stored (None: they can). The start form checks
    them on the page; `start_suite_study` passes what its command line says, which a negative or huge number
    would otherwise turn into a database error (a model id over its column, as on PostgreSQL)."""
    model_max = cast(int, Run._meta.get_field("model").max_length)
    if len(settings.get("model") or "") > model_max:
        return f"a model id has at most {model_max} characters: {settings['model'][:40]}…"
    for name, most in RUN_SETTING_MAX.items():
        value = settings.get(name)
        if value is not None and (type(value) is not int or not 1 <= value <= most):
            return f"{name} is a whole number from 1 to {most:,}, not {str(value)[:40]!r}"
    cost = settings.get("budget_cost_usd")
    if cost is not None and not (cost.is_finite() and 0 <= cost <= BUDGET_COST_USD_MAX):
        return f"budget_cost_usd is a number from 0 to {BUDGET_COST_USD_MAX:,}, not {str(cost)[:40]!r}"
    return None


def study_values(setting: str, words: list[str]) -> list:
    """The setting's values, read and checked: 2 to 8 distinct ones (a comparison holds 8 runs)."""
    if setting not in SETTINGS:
        raise ServiceError(f"a study varies one of {', '.join(SETTINGS)}, not {setting!r}")
    words = list(dict.fromkeys(w.strip() for w in words if w.strip()))
    if not COMPARE_MIN <= len(words) <= COMPARE_MAX:
        raise ServiceError(f"a study has {COMPARE_MIN} to {COMPARE_MAX} distinct values ({len(words)} given)")
    if setting == "questions":
        bad = [w for w in words if w not in _QUESTIONS]
        if bad:
            raise ServiceError(f"questions are on or off, not {', '.join(bad)}")
        return words
    if setting == "review_mode":
        bad = [w for w in words if w not in ReviewMode.values]
        if bad:
            raise ServiceError(f"review modes are {', '.join(ReviewMode.values)}, not {', '.join(bad)}")
        return words
    if setting == "model":
        too_long = [w for w in words if len(w) > cast(int, Run._meta.get_field("model").max_length)]
        if too_long:
            raise ServiceError(f"a model id has at most 120 characters: {too_long[0][:40]}…")
        return words
    return [_positive(setting, w) for w in words]


def _recorded(task: Task, model: str, recordings: dict[str, dict]) -> dict:
    """The starting kernel and goal a run of `model` takes from its recording (none for a model that is none)."""
    recording = recordings.get(model)
    if recording and recording.get("task") not in (None, task.name):
        raise ServiceError(f"{model} is a recording of task {recording['task']}, not {task.name}: pick that task")
    return recorded_start(recording)


def study_start(
    *,
    task: Task,
    setting: str,
    values: list[str],
    model: str,
    user=None,
    review_mode: str = ReviewMode.AUTO,
    review_timeout_s: int | None = None,
    budget_steps: int | None = None,
    budget_tokens: int | None = None,
    budget_cost_usd: Decimal | None = None,
    budget_wall_s: int | None = None,
    budget_evaluations: int | None = None,
    recordings: dict[str, dict] | None = None,
) -> Study:
    """Queue one run per value of `setting`, all else as given, tagged as one study; all or none.

    `recordings`: the recorded config of each model that is a recording found here (`runs.model_options`): a run
    of one starts from the kernel and goal it was recorded with, as a single run of it does."""
    parsed = study_values(setting, values)
    base = run_settings(
        model=model,
        user=user,
        review_mode=review_mode,
        review_timeout_s=review_timeout_s,
        budget_steps=budget_steps,
        budget_tokens=budget_tokens,
        budget_cost_usd=budget_cost_usd,
        budget_wall_s=budget_wall_s,
        budget_evaluations=budget_evaluations,
    )
    options = model_options()  # what can run here: a run that cannot is refused, not queued to fail
    with transaction.atomic():
        return study_queue(task, setting, parsed, base, options=options, recordings=recordings or {}, user=user)


def run_settings(
    *,
    model: str,
    user=None,
    review_mode: str = ReviewMode.AUTO,
    review_timeout_s: int | None = None,
    budget_steps: int | None = None,
    budget_tokens: int | None = None,
    budget_cost_usd: Decimal | None = None,
    budget_wall_s: int | None = None,
    budget_evaluations: int | None = None,
) -> dict:
    """What every run of a study shares (run_start's arguments but the task and the setting that differs),
    refused (ServiceError) when a number is outside its ceiling (RUN_SETTING_MAX)."""
    settings = {
        "model": model,
        "started_by": user,
        "review_mode": review_mode,
        "review_timeout_s": review_timeout_s,
        "budget_steps": budget_steps,
        "budget_tokens": budget_tokens,
        "budget_cost_usd": budget_cost_usd,
        "budget_wall_s": budget_wall_s,
        "budget_evaluations": budget_evaluations,
    }
    if refusal := _settings_refusal(settings):
        raise ServiceError(refusal)
    return settings


def study_queue(
    task: Task, setting: str, parsed: list, base: dict, *, options, recordings: dict, user=None, suite_study=None
) -> Study:
    """The study of `task` and its runs, one per parsed value; the caller holds the transaction (all or none).
    `suite_study`: the suite study it is one problem of (runs/services/suites.py)."""
    study = Study.objects.create(task=task, setting=setting, values=parsed, created_by=user, suite_study=suite_study)
    for value in parsed:
        fields = {"task": task, **base}
        if setting == "questions":
            fields["asks_questions"] = _QUESTIONS[value]
        else:
            fields[setting] = value
        if not fields["model"]:
            raise ServiceError("the study's runs need a model")
        recorded = _recorded(task, fields["model"], recordings)
        if refusal := model_refusal(fields["model"], options):
            raise ServiceError(refusal)
        run_start(**fields, **recorded, study=study)
    return study
