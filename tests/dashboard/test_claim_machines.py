"""A figure no harness here measured says which GPU it came from wherever it is shown beside others: the
kernels list's "Recorded with the release" and an imported trace's claim in "Produced by runs", and an imported
run's evaluation lines. A lab's trace may hold an H100's screens among an H200's (rmsnorm's does: steps 17 to 23),
and a release's record is an H200's: before, nothing on those lists or lines said which, so an H100's 1.360x
stood beside an H200's 1.548x as if measured alike."""

import html
import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.models import Kernel, Run
from runs.services import sha256_text
from tests.dashboard.helpers import eval_result, make_user
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def on(device: str, speedup: float, source: str) -> dict:
    verdict = eval_result(speedup, source=source)
    verdict.update(device_name=device, kernel_sha256=sha256_text(source))
    return verdict


@pytest.fixture
def release(tmp_path):
    """A release recorded on an H200 whose development trace holds an H200's evaluation and an H100's."""
    make_task()
    source = "// released\n"
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "k.cpp").write_text(source)
    (folder / "results.json").write_text(json.dumps(on("NVIDIA H200", 1.5, source)))
    trace = [
        {"kind": "evaluation", "note": "on the H200", **on("NVIDIA H200", 1.548, "// c5 on the H200\n")},
        {"kind": "evaluation", "note": "on the H100", **on("NVIDIA H100 80GB HBM3", 1.360, "// c5 on the H100\n")},
    ]
    (folder / "trace.jsonl").write_text("".join(json.dumps(line) + "\n" for line in trace))
    (folder / "release.toml").write_text(
        'name = "demo-release"\ntask = "matmul_cpu"\nsource = "k.cpp"\nresults = "results.json"\n'
        'development_trace = "trace.jsonl"\n'
    )
    call_command("load_released_kernels", "--kernels-dir", str(tmp_path), stdout=io.StringIO())
    return Kernel.objects.get(released=True)


def row_of(page: str, marker: str) -> str:
    """The text of the table row `marker` starts, its tags dropped and its spaces collapsed."""
    row = page[page.index(marker) :].split(">", 1)[1].split("</tr>")[0]
    return " ".join(re.sub(r"<[^>]+>", " ", row).split())


def test_the_kernels_list_says_which_gpu_each_claim_came_from(viewer, release):
    page = html.unescape(viewer.get(reverse("kernels")).content.decode())
    assert "1.500× over naive recorded on NVIDIA H200, not measured here" in row_of(page, 'data-release="demo-release"')
    h200 = row_of(page, f'data-sha="{sha256_text("// c5 on the H200" + chr(10))}"')
    h100 = row_of(page, f'data-sha="{sha256_text("// c5 on the H100" + chr(10))}"')
    assert "· 1.548× (imported: a trace's claim, on NVIDIA H200, not measured here)" in h200
    assert "· 1.360× (imported: a trace's claim, on NVIDIA H100 80GB HBM3, not measured here)" in h100


def test_an_imported_runs_evaluation_lines_say_which_gpu(viewer, release):
    run = Run.objects.get(imported_from__isnull=False)
    steps = viewer.get(reverse("run_steps", args=[run.pk])).json()["steps"]
    lines = {step["seq"]: step["summary"] for step in steps}
    assert lines[0].endswith("(tool, full, imported, NVIDIA H200)")
    assert lines[1].endswith("(tool, full, imported, NVIDIA H100 80GB HBM3)")
