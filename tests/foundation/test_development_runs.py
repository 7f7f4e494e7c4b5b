"""A released kernel's development run (issue 35 item 4): release.toml's `development_trace`, the lab's harness
`--trace` lines, is imported once as a run and linked to the kernel; its page links to it and the run's page names
the kernel. Optional all the way: a missing or broken trace never stops the kernel from loading."""

import io
import lzma
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.models import Evaluation, Kernel, Run
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
LAB_TRACE = REPO / "lab" / "softmax_rows" / "trace.jsonl"  # plain JSON lines, one per harness evaluation


@pytest.fixture(autouse=True)
def tasks():
    call_command("sync_tasks", stdout=io.StringIO(), stderr=io.StringIO())


def trace_lines(count: int) -> list[str]:
    return LAB_TRACE.read_text().splitlines(keepends=True)[:count]


def write_release(folder: Path, trace_name: str | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cu").write_text("// a release\n")
    lines = ['name = "demo-softmax"', 'task = "softmax_rows"', 'source = "k.cu"', 'target_arch = "sm_90a"']
    if trace_name:
        lines.append(f'development_trace = "{trace_name}"')
    (folder / "release.toml").write_text("\n".join(lines) + "\n")


def load(kernels_dir: Path) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("load_released_kernels", "--kernels-dir", str(kernels_dir), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_trace_is_imported_once_and_linked_to_the_kernel(tmp_path):
    write_release(tmp_path / "demo", "trace.jsonl")
    (tmp_path / "demo" / "trace.jsonl").write_text("".join(trace_lines(2)))
    out, _ = load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    run = kernel.development_run
    assert run is not None and run.imported_from.startswith("trace trace.jsonl (sha256 ")
    assert f"development trace imported as run {run.pk}" in out
    assert Evaluation.objects.filter(run=run).count() == 2
    out, _ = load(tmp_path)  # a second load finds the run
    assert f"already imported as run {run.pk}" in out and Run.objects.count() == 1


def test_an_xz_trace_of_several_streams_is_read_whole(tmp_path):
    write_release(tmp_path / "demo", "trace.jsonl.xz")
    first, second = trace_lines(2)
    (tmp_path / "demo" / "trace.jsonl.xz").write_bytes(lzma.compress(first.encode()) + lzma.compress(second.encode()))
    load(tmp_path)
    run = Kernel.objects.get(released=True).development_run
    assert Evaluation.objects.filter(run=run).count() == 2


def test_a_missing_trace_leaves_the_kernel_loaded_and_says_so(tmp_path):
    write_release(tmp_path / "demo", "../../lab/demo/trace.jsonl.xz")
    out, _ = load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    assert kernel.development_run is None
    assert "demo-softmax: no development trace at ../../lab/demo/trace.jsonl.xz (the lab is not here)" in out


def test_a_broken_trace_is_refused_with_its_line_and_the_kernel_still_loads(tmp_path):
    write_release(tmp_path / "demo", "trace.jsonl")
    first, second = trace_lines(2)
    (tmp_path / "demo" / "trace.jsonl").write_text(first + "{not json\n" + second)  # a broken line inside
    out, err = load(tmp_path)
    assert "released" in out and Kernel.objects.get(released=True).development_run is None
    assert "demo-softmax: development trace trace.jsonl not imported:" in err and "line 2" in err
    assert not Run.objects.exists()


def test_the_kernel_page_links_its_development_run_and_the_run_names_the_kernel(tmp_path, client):
    write_release(tmp_path / "demo", "trace.jsonl")
    (tmp_path / "demo" / "trace.jsonl").write_text("".join(trace_lines(2)))
    load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    client.force_login(make_user("vera"))
    page = client.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    link = f'<a href="{reverse("run_detail", args=[kernel.development_run_id])}">run {kernel.development_run_id}</a>'
    assert 'id="development-run"' in page and link in page and "2 evaluations" in page
    run_page = client.get(reverse("run_detail", args=[kernel.development_run_id])).content.decode()
    assert 'id="run-develops"' in run_page
    assert f'<a href="{reverse("kernel_detail", args=[kernel.pk])}">demo-softmax</a>' in run_page


def test_the_shipped_releases_each_link_their_labs_trace():
    out, err = load(REPO / "kernels")
    assert not err, err
    for kernel in Kernel.objects.filter(released=True):
        assert kernel.development_run is not None, out
        assert Evaluation.objects.filter(run=kernel.development_run).exists()
