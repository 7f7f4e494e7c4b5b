# The verdict stored once (issue 37, item 5): 0020 moved every evaluation's verdict into its `verdict` field; its
# old columns and the per-scenario rows go. Its own migration, so that on PostgreSQL the tables are altered in a
# transaction of their own, not the one that wrote the rows.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0020_evaluation_verdict"),
    ]

    operations = [
        migrations.DeleteModel(name="ScenarioResult"),
        *(
            migrations.RemoveField(model_name="evaluation", name=name)
            for name in (
                "host",
                "gpu_name",
                "reason",
                "scenario_set",
                "geomean",
                "peaks",
                "host_load",
                "started_at",
                "finished_at",
            )
        ),
    ]
