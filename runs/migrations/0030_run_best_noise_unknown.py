# Each run's best says whether its noise is unknown (the audit of bare bests): the field, and the marker of the
# bests already stored, found by replaying each run's verified evaluations in order as runs.services.kernels
# raises a best (as 0019 found their intervals). Only runs with a best that has no interval are read: a best
# with one is known not to be of unknown noise, so the replay reads no verdict of most runs.

from django.db import migrations, models

from gpu_harness import figures


def _replayed_noise_unknown(run, verdicts) -> list:
    full_ids = list(run.task.scenario_ids or [])
    best: dict = {}
    unknown: list = []
    for verdict in verdicts:
        if figures.standing(verdict, full_ids) != figures.VERIFIED or not figures.all_correct(verdict):
            continue
        unknown = figures.best_noise_unknown_after(best, unknown, verdict)
        best = figures.best_per_baseline(best, verdict)
    # Only where the replay reaches the best the run holds: a marker is never put beside another figure.
    return [name for name in unknown if best.get(name) == run.best_speedups.get(name)]


def _has_a_best_without_interval(run) -> bool:
    intervals = run.best_intervals or {}
    return any(name not in intervals for name in run.best_speedups or {})


def backfill(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    Evaluation = apps.get_model("runs", "Evaluation")
    markers = {}
    # An imported run's figures never move its bests (figures.standing), so it holds none to mark.
    for run in Run.objects.filter(imported_from="").select_related("task").iterator():
        if not _has_a_best_without_interval(run):
            continue
        correct = Evaluation.objects.filter(run=run, status="correct").order_by("pk")
        # one verdict at a time: a long run's verdicts are large (~150 KB each for attention's grid)
        unknown = _replayed_noise_unknown(run, correct.values_list("verdict", flat=True).iterator())
        if unknown:
            markers[run.pk] = unknown
    # written after the reading is done: SQLite does not isolate an open read from writes to its table
    for pk, unknown in markers.items():
        Run.objects.filter(pk=pk).update(best_noise_unknown=unknown)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0029_question_unheard_decision_reported"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="best_noise_unknown",
            field=models.JSONField(blank=True, default=list),
        ),
        # Backwards the field goes with AddField's reverse: nothing to undo here.
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
