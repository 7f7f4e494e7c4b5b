# The verdict's index column (Evaluation.scenarios_correct: scenario id -> correct), filled for the evaluations
# stored before it from their verdicts, so that the lists ranking many evaluations never decode whole verdicts.

from django.db import migrations, models


def fill_index(apps, schema_editor):
    Evaluation = apps.get_model("runs", "Evaluation")
    for evaluation in Evaluation.objects.only("pk", "verdict").iterator(chunk_size=200):
        scenarios = (evaluation.verdict or {}).get("scenarios") or []
        index = {s["id"]: bool(s.get("correct")) for s in scenarios if isinstance(s, dict) and "id" in s}
        if index:
            Evaluation.objects.filter(pk=evaluation.pk).update(scenarios_correct=index)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0021_verdict_columns_removed"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="scenarios_correct",
            field=models.JSONField(blank=True, default=dict, help_text="Scenario id -> correct (an index)"),
        ),
        # Going back drops the column; there is nothing else to undo.
        migrations.RunPython(fill_index, migrations.RunPython.noop),
    ]
