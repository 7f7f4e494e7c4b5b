"""A released kernel's development run (issue 35 item 4, issue 37 item 1): release.toml's `development_trace`,
the lab's harness `--trace` lines, is imported once as a run and linked to the kernel; its page links to it, the
run's page names the kernel, and a step whose note names a bank question shows that question. Optional all the
way: a missing or broken trace never stops the kernel from loading. The traces are small ones written here, in
the harness's `--trace` form; one test imports the three shipped releases' own."""

import io
import json
import lzma
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from questionbank.models import BankQuestion
from runs.models import Evaluation, Kernel, Run
from tests.dashboard.helpers import eval_result, make_user

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
BANK_KEY = "limit-baseline-reasons"  # an entry of questionbank/bank.toml


@pytest.fixture(autouse=True)
def tasks():
    call_command("sync_tasks", stdout=io.StringIO(), stderr=io.StringIO())


def harness_line(version: int, note: str = "") -> str:
    """One line of `python -m gpu_harness eval --trace`: the verdict with kind, note and summary beside it."""
    result = eval_result(1.0 + version / 10, source=f"// version {version}\n")
    record = {"kind": "evaluation", "note": note or f"v{version}", "summary": f"v{version}: correct", **result}
    return json.dumps(record) + "\n"


def trace_text(count: int) -> str:
    return "".join(harness_line(version) for version in range(count))


def write_release(folder: Path, trace_name: str | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cpp").write_text("// a release\n")
    lines = ['name = "demo-matmul"', 'task = "matmul_cpu"', 'source = "k.cpp"', 'target_arch = ""']
    if trace_name:
        lines.append(f'development_trace = "{trace_name}"')
    (folder / "release.toml").write_text("\n".join(lines) + "\n")


def load(kernels_dir: Path) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("load_released_kernels", "--kernels-dir", str(kernels_dir), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def released_with_trace(tmp_path: Path, text: str) -> Kernel:
    write_release(tmp_path / "demo", "trace.jsonl")
    (tmp_path / "demo" / "trace.jsonl").write_text(text)
    load(tmp_path)
    return Kernel.objects.get(released=True)


def test_the_trace_is_imported_once_and_linked_to_the_kernel(tmp_path):
    write_release(tmp_path / "demo", "trace.jsonl")
    (tmp_path / "demo" / "trace.jsonl").write_text(trace_text(2))
    out, _ = load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    run = kernel.development_run
    assert run is not None and run.imported_from.startswith("trace trace.jsonl (sha256 ")
    assert f"development trace imported as run {run.pk}" in out
    assert Evaluation.objects.filter(run=run).count() == 2
    out, _ = load(tmp_path)  # a second load finds the run
    assert f"already imported as run {run.pk}" in out and Run.objects.count() == 1
    assert Kernel.objects.get(released=True).development_run_id == run.pk


def test_an_xz_trace_of_several_streams_is_read_whole(tmp_path):
    write_release(tmp_path / "demo", "trace.jsonl.xz")
    streams = b"".join(lzma.compress(harness_line(version).encode()) for version in range(3))
    (tmp_path / "demo" / "trace.jsonl.xz").write_bytes(streams)  # one xz stream per device call, as the lab's
    load(tmp_path)
    run = Kernel.objects.get(released=True).development_run
    assert Evaluation.objects.filter(run=run).count() == 3


def test_an_xz_trace_that_unpacks_past_the_limit_is_refused_and_the_kernel_still_loads(tmp_path, settings):
    # The trace audit's finding 7: a 17 KB xz file unpacking to one 48 MiB line was read whole. The trace upload's
    # limit (KSEEK_TRACE_UPLOAD_MAX_BYTES) applies to the decompressed bytes as they come.
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES = 64 * 1024
    write_release(tmp_path / "demo", "trace.jsonl.xz")
    bomb = lzma.compress(harness_line(0, "x" * 4 * 2**20).encode())  # one line of 4 MiB
    assert len(bomb) < 4096
    (tmp_path / "demo" / "trace.jsonl.xz").write_bytes(bomb)
    out, err = load(tmp_path)
    assert "demo-matmul: released" in out and Kernel.objects.get(released=True).development_run is None
    assert err == (
        "demo-matmul: development trace trace.jsonl.xz not imported: trace.jsonl.xz is over the limit of a trace: "
        "more than 65,536 bytes once decompressed (KSEEK_TRACE_UPLOAD_MAX_BYTES=65536)\n"
    )
    assert not Run.objects.exists()


def test_an_xz_trace_is_refused_at_the_limit_unread_beyond_it(tmp_path, settings):
    # What follows the limit is never decompressed: here a broken xz stream, which a reader that unpacked the whole
    # file before counting would meet (and report) first.
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES = 64 * 1024
    write_release(tmp_path / "demo", "trace.jsonl.xz")
    broken_tail = lzma.compress(harness_line(1).encode())[:40]
    (tmp_path / "demo" / "trace.jsonl.xz").write_bytes(lzma.compress(trace_text(200).encode()) + broken_tail)
    _, err = load(tmp_path)
    assert "is over the limit of a trace: more than 65,536 bytes once decompressed" in err
    assert "cannot read" not in err and not Run.objects.exists()


def test_a_trace_of_exactly_the_limit_is_imported_and_one_byte_more_is_not(tmp_path, settings):
    text = trace_text(3)
    write_release(tmp_path / "demo", "trace.jsonl.xz")
    (tmp_path / "demo" / "trace.jsonl.xz").write_bytes(lzma.compress(text.encode()))
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES = len(text.encode()) - 1
    _, err = load(tmp_path)
    assert f"more than {len(text.encode()) - 1:,} bytes once decompressed" in err and not Run.objects.exists()
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES = len(text.encode())
    out, err = load(tmp_path)
    run = Kernel.objects.get(released=True).development_run
    assert not err and f"development trace imported as run {run.pk}" in out
    assert Evaluation.objects.filter(run=run).count() == 3


def test_a_missing_trace_leaves_the_kernel_loaded_and_says_so(tmp_path):
    write_release(tmp_path / "demo", "../../lab/demo/trace.jsonl.xz")
    out, err = load(tmp_path)
    kernel = Kernel.objects.get(released=True)
    assert kernel.development_run is None and not err
    assert "demo-matmul: no development trace at ../../lab/demo/trace.jsonl.xz (the lab is not here)" in out
    assert not Run.objects.exists()


def test_a_broken_trace_is_refused_with_its_line_and_the_kernel_still_loads(tmp_path):
    write_release(tmp_path / "demo", "trace.jsonl")
    (tmp_path / "demo" / "trace.jsonl").write_text(harness_line(0) + "{not json\n" + harness_line(1))
    out, err = load(tmp_path)
    assert "demo-matmul: released" in out and Kernel.objects.get(released=True).development_run is None
    assert "demo-matmul: development trace trace.jsonl not imported: line 2 is not JSON" in err
    assert not Run.objects.exists()


def test_the_kernel_page_links_its_development_run_and_the_run_names_the_kernel(tmp_path, client):
    kernel = released_with_trace(tmp_path, trace_text(2))
    client.force_login(make_user("vera"))
    page = client.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    run_id = kernel.development_run_id
    link = f'<a href="{reverse("run_detail", args=[run_id])}">run #{run_id}</a>'
    assert f'<dt>Development</dt><dd id="development-run">{link} (imported trace, 2 evaluations)' in page
    run_page = client.get(reverse("run_detail", args=[run_id])).content.decode()
    assert 'id="run-develops"' in run_page and "imported" in run_page
    assert f'development run of the released kernel <a href="{reverse("kernel_detail", args=[kernel.pk])}">' in run_page


def test_a_bank_key_in_a_note_is_shown_with_its_question(tmp_path, client):
    call_command("load_bank", stdout=io.StringIO())
    question = BankQuestion.objects.get(key=BANK_KEY).text
    note = f"v1 <b>released</b>: question that moved it ({BANK_KEY}); flash-attn-4 is no key"
    kernel = released_with_trace(tmp_path, harness_line(0, "v0: the first") + harness_line(1, note))
    client.force_login(make_user("vera"))
    steps = client.get(reverse("run_steps", args=[kernel.development_run_id])).json()["steps"]
    assert steps[0]["note"] == {"text": "v0: the first", "questions": []}
    assert steps[1]["note"] == {"text": note, "questions": [{"key": BANK_KEY, "text": question}]}
    one = client.get(reverse("run_step", args=[kernel.development_run_id, 1])).json()
    assert one["note"]["questions"] == [{"key": BANK_KEY, "text": question}]


def test_the_shipped_releases_each_link_their_labs_trace(client):
    call_command("load_bank", stdout=io.StringIO())
    out, err = load(REPO / "kernels")
    assert not err, err
    released = Kernel.objects.filter(released=True)
    assert released.count() >= 3
    for kernel in released:
        assert kernel.development_run is not None, out
        assert kernel.development_run.imported_from
        assert Evaluation.objects.filter(run=kernel.development_run).exists()
    # The attention kernel's lab named the bank questions that moved it (v15's layer-instruction-stream, ...).
    client.force_login(make_user("vera"))
    attention = released.get(release_name="attention-fwd-sm90").development_run_id
    steps = client.get(reverse("run_steps", args=[attention])).json()["steps"]
    asked = {question["key"] for step in steps if step["note"] for question in step["note"]["questions"]}
    assert {"layer-instruction-stream", "limit-baseline-reasons"} <= asked
