"""Load the released kernels of this checkout into the database, idempotently.

A released kernel is a folder under `kernels/` holding a `release.toml`:

    name = "attention-fwd-sm90"        # the release name (unique)
    task = "attention_fwd"             # the harness task it implements
    source = "attention_fwd_sm90.cu"   # the single source file, beside release.toml
    target_arch = "sm_90a"             # blank for CPU kernels
    results = "results_h200.json"      # optional: the harness's `--json` output for this exact source

A kernel whose source changed gets a new row and takes over the release name; results recorded for another
source (their sha256 differs) are refused rather than attached to the wrong kernel.
"""

import json
import tomllib
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from runs.models import Kernel, Task
from runs.services import evaluation_record, kernel_record, kernel_release, sha256_text

REQUIRED = ("name", "task", "source")


def read_release(manifest_path: Path) -> dict:
    try:
        manifest = tomllib.loads(manifest_path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise CommandError(f"{manifest_path}: not valid TOML ({error})") from None
    missing = [key for key in REQUIRED if not manifest.get(key)]
    if missing:
        raise CommandError(f"{manifest_path}: missing {', '.join(missing)}")
    source_path = manifest_path.parent / manifest["source"]
    if not source_path.is_file():
        raise CommandError(f"{manifest_path}: source file {source_path.name} is not there")
    manifest["source_path"] = source_path
    if manifest.get("results"):
        results_path = manifest_path.parent / manifest["results"]
        if not results_path.is_file():
            raise CommandError(f"{manifest_path}: results file {results_path.name} is not there")
        manifest["results_path"] = results_path
    return manifest


class Command(BaseCommand):
    help = "Load kernels/*/release.toml into the database (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--kernels-dir", default=str(Path(settings.BASE_DIR) / "kernels"))

    def handle(self, *args, kernels_dir, **options):
        manifests = sorted(Path(kernels_dir).glob("*/release.toml"))
        if not manifests:
            self.stdout.write("No released kernels in this checkout.")
            return
        for manifest_path in manifests:
            self.load_one(read_release(manifest_path))

    @transaction.atomic
    def load_one(self, manifest: dict) -> None:
        source = manifest["source_path"].read_text()
        digest = sha256_text(source)
        current = Kernel.objects.filter(released=True, release_name=manifest["name"], sha256=digest).first()
        if current:
            self.stdout.write(f"{manifest['name']}: up to date ({digest[:12]})")
            return
        task = Task.objects.filter(name=manifest["task"]).first()
        language = "cpp" if manifest["source_path"].suffix in (".cpp", ".cc") else "cuda"
        kernel = kernel_record(
            source=source,
            task=task,
            language=language,
            target_arch=manifest.get("target_arch", ""),
            filename=manifest["source_path"].name,
        )
        kernel_release(kernel=kernel, name=manifest["name"])
        if "results_path" in manifest:
            result = json.loads(manifest["results_path"].read_text())
            recorded_for = result.get("kernel_sha256")
            if recorded_for and recorded_for != digest:
                raise CommandError(
                    f"{manifest['results_path']}: results are for source {recorded_for[:12]}, "
                    f"but {manifest['source_path'].name} is {digest[:12]}: re-run the evaluation"
                )
            evaluation_record(kernel=kernel, result=result)
        self.stdout.write(self.style.SUCCESS(f"{manifest['name']}: released {digest[:12]}"))
