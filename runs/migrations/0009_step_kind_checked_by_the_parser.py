"""A step's kind is checked by the event parser (runs/event_parser.py) against agentloop/protocol.py, no longer by a
database constraint: a new event kind needs no migration."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0008_refused_events_task_scenarios"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="step", name="step_kind_valid"),
        migrations.AlterField(
            model_name="step",
            name="kind",
            field=models.CharField(help_text="One of agentloop.protocol.KINDS", max_length=32),
        ),
    ]
