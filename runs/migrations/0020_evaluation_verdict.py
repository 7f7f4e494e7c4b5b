# The verdict stored once (issue 37, item 5): each evaluation's verdict moves from its columns and its scenario rows
# into one JSON field, under the harness's own names (gpu_name -> device_name, each scenario's speedups -> speedup,
# its noise fields beside its other fields), as runs.services.kernels.stored_verdict stores a new one. 0021 then
# drops the columns and the rows. Back: the columns and rows again, from the field (a field the old columns had no
# place for, none of which a moved row has, is lost).
#
# What was stored is moved as it was: every value already passed the checks a verdict passes now (evaluation_record
# stored only well-formed peaks, host load and noise fields). Empty texts the columns kept for "none" (a reason, a
# host, a device) are left out, as the harness's verdict leaves out what it does not know; times as ISO 8601 text.

from django.db import migrations, models

OUTCOME_FIELDS = ("error", "time_ms", "tflops")


def _scenario(row) -> dict:
    scenario = {"id": row.scenario_id, "params": row.params or {}, "correct": row.correct}
    scenario.update({name: getattr(row, name) for name in OUTCOME_FIELDS if getattr(row, name) is not None})
    if row.reason:
        scenario["reason"] = row.reason
    scenario["speedup"] = row.speedups or {}
    return scenario | (row.noise if isinstance(row.noise, dict) else {})


def verdict_of_columns(evaluation) -> dict:
    """The verdict of an evaluation stored before the field: its columns and scenario rows, under the harness's names."""
    verdict: dict = {"status": evaluation.status}
    for name, value in (
        ("reason", evaluation.reason),
        ("host", evaluation.host),
        ("device_name", evaluation.gpu_name),
        ("scenario_set", evaluation.scenario_set),
    ):
        if value:
            verdict[name] = value
    verdict["geomean"] = evaluation.geomean or {}
    verdict["peaks"] = evaluation.peaks or {}
    verdict["host_load"] = evaluation.host_load or {}
    for name in ("started_at", "finished_at"):
        if (value := getattr(evaluation, name)) is not None:
            verdict[name] = value.isoformat()
    verdict["scenarios"] = [_scenario(row) for row in evaluation.scenarios.order_by("id")]
    return verdict


def forward(apps, schema_editor):
    Evaluation = apps.get_model("runs", "Evaluation")
    for evaluation in Evaluation.objects.filter(verdict={}).iterator(chunk_size=200):
        Evaluation.objects.filter(pk=evaluation.pk).update(verdict=verdict_of_columns(evaluation))


def backward(apps, schema_editor):
    from django.utils.dateparse import parse_datetime

    Evaluation = apps.get_model("runs", "Evaluation")
    ScenarioResult = apps.get_model("runs", "ScenarioResult")
    for evaluation in Evaluation.objects.iterator(chunk_size=200):
        verdict = evaluation.verdict or {}
        evaluation.reason = verdict.get("reason") or ""
        evaluation.host = (verdict.get("host") or "")[:120]
        evaluation.gpu_name = (verdict.get("device_name") or "")[:120]
        evaluation.scenario_set = (verdict.get("scenario_set") or "")[:40]
        evaluation.geomean = verdict.get("geomean") or {}
        evaluation.peaks = verdict.get("peaks") or {}
        evaluation.host_load = verdict.get("host_load") or {}
        evaluation.started_at = parse_datetime(verdict["started_at"]) if verdict.get("started_at") else None
        evaluation.finished_at = parse_datetime(verdict["finished_at"]) if verdict.get("finished_at") else None
        evaluation.save()
        noise_names = ("time_ci_ms", "spread_ms", "baseline_ms", "baseline_ci_ms")
        ScenarioResult.objects.filter(evaluation=evaluation).delete()
        ScenarioResult.objects.bulk_create(
            ScenarioResult(
                evaluation=evaluation,
                scenario_id=s["id"],
                params=s.get("params") or {},
                correct=bool(s.get("correct")),
                error=s.get("error"),
                reason=s.get("reason") or "",
                time_ms=s.get("time_ms"),
                tflops=s.get("tflops"),
                speedups=s.get("speedup") or {},
                noise={name: s[name] for name in noise_names if name in s},
            )
            for s in verdict.get("scenarios") or []
        )


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0019_run_best_intervals"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="verdict",
            field=models.JSONField(blank=True, default=dict, help_text="The harness's verdict (EvalResult.to_dict())"),
        ),
        migrations.RunPython(forward, backward),
    ]
