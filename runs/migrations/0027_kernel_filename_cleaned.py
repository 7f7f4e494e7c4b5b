from django.db import migrations

from runs.services.kernels import safe_filename


def clean_kernel_filenames(apps, schema_editor):
    """A kernel kept before kernel_record cleaned names may hold a path, control or bidi characters: its name made
    what kernel_record keeps now (runs.services.kernels.safe_filename, the one cleaning), so the pages show what the
    download sends. A clean name is unchanged by it, so only the rows that differ are written."""
    Kernel = apps.get_model("runs", "Kernel")
    stored = Kernel.objects.exclude(filename="").values_list("pk", "filename", "language")
    for pk, filename, language in stored.iterator(chunk_size=1000):
        cleaned = safe_filename(filename, language)
        if cleaned != filename:
            Kernel.objects.filter(pk=pk).update(filename=cleaned)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0026_run_cost_incomplete"),
    ]

    operations = [
        migrations.RunPython(clean_kernel_filenames, migrations.RunPython.noop),
    ]
