"""Load the released kernels of this checkout into the database, idempotently.

A released kernel is a folder under `kernels/` holding a `release.toml`:

    name = "attention-fwd-sm90"        # the release name (unique)
    task = "attention_fwd"             # the harness task it implements
    source = "attention_fwd_sm90.cu"   # the single source file, beside release.toml
    target_arch = "sm_90a"             # blank for CPU kernels
    results = "results_h200.json"      # optional: the harness's `--json` output for this exact source
    development_trace = "../../lab/attention_fwd_sm90/trace.jsonl.xz"   # optional: how it was made

A kernel whose source changed gets a new row and takes over the release name; results recorded for another
source (their sha256 differs) are refused rather than attached to the wrong kernel.

The development trace (the harness's `--trace` lines of the lab's evaluations, each with the question asked then
as its note; a path from the release's folder, plain or xz, any number of concatenated xz streams) is imported
once as an imported run (runs.services.development: loading again finds it by the trace's path and digest) and
linked to the kernel; the kernel's page links to it, and the run's page names the kernel. It is read under the
trace upload's limit (KSEEK_TRACE_UPLOAD_MAX_BYTES, counted on the decompressed bytes as they come). It is optional
all the way: where the file is absent (an install without the lab) or cannot be imported (over the limit, or a
broken line: the refusal names the file and the line), the kernel and its results load anyway and the command says
why in one line. The import notifies no one (runs/notify.py sends nothing for an imported run).
"""

import json
import tomllib
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from runs.models import Kernel, Task
from runs.services import ServiceError, evaluation_record, kernel_record, kernel_release, sha256_text
from runs.services.development import development_trace_name, development_trace_read, kernel_development_link

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
            manifest = read_release(manifest_path)
            kernel = self.load_one(manifest)
            if manifest.get("development_trace"):
                self.load_development(manifest, kernel)

    def load_development(self, manifest: dict, kernel: Kernel) -> None:
        """Link the kernel to its development run; never fails the kernel (see the module's docstring)."""
        given = manifest["development_trace"]
        path = manifest["source_path"].parent / given
        if not path.is_file():
            self.stdout.write(f"{manifest['name']}: no development trace at {given} (the lab is not here)")
            return
        try:
            with development_trace_read(path) as trace:
                run, imported = kernel_development_link(
                    kernel=kernel, lines=trace.file, name=development_trace_name(given, trace.sha256)
                )
        except ServiceError as error:
            self.stderr.write(f"{manifest['name']}: development trace {given} not imported: {error}")
            return
        done = "imported as" if imported else "already imported as"
        self.stdout.write(f"{manifest['name']}: development trace {done} run {run.pk}")

    @transaction.atomic
    def load_one(self, manifest: dict) -> Kernel:
        source = manifest["source_path"].read_text()
        digest = sha256_text(source)
        current = Kernel.objects.filter(released=True, release_name=manifest["name"], sha256=digest).first()
        if current:
            self.stdout.write(f"{manifest['name']}: up to date ({digest[:12]})")
            return current
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
        return kernel
