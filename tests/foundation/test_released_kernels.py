"""Loading kernels/*/release.toml (load_released_kernels): a release loads with its own results only, each release
loads or is refused alone, and a refusal is one line naming its file (reproducers of the trace audit's findings 5
and 6 among them)."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.management.commands.load_released_kernels import read_release
from runs.models import Kernel
from runs.services import sha256_text

pytestmark = pytest.mark.django_db

SOURCE = "__global__ void k() {}\n"


@pytest.fixture(autouse=True)
def tasks():
    call_command("sync_tasks", stdout=io.StringIO(), stderr=io.StringIO())


def write_release(folder, source=SOURCE, results=None, name="demo-kernel", task="attention_fwd", note=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cu").write_text(source)
    lines = [f'name = "{name}"', f'task = "{task}"', 'source = "k.cu"', 'target_arch = "sm_90a"']
    if note is not None:
        lines.append(f"note = {json.dumps(note)}")  # a TOML basic string is a JSON string
    if results is not None:
        text = results if isinstance(results, str) else json.dumps(results)
        (folder / "results.json").write_text(text)
        lines.append('results = "results.json"')
    (folder / "release.toml").write_text("\n".join(lines) + "\n")


def verdict(source=SOURCE, **fields):
    """The harness's `--json` verdict of `source` on the attention task; `fields` change or (None) drop fields."""
    result = {
        "status": "correct",
        "task": "attention_fwd",
        "kernel_sha256": sha256_text(source),
        "geomean": {"flash": {"speedup": 1.2, "count": 1}},
        "scenarios": [{"id": "s1", "params": {}, "correct": True, "speedup": {"flash": 1.2}, "time_ms": 1.0}],
    }
    result.update(fields)
    return {key: value for key, value in result.items() if value is not None}


def load(kernels_dir):
    out = io.StringIO()
    call_command("load_released_kernels", "--kernels-dir", str(kernels_dir), stdout=out)
    return out.getvalue()


def refused(kernels_dir) -> tuple[str, str, str]:
    """Load a folder where some release is refused: (stdout, stderr, the command's error)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("load_released_kernels", "--kernels-dir", str(kernels_dir), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), str(failure.value)


def test_a_released_kernel_is_loaded_once_with_its_results(tmp_path):
    write_release(tmp_path / "demo", SOURCE, verdict())
    out = load(tmp_path)
    assert "demo-kernel: released" in out and "released kernels: loaded 1, refused 0" in out
    assert "up to date" in load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    assert kernel.release_name == "demo-kernel" and kernel.evaluations.get().speedup_over("flash") == 1.2


def test_a_release_note_is_loaded_beside_the_results_and_a_changed_one_replaces_it(tmp_path):
    write_release(tmp_path / "demo", SOURCE, verdict(), note="  FA3's figure held host waits.  ")
    load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    assert kernel.release_note == "FA3's figure held host waits." and kernel.evaluations.count() == 1
    write_release(tmp_path / "demo", SOURCE, verdict(), note="Measured again: level with FA3.")
    assert "up to date" in (out := load(tmp_path)) and "its note changed" in out
    kernel.refresh_from_db()
    assert kernel.release_note == "Measured again: level with FA3." and Kernel.objects.count() == 1
    assert kernel.evaluations.count() == 1  # the measured verdict is not touched
    write_release(tmp_path / "demo", SOURCE, verdict())
    load(tmp_path)
    kernel.refresh_from_db()
    assert kernel.release_note == ""


@pytest.mark.parametrize(
    "line, why",
    [
        ("note = 3", "note is not a string"),
        (f"note = {json.dumps('x' * 2001)}", "note is 2001 characters, over 2000"),
    ],
)
def test_a_note_that_is_not_a_short_string_is_refused(tmp_path, line, why):
    write_release(tmp_path / "demo", SOURCE, verdict())
    manifest = tmp_path / "demo" / "release.toml"
    manifest.write_text(manifest.read_text() + line + "\n")
    _, err, _ = refused(tmp_path)
    assert f"refused: {manifest}: {why}" in err and not Kernel.objects.exists()


def test_a_changed_source_takes_over_the_release_name(tmp_path):
    write_release(tmp_path / "demo", "// v1\n")
    load(tmp_path)
    write_release(tmp_path / "demo", "// v2\n")
    load(tmp_path)
    assert Kernel.objects.get(released=True).source == "// v2\n"
    assert Kernel.objects.count() == 2


def test_results_recorded_for_another_source_are_refused(tmp_path):
    write_release(tmp_path / "demo", "// v2\n", verdict(kernel_sha256=sha256_text("// v1\n")))
    _, err, _ = refused(tmp_path)
    assert f"{tmp_path / 'demo' / 'results.json'}: results are for source" in err and "re-run the evaluation" in err
    assert not Kernel.objects.exists()


def test_a_manifest_without_its_source_is_refused_by_name(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "release.toml").write_text('name = "x"\ntask = "t"\nsource = "missing.cu"\n')
    _, err, _ = refused(tmp_path)
    assert f"refused: {tmp_path / 'broken' / 'release.toml'}: source file missing.cu is not there" in err


# Finding 5: a results file names the source and the task it measured, and the release names a known task.


def test_results_without_kernel_sha256_are_refused_not_attached_to_another_source(tmp_path):
    # The audit's r1b: another source's results with their sha256 taken out loaded as this source's (40x shown).
    write_release(tmp_path / "demo", "// a different kernel entirely\n", verdict(kernel_sha256=None))
    _, err, error = refused(tmp_path)
    assert f"refused: {tmp_path / 'demo' / 'results.json'}: no kernel_sha256" in err
    assert "loaded 0, refused 1" in error
    assert not Kernel.objects.exists()


def test_results_of_another_task_or_of_none_are_refused(tmp_path):
    # The audit's r6: softmax results attached to an rmsnorm kernel.
    write_release(tmp_path / "other", SOURCE, verdict(task="softmax_rows"), name="other-task")
    write_release(tmp_path / "untold", SOURCE, verdict(task=None), name="no-task")
    _, err, error = refused(tmp_path)
    other, untold = tmp_path / "other" / "results.json", tmp_path / "untold" / "results.json"
    assert f"{other}: task 'softmax_rows' is not release.toml's task 'attention_fwd'" in err
    assert f"{untold}: task 'None' is not release.toml's task 'attention_fwd'" in err
    assert "loaded 0, refused 2" in error and not Kernel.objects.exists()


def test_a_release_of_a_task_this_site_does_not_have_is_refused(tmp_path):
    write_release(tmp_path / "demo", SOURCE, verdict(task="no_such_task"), task="no_such_task")
    _, err, _ = refused(tmp_path)
    assert f"{tmp_path / 'demo' / 'release.toml'}: task 'no_such_task' is not one of this site's tasks" in err
    assert not Kernel.objects.exists()


def test_a_release_name_that_is_not_a_slug_is_refused(tmp_path):
    write_release(tmp_path / "demo", name="<img src=x onerror=alert(1)>")
    _, err, _ = refused(tmp_path)
    assert f"{tmp_path / 'demo' / 'release.toml'}: name '<img src=x onerror=alert(1)>' is not a slug" in err
    assert not Kernel.objects.exists()


# Finding 6: one bad release never stops the others; bad input is one line naming the file, never a traceback.


def test_a_refused_release_does_not_stop_the_next_one(tmp_path):
    write_release(tmp_path / "a_mismatch", SOURCE, verdict(kernel_sha256=sha256_text("// v1\n")), name="a-mismatch")
    write_release(tmp_path / "b_fine", "// fine\n", verdict("// fine\n"), name="b-fine")
    out, err, error = refused(tmp_path)
    assert "b-fine: released" in out and Kernel.objects.get(released=True).release_name == "b-fine"
    assert [line for line in err.splitlines() if line.startswith("refused: ")] == [
        line for line in err.splitlines() if "a_mismatch" in line
    ]
    assert error == "released kernels: loaded 1, refused 1 (each refusal above names its file and why)"


@pytest.mark.parametrize(
    ("results", "why"),
    [
        ("[1,2]\n", "not a JSON object but an array"),
        ('{"status": "correct",\n', "not valid JSON (line 2, column 1: Expecting property name"),
        ('{"status": "correct"\n  "task": 1}', "not valid JSON (line 2, column 3: Expecting ','"),
        ("null", "not a JSON object but null"),
        (
            json.dumps(verdict(scenarios=[{"correct": True}])),
            "not a verdict that can be stored (each of a verdict's scenarios must be an object with its id",
        ),
    ],
)
def test_a_broken_results_file_is_one_line_naming_the_file(tmp_path, results, why):
    write_release(tmp_path / "a_broken", SOURCE, results, name="a-broken")
    write_release(tmp_path / "b_fine", "// fine\n", name="b-fine")
    out, err, _ = refused(tmp_path)
    assert err.startswith(f"refused: {tmp_path / 'a_broken' / 'results.json'}: {why}")
    assert len(err.splitlines()) == 1 and "b-fine: released" in out
    assert list(Kernel.objects.values_list("release_name", flat=True)) == ["b-fine"]


def test_a_missing_results_file_is_refused_by_name(tmp_path):
    write_release(tmp_path / "demo", SOURCE, verdict())
    (tmp_path / "demo" / "results.json").unlink()
    _, err, _ = refused(tmp_path)
    assert f"refused: {tmp_path / 'demo' / 'release.toml'}: results file results.json is not there" in err


def test_a_refused_release_leaves_an_earlier_version_as_it_was(tmp_path):
    write_release(tmp_path / "demo", "// v1\n", verdict("// v1\n"))
    load(tmp_path)
    write_release(tmp_path / "demo", "// v2\n", verdict("// v1\n"))  # a new source, its results not re-run
    refused(tmp_path)
    kept = Kernel.objects.get()
    assert (kept.source, kept.released, kept.evaluations.count()) == ("// v1\n", True, 1)


def test_bootstrap_reports_a_refused_release_and_goes_on(tmp_path, settings, monkeypatch):
    # `make run` runs bootstrap and then serves: a refused release is printed, the site still starts.
    monkeypatch.setenv("KSEEK_ADMIN_PASSWORD", "correct-horse-battery")
    settings.BASE_DIR = tmp_path  # load_released_kernels reads BASE_DIR/kernels
    write_release(tmp_path / "kernels" / "a_array", SOURCE, "[1,2]", name="a-array")
    write_release(tmp_path / "kernels" / "b_fine", "// fine\n", name="b-fine")
    out, err = io.StringIO(), io.StringIO()
    call_command("bootstrap", stdout=out, stderr=err)
    assert f"refused: {tmp_path / 'kernels' / 'a_array' / 'results.json'}: not a JSON object" in err.getvalue()
    assert "bootstrap: load_released_kernels: released kernels: loaded 1, refused 1" in err.getvalue()
    assert "bootstrap: ensure_admin" in out.getvalue()
    assert list(Kernel.objects.values_list("release_name", flat=True)) == ["b-fine"]


def test_no_released_kernels_is_said_plainly(tmp_path):
    assert "No released kernels" in load(tmp_path)


def test_the_shipped_releases_carry_their_own_sources_results():
    # What `make run` loads: each kernels/*/release.toml of this checkout, whose results must be the evaluation of
    # the committed source (a new release that forgot to point release.toml at its own results fails here, not in
    # a user's dashboard).
    manifests = sorted((Path(__file__).resolve().parents[2] / "kernels").glob("*/release.toml"))
    assert manifests
    for path in manifests:
        manifest = read_release(path)
        assert "results_path" in manifest, path
        result = json.loads(manifest["results_path"].read_text())
        assert result["kernel_sha256"] == sha256_text(manifest["source_path"].read_text()), path
        assert result["status"] == "correct", path
