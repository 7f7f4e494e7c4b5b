# Each run's best keeps the interval of the evaluation that set it (issue 34, item 4): the field, and the
# intervals of the bests already stored, found by replaying each run's verified evaluations in order as
# runs.services.kernels raises a best.

from django.db import migrations, models

from gpu_harness import figures


def _verdict(evaluation) -> dict:
    # Evaluation.verdict() of the historical model, which has no methods.
    scenarios = []
    for s in evaluation.scenarios.all():
        noise = s.noise if isinstance(s.noise, dict) else {}
        scenarios.append(
            {**noise, "id": s.scenario_id, "correct": s.correct, "time_ms": s.time_ms, "speedup": s.speedups}
        )
    return {"status": evaluation.status, "geomean": evaluation.geomean, "scenarios": scenarios}


def _replayed_intervals(run, evaluations) -> dict:
    full_ids = list(run.task.scenario_ids or [])
    best: dict = {}
    intervals: dict = {}
    for evaluation in evaluations:
        verdict = _verdict(evaluation)
        if figures.standing(verdict, full_ids) != figures.VERIFIED or not figures.all_correct(verdict):
            continue
        intervals = figures.best_intervals_after(best, intervals, verdict)
        best = figures.best_per_baseline(best, verdict)
    # Only where the replay reaches the best the run holds: an interval is never put beside another figure.
    return {name: value for name, value in intervals.items() if best.get(name) == run.best_speedups.get(name)}


def backfill(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    Evaluation = apps.get_model("runs", "Evaluation")
    for run in Run.objects.filter(imported_from="").select_related("task").iterator():
        if not run.best_speedups:
            continue
        evaluations = Evaluation.objects.filter(run=run, status="correct").prefetch_related("scenarios").order_by("pk")
        intervals = _replayed_intervals(run, evaluations)
        if intervals:
            Run.objects.filter(pk=run.pk).update(best_intervals=intervals)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0018_kernel_development_run"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="best_intervals",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
