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


def write_release(folder, source="__global__ void k() {}\n", results=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cu").write_text(source)
    lines = ['name = "demo-kernel"', 'task = "attention_fwd"', 'source = "k.cu"', 'target_arch = "sm_90a"']
    if results is not None:
        (folder / "results.json").write_text(json.dumps(results))
        lines.append('results = "results.json"')
    (folder / "release.toml").write_text("\n".join(lines) + "\n")


def load(kernels_dir):
    out = io.StringIO()
    call_command("load_released_kernels", "--kernels-dir", str(kernels_dir), stdout=out)
    return out.getvalue()


def test_a_released_kernel_is_loaded_once_with_its_results(tmp_path):
    source = "__global__ void k() {}\n"
    result = {
        "status": "correct",
        "kernel_sha256": sha256_text(source),
        "geomean": {"flash": {"speedup": 1.2, "count": 1}},
        "scenarios": [{"id": "s1", "params": {}, "correct": True, "speedup": {"flash": 1.2}, "time_ms": 1.0}],
    }
    write_release(tmp_path / "demo", source, result)
    assert "released" in load(tmp_path)
    assert "up to date" in load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    assert kernel.release_name == "demo-kernel" and kernel.evaluations.get().speedup_over("flash") == 1.2


def test_a_changed_source_takes_over_the_release_name(tmp_path):
    write_release(tmp_path / "demo", "// v1\n")
    load(tmp_path)
    write_release(tmp_path / "demo", "// v2\n")
    load(tmp_path)
    assert Kernel.objects.get(released=True).source == "// v2\n"
    assert Kernel.objects.count() == 2


def test_results_recorded_for_another_source_are_refused(tmp_path):
    write_release(
        tmp_path / "demo", "// v2\n", {"status": "correct", "kernel_sha256": sha256_text("// v1\n"), "scenarios": []}
    )
    with pytest.raises(CommandError, match="re-run the evaluation"):
        load(tmp_path)
    assert not Kernel.objects.exists()


def test_a_manifest_without_its_source_is_refused_by_name(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "release.toml").write_text('name = "x"\ntask = "t"\nsource = "missing.cu"\n')
    with pytest.raises(CommandError, match="missing.cu is not there"):
        load(tmp_path)


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
