"""Writes to suites: a suite read from its folder's manifest (suite.json), and a study over a suite.

A suite is read whole or not at all: its manifest is checked before anything is stored (runs.suite_manifest),
and its problems are replaced in one transaction, each imported one linked to the dashboard's task of its name.

A suite study (docs/fork.md, "Suite studies") is one `Study` per imported problem, each with one run per arm (a
value of the setting that differs), grouped by a `SuiteStudy`: every problem's study is then an ordinary study of
one task (its compare page works unchanged), and the scoreboard reads every run of the suite study through one
join (`Run.study.suite_study`). All the runs are queued or none.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import cast

from django.db import transaction

from runs.model_options import model_options
from runs.models import ReviewMode, Suite, SuiteProblem, SuiteStudy, Task
from runs.services.errors import ServiceError
from runs.services.studies import run_settings, study_queue, study_values
from runs.suite_manifest import HAS_TASK, IMPORTED, Manifest, ManifestError, read_manifest


def suite_sync(folder: Path, *, name: str | None = None) -> Suite:
    """Store the suite of `folder` (its suite.json) under `name` (default: the folder's name), replacing what
    an earlier read stored; ServiceError, with nothing written, for a manifest that is not one."""
    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
    except ManifestError as error:
        raise ServiceError(str(error)) from None
    return suite_store(manifest, name=name or folder.resolve().name, folder=str(folder.resolve()))


def suite_store(manifest: Manifest, *, name: str, folder: str = "") -> Suite:
    """Store a checked manifest as the suite `name`: its problems replaced, each one whose folder holds a task
    linked to the dashboard's task of that name (none where sync_tasks did not load it)."""
    if not name or len(name) > cast(int, Suite._meta.get_field("name").max_length):
        raise ServiceError(f"a suite's name has 1 to 200 characters, not {len(name)}")
    names = [p.name for p in manifest.problems if p.outcome in HAS_TASK]
    tasks = {task.name: task for task in Task.objects.filter(name__in=names)}
    with transaction.atomic():
        suite, _ = Suite.objects.update_or_create(
            name=name,
            defaults={
                "source": manifest.source,
                "format": manifest.format,
                "folder": folder,
                "manifest": manifest.data,
            },
        )
        suite.problems.all().delete()
        SuiteProblem.objects.bulk_create(
            SuiteProblem(
                suite=suite,
                position=position,
                file=problem.file,
                name=problem.name,
                outcome=problem.outcome,
                reason=problem.reason,
                scenarios=problem.scenarios,
                task=tasks.get(problem.name) if problem.outcome in HAS_TASK else None,
            )
            for position, problem in enumerate(manifest.problems)
        )
    return suite


def suite_study_tasks(suite: Suite) -> list[Task]:
    """The tasks a study over `suite` runs: its problems imported with their check passed, whose task the
    dashboard holds, in the manifest's order."""
    problems = suite.problems.filter(outcome=IMPORTED, task__isnull=False).select_related("task").order_by("position")
    return [cast(Task, problem.task) for problem in problems]  # (an imported problem has its task)


def suite_study_start(
    *,
    suite: Suite,
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
) -> SuiteStudy:
    """Queue one run per arm (a value of `setting`) on every imported problem of `suite`, all else as given;
    all or none. The queue hands them to the connected workers that serve each task's target (run_claim)."""
    parsed = study_values(setting, values)
    tasks = suite_study_tasks(suite)
    if not tasks:
        raise ServiceError(f"suite {suite.name} has no imported problem whose task is on the dashboard: run sync_tasks")
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
    options = model_options()  # read once: what can run here, for every run of every problem
    with transaction.atomic():
        suite_study = SuiteStudy.objects.create(suite=suite, setting=setting, values=parsed, created_by=user)
        for task in tasks:
            study_queue(
                task,
                setting,
                parsed,
                base,
                options=options,
                recordings=recordings or {},
                user=user,
                suite_study=suite_study,
            )
    return suite_study
