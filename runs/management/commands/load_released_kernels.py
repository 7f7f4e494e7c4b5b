"""Load the released kernels of this checkout into the database, idempotently.

A released kernel is a folder under `kernels/` holding a `release.toml`:

    name = "attention-fwd-sm90"        # the release name (unique; a slug: letters, digits, - and _)
    task = "attention_fwd"             # the harness task it implements (one of this site's tasks: sync_tasks)
    source = "attention_fwd_sm90.cu"   # the single source file, beside release.toml
    target_arch = "sm_90a"             # blank for CPU kernels
    results = "results_h200.json"      # optional: the harness's `--json` output for this exact source
    development_trace = "../../lab/attention_fwd_sm90/trace.jsonl.xz"   # optional: how it was made
    note = "..."                       # optional: what was learned of those figures since (at most 2000 characters)

A kernel whose source changed gets a new row and takes over the release name. A results file must name what it
measured: a JSON object whose `kernel_sha256` is the source's sha256 and whose `task` is release.toml's task (the
harness's `--json` writes both); one without either, or recorded for another source or task, is refused rather
than attached to the wrong kernel. The note is the maintainers' word beside the measured figures, never a change
to them: the kernel page shows it under its provenance, and loading again brings a changed note to the same kernel.

Each release is loaded in a transaction of its own, or refused whole with one line on stderr naming its file and
why (a missing field or file, a name that is not a slug, a task this site does not have, a results file that is not
JSON (with its line and column), not a JSON object, or not for this source); the others load regardless. The
command ends with "released kernels: loaded N, refused M" and, when M is not 0, fails (a CommandError: exit status
1 from manage.py, no traceback). `bootstrap` (`make run`) reports that failure and starts the site anyway.

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
from typing import cast

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import slug_re
from django.db import DataError, transaction

from runs.models import Kernel, Task
from runs.services import ServiceError, evaluation_record, kernel_record, kernel_release, sha256_text
from runs.services.development import development_trace_name, development_trace_read, kernel_development_link

REQUIRED = ("name", "task", "source")
OPTIONAL = ("target_arch", "results", "development_trace", "note")
NOTE_MAX = 2000  # characters: a paragraph beside the figures, not a second README
NAME_MAX = cast(int, Kernel._meta.get_field("release_name").max_length)  # a SlugField's, always set
JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _manifest(manifest_path: Path) -> dict:
    """release.toml's fields, each checked for its kind; CommandError naming the file and the field."""
    try:
        manifest = tomllib.loads(manifest_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise CommandError(f"{manifest_path}: not valid TOML ({error})") from None
    missing = [key for key in REQUIRED if not manifest.get(key)]
    if missing:
        raise CommandError(f"{manifest_path}: missing {', '.join(missing)}")
    for key in REQUIRED + OPTIONAL:
        if key in manifest and not isinstance(manifest[key], str):
            raise CommandError(f"{manifest_path}: {key} is not a string")
    if len(manifest.get("note", "")) > NOTE_MAX:
        raise CommandError(f"{manifest_path}: note is {len(manifest['note'])} characters, over {NOTE_MAX}")
    name = manifest["name"]
    if not slug_re.match(name) or len(name) > NAME_MAX:
        raise CommandError(
            f"{manifest_path}: name {name[:80]!r} is not a slug (letters, digits, - and _; at most {NAME_MAX})"
        )
    return manifest


def _results(manifest: dict, results_path: Path, digest: str) -> dict:
    """The results file's verdict, refused unless it is a JSON object for this source and this task."""
    try:
        result = json.loads(results_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CommandError(
            f"{results_path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    except (UnicodeDecodeError, RecursionError) as error:
        raise CommandError(f"{results_path}: not readable as JSON ({type(error).__name__})") from None
    if not isinstance(result, dict):
        kind = JSON_KINDS.get(type(result), "null")
        raise CommandError(f"{results_path}: not a JSON object but {kind} (a harness verdict is an object)")
    recorded_for = result.get("kernel_sha256")
    if not recorded_for or not isinstance(recorded_for, str):
        raise CommandError(
            f"{results_path}: no kernel_sha256: a results file must name the source it measured "
            "(the harness's --json writes it)"
        )
    if recorded_for != digest:
        raise CommandError(
            f"{results_path}: results are for source {recorded_for[:12]}, "
            f"but {manifest['source_path'].name} is {digest[:12]}: re-run the evaluation"
        )
    if result.get("task") != manifest["task"]:
        raise CommandError(
            f"{results_path}: task {str(result.get('task'))[:80]!r} is not release.toml's task {manifest['task']!r}"
        )
    return result


def read_release(manifest_path: Path) -> dict:
    """release.toml with its source (`source_path`, `source_text`) and, when it names one, its results file
    (`results_path`, `result`), each checked; CommandError naming the file for the first problem found."""
    manifest = _manifest(manifest_path)
    manifest["manifest_path"] = manifest_path
    source_path = manifest_path.parent / manifest["source"]
    if not source_path.is_file():
        raise CommandError(f"{manifest_path}: source file {source_path.name} is not there")
    try:
        manifest["source_text"] = source_path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{source_path}: not UTF-8 text") from None
    manifest["source_path"] = source_path
    if manifest.get("results"):
        results_path = manifest_path.parent / manifest["results"]
        if not results_path.is_file():
            raise CommandError(f"{manifest_path}: results file {results_path.name} is not there")
        manifest["results_path"] = results_path
        manifest["result"] = _results(manifest, results_path, sha256_text(manifest["source_text"]))
    return manifest


class Command(BaseCommand):
    help = "Load kernels/*/release.toml into the database (idempotent); fails when any release is refused."

    def add_arguments(self, parser):
        parser.add_argument("--kernels-dir", default=str(Path(settings.BASE_DIR) / "kernels"))

    def handle(self, *args, kernels_dir, **options):
        manifests = sorted(Path(kernels_dir).glob("*/release.toml"))
        if not manifests:
            self.stdout.write("No released kernels in this checkout.")
            return
        loaded = refused = 0
        for manifest_path in manifests:
            try:
                manifest = read_release(manifest_path)
                kernel = self.load_one(manifest)
            except CommandError as error:
                self.stderr.write(f"refused: {error}")
                refused += 1
                continue
            except DataError as error:  # e.g. PostgreSQL cannot hold a NUL character in a text value
                self.stderr.write(f"refused: {manifest_path}: the database cannot store it: {str(error).strip()[:200]}")
                refused += 1
                continue
            loaded += 1
            if manifest.get("development_trace"):
                self.load_development(manifest, kernel)
        summary = f"released kernels: loaded {loaded}, refused {refused}"
        if refused:
            raise CommandError(f"{summary} (each refusal above names its file and why)")
        self.stdout.write(summary)

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
        """Store the checked release (read_release); CommandError, naming the file, stores nothing of it."""
        task = Task.objects.filter(name=manifest["task"]).first()
        if task is None:
            raise CommandError(
                f"{manifest['manifest_path']}: task {manifest['task'][:80]!r} is not one of this site's tasks "
                "(manage.py sync_tasks loads them from the harness)"
            )
        source = manifest["source_text"]
        digest = sha256_text(source)
        note = manifest.get("note", "").strip()
        current = Kernel.objects.filter(released=True, release_name=manifest["name"], sha256=digest).first()
        if current:
            if current.release_note != note:
                current.release_note = note
                current.save(update_fields=["release_note"])
                self.stdout.write(f"{manifest['name']}: up to date ({digest[:12]}), its note changed")
            else:
                self.stdout.write(f"{manifest['name']}: up to date ({digest[:12]})")
            return current
        language = "cpp" if manifest["source_path"].suffix in (".cpp", ".cc") else "cuda"
        try:
            kernel = kernel_record(
                source=source,
                task=task,
                language=language,
                target_arch=manifest.get("target_arch", ""),
                filename=manifest["source_path"].name,
            )
        except ServiceError as error:
            raise CommandError(f"{manifest['source_path']}: {error}") from None
        kernel_release(kernel=kernel, name=manifest["name"], note=note)
        if "result" in manifest:
            try:
                evaluation_record(kernel=kernel, result=manifest["result"])
            except (ServiceError, KeyError, TypeError, ValueError, AttributeError) as error:
                reason = str(error) if isinstance(error, ServiceError) else f"{type(error).__name__}: {error}"
                raise CommandError(
                    f"{manifest['results_path']}: not a verdict that can be stored ({reason[:200]})"
                ) from None
        self.stdout.write(self.style.SUCCESS(f"{manifest['name']}: released {digest[:12]}"))
        return kernel
