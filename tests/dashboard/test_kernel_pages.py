"""A kernel's page stays small whatever its source: it leads with where the kernel came from and its evidence,
shows a long source by its first lines and serves the whole of it on its own; these pages are compressed when the
browser asks (runs/kernel_pages/views.py; the browser's view: tests/dashboard/test_browser_kernel_page.py)."""

import gzip
import hashlib
import importlib
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.urls import reverse

from runs.models import Kernel
from runs.services import kernel_record, kernel_release
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db

RELEASED = Path(__file__).resolve().parents[2] / "kernels" / "attention_fwd_sm90" / "attention_fwd_sm90.cu"
PAGE_MAX_BYTES = 64 * 1024  # the page's HTML, whatever the source's size (the released one's was 1.26 MB)


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def stored_before_the_limit(source: str) -> Kernel:
    """A kernel row as a site stored it before sources were bounded (kernel_record now refuses it)."""
    digest = hashlib.sha256(source.encode()).hexdigest()
    return Kernel.objects.create(source=source, sha256=digest, task=make_task(), language="cpp")


def test_a_ten_megabyte_source_makes_a_small_page_and_its_own_endpoint_serves_it_whole(viewer):
    line = "    c[i] += a[i] * b[i];  // a long imported kernel\n"
    source = "// first line of the import\n" + line * (10 * 2**20 // len(line)) + "// the very last line\n"
    kernel = stored_before_the_limit(source)
    page = viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    assert len(page.encode()) < PAGE_MAX_BYTES
    assert "first line of the import" in page and "the very last line" not in page
    assert 'id="source-load"' in page and "10.0 MiB" in page
    whole = viewer.get(reverse("kernel_source", args=[kernel.pk]))
    assert whole["Content-Type"] == "text/plain; charset=utf-8" and whole.content.decode() == source
    # Too long to highlight: the page's button gets it as plain, escaped text.
    shown = viewer.get(reverse("kernel_source", args=[kernel.pk]) + "?highlighted=1").content.decode()
    assert shown.startswith('<pre class="source plain">') and shown.count("a long imported kernel") == source.count(
        "a long imported kernel"
    )


def test_the_released_kernels_page_leads_with_its_provenance_and_shows_its_first_lines(viewer):
    source = RELEASED.read_text()
    kernel = kernel_release(kernel=kernel_record(source=source, task=make_task(), language="cuda"), name="attn")
    page = viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    assert len(page.encode()) < PAGE_MAX_BYTES
    order = [
        page.index(marker) for marker in ('id="provenance"', 'id="download"', 'id="lead-evaluation"', 'id="source"')
    ]
    assert order == sorted(order), order
    assert source.count("\n") > 1000 and page.split('id="source-body"')[1].count('<a href="#L-') == 60
    assert "Its first 60 of" in page
    shown = viewer.get(reverse("kernel_source", args=[kernel.pk]) + "?highlighted=1").content.decode()
    assert 'class="source"' in shown and shown.count('<a href="#L-') == source.count("\n")


def test_a_released_kernels_note_is_shown_under_its_provenance_escaped(viewer):
    kernel = kernel_release(
        kernel=kernel_record(source="__global__ void k() {}\n", task=make_task(), language="cuda"),
        name="attn",
        note="FA3's times held host waits <b>then</b>.",
    )
    page = viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    note = page.split('id="release-note">')[1].split("</dd>")[0]
    assert "FA3&#x27;s times held host waits &lt;b&gt;then&lt;/b&gt;." in note and "as measured" in note
    assert page.index('id="release-note"') < page.index('id="download"')
    listed = viewer.get(reverse("kernels")).content.decode()
    row = listed[listed.index('data-release="attn"') :].split("</tr>")[0]
    assert f'href="{reverse("kernel_detail", args=[kernel.pk])}#release-note"' in row and "known since release" in row
    assert 'title="FA3&#x27;s times held host waits &lt;b&gt;then&lt;/b&gt;."' in row
    kernel.released = False  # a kernel no longer released: its old note is not its word any more
    kernel.save()
    assert 'id="release-note"' not in viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()


def test_a_short_source_is_shown_whole_with_no_button(viewer):
    kernel = kernel_record(source="int main() { return 0; }\n", task=make_task(), language="cpp")
    page = viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode()
    assert '<span class="kt">int</span>' in page and 'id="source-load"' not in page


def test_kernel_pages_are_compressed_when_the_browser_asks_and_the_csrf_token_differs_on_every_response(viewer):
    kernel = kernel_release(kernel=kernel_record(source=RELEASED.read_text(), language="cuda"), name="attn")
    for name, args in (("kernel_detail", [kernel.pk]), ("kernel_source", [kernel.pk]), ("kernels", [])):
        plain = viewer.get(reverse(name, args=args))
        packed = viewer.get(reverse(name, args=args), HTTP_ACCEPT_ENCODING="gzip, deflate, br")
        assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip", name
        assert "Accept-Encoding" in packed["Vary"] and len(gzip.decompress(packed.content)) == len(plain.content), name
    whole = viewer.get(reverse("kernel_source", args=[kernel.pk]), HTTP_ACCEPT_ENCODING="gzip")
    assert len(whole.content) < len(RELEASED.read_bytes()) / 3
    # Why compression is safe from BREACH here: the one secret these pages hold, the CSRF token of the sign-out
    # form, is masked afresh on every response (docs/deployment.md, "Compression").
    tokens = [
        re.search(
            r'name="csrfmiddlewaretoken" value="([^"]+)"',
            viewer.get(reverse("kernel_detail", args=[kernel.pk])).content.decode(),
        ).group(1)
        for _ in range(2)
    ]
    assert tokens[0] != tokens[1]
    page = gzip.decompress(viewer.get(reverse("kernels"), HTTP_ACCEPT_ENCODING="gzip").content).decode()
    assert "attn" in page


def test_a_diff_too_long_to_highlight_is_shown_as_plain_text(viewer):
    a = kernel_record(source="// a\n" + "int x;\n" * 60_000, language="cpp")
    b = kernel_record(source="// b\n" + "long y;\n" * 60_000, language="cpp")
    page = viewer.get(reverse("kernel_diff") + f"?a={a.pk}&b={b.pk}").content.decode()
    assert '<pre class="source plain">' in page and "+long y;" in page


# Trace audit finding 9: a kernel's file name comes from a worker's or a trace's kernel_path.

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"


def imported_kernel_named(kernel_path: str) -> Kernel:
    """The first kernel of the demo trace imported with its first evaluation's kernel_path replaced."""
    import io
    import json

    from runs.services import trace_import

    make_task()
    events = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    evaluation = next(e for e in events if e["kind"] == "evaluation")
    evaluation["payload"]["kernel_path"] = evaluation["payload"]["result"]["kernel_path"] = kernel_path
    lines = io.BytesIO("".join(json.dumps(e) + "\n" for e in events).encode())
    run = trace_import(lines=lines, name="named.jsonl")
    return Kernel.objects.filter(run=run, step__seq=evaluation["seq"]).get()


@pytest.mark.parametrize(
    "kernel_path, kept, header",
    [
        ("work/a\nb.cpp", "ab.cpp", 'attachment; filename="ab.cpp"'),
        (
            'a"; filename=evil.html; x=".cpp',
            'a"; filename=evil.html; x=".cpp',
            'attachment; filename="a\\"; filename=evil.html; x=\\".cpp"',
        ),
        ("kérnel.cpp", "kérnel.cpp", "attachment; filename*=utf-8''k%C3%A9rnel.cpp"),
        ("invoice\u202egpj.cpp", "invoicegpj.cpp", 'attachment; filename="invoicegpj.cpp"'),
        ("x" * 5000 + ".cpp", "x" * 196 + ".cpp", f'attachment; filename="{"x" * 196}.cpp"'),
        ("..\\..\\win\\name.cpp", "name.cpp", 'attachment; filename="name.cpp"'),
        ("kernels/\n\t ", "kernel.cpp", 'attachment; filename="kernel.cpp"'),
    ],
)
def test_a_kernel_file_name_from_a_trace_is_kept_safe_and_downloads_with_a_well_formed_header(
    viewer, kernel_path, kept, header
):
    kernel = imported_kernel_named(kernel_path)
    assert kernel.filename == kept
    response = viewer.get(reverse("kernel_download", args=[kernel.pk]))
    assert response.status_code == 200 and response["Content-Disposition"] == header


def test_a_kernel_kept_with_an_unsafe_name_before_the_cleaning_still_downloads(viewer):
    kernel = kernel_record(source="// k\n", task=make_task(), language="cuda", filename="k.cu")
    Kernel.objects.filter(pk=kernel.pk).update(filename='a\r\nSet-Cookie: x=1"\u202e.cu')
    response = viewer.get(reverse("kernel_download", args=[kernel.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="aSet-Cookie: x=1\\".cu"'


def test_the_migration_cleans_the_names_of_kernels_kept_before_the_cleaning():
    task = make_task()
    kept = {
        'a\r\nSet-Cookie: x=1"\u202e.cu': 'aSet-Cookie: x=1".cu',
        "work/run-7/kernel.cu": "kernel.cu",
        "\n\t ": "kernel.cu",
        "clean.cu": "clean.cu",
        "": "",
    }
    kernels = {}
    for number, stored in enumerate(kept):
        kernel = kernel_record(source=f"// k{number}\n", task=task, language="cuda", filename="k.cu")
        Kernel.objects.filter(pk=kernel.pk).update(filename=stored)
        kernels[kernel.pk] = kept[stored]
    migration = importlib.import_module("runs.migrations.0027_kernel_filename_cleaned")
    migration.clean_kernel_filenames(apps, None)
    assert dict(Kernel.objects.values_list("pk", "filename")) == kernels
