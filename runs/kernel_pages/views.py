"""Kernels: released ones and every one a run produced; their source, diffs, results and provenance.

A kernel's page leads with where it came from and its evidence, and shows a long source as its first lines, the
whole of it on demand (`kernel_source`): a 115 KB kernel highlighted is over a megabyte of HTML. These pages are
compressed when the browser asks (docs/deployment.md, "Compression", says why that is safe from BREACH here).
"""

import difflib

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.html import escape
from django.utils.http import content_disposition_header
from django.utils.safestring import mark_safe
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_POST, require_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from runs.kernel_pages.selectors import (
    best_kernel_per_task,
    evaluation_environment,
    evaluation_get,
    kernel_development,
    kernel_evaluations,
    kernel_get,
    kernel_question_before,
    kernel_source_groups,
    kernel_verification,
    released_kernel_rows,
)
from runs.kernel_pages.selectors_evidence import evaluation_evidence
from runs.models import Evaluation, Kernel
from runs.permissions import OPERATOR, role_required
from runs.selectors_pages import kernel_or_404, other_kernels_of_task, task_named, task_names
from runs.services import ServiceError, kernel_verify, safe_filename
from runs.templatetags.kseek import highlight as highlight_source

KERNELS_SHOWN = 300
# A source up to this many lines (and bytes) is shown whole on its page; a longer one by its first
# SOURCE_PREVIEW_LINES lines (at most SOURCE_PREVIEW_CHARS characters: a source may be one long line), the rest
# fetched when asked for.
SOURCE_WHOLE_LINES, SOURCE_WHOLE_CHARS = 150, 16 * 1024
SOURCE_PREVIEW_LINES, SOURCE_PREVIEW_CHARS = 60, 8 * 1024
# Above this, a whole source or a diff is sent as plain text: highlighting costs seconds a megabyte, and its HTML
# is ten times the source.
HIGHLIGHT_MAX_CHARS = 256 * 1024


def _kernel_label(kernel: Kernel) -> str:
    name = kernel.release_name or kernel.sha256[:12]
    return f"{name} (run {kernel.run_id}, step {kernel.step.seq})" if kernel.run_id and kernel.step else name


def source_preview(source: str) -> tuple[str, bool]:
    """What a kernel's page shows of its source: the whole of a short one, else its first lines; and whether
    that is all of it."""
    if source.count("\n") <= SOURCE_WHOLE_LINES and len(source) <= SOURCE_WHOLE_CHARS:
        return source, True
    lines = source.split("\n", SOURCE_PREVIEW_LINES)[:SOURCE_PREVIEW_LINES]
    return "\n".join(lines)[:SOURCE_PREVIEW_CHARS] + "\n", False


def _size_text(chars: int) -> str:
    return (
        f"{chars / 2**20:.1f} MiB"
        if chars >= 2**20
        else f"{chars / 2**10:.1f} KiB"
        if chars >= 2**10
        else f"{chars} bytes"
    )


def _plain_html(text: str) -> str:
    return mark_safe(f'<pre class="source plain">{escape(text)}</pre>')


@login_required
@require_safe
@gzip_page
def kernel_index(request):
    task = request.GET.get("task") or None
    if task is not None and task_named(task) is None:
        # Not an empty list: "No released kernels" under a mistyped name (or a release's name) says what is false.
        raise Http404(f"no task named {task!r}; the tasks: {', '.join(sorted(task_names()))}")
    return render(
        request,
        "runs/kernels.html",
        {
            "released": released_kernel_rows(task_name=task),
            "produced": kernel_source_groups(task_name=task, limit=KERNELS_SHOWN),
            "best": best_kernel_per_task(task_name=task),
            "task": task,
        },
    )


@login_required
@require_safe
@gzip_page
def kernel_detail(request, kernel_id: int):
    try:
        kernel = kernel_get(kernel_id)
    except Kernel.DoesNotExist:
        raise Http404("no such kernel") from None
    others = other_kernels_of_task(kernel)
    evaluations = list(kernel_evaluations(kernel))
    lead = evaluations[0] if evaluations else None
    preview, whole = source_preview(kernel.source)
    return render(
        request,
        "runs/kernel_detail.html",
        {
            "kernel": kernel,
            "evaluations": evaluations,
            "lead": lead,
            "evidence": evaluation_evidence(lead) if lead else None,
            "question": kernel_question_before(kernel),
            "development": kernel_development(kernel),
            "others": [(k.pk, _kernel_label(k)) for k in others],
            "preview": preview,
            "source_whole": whole,
            "preview_lines": preview.count("\n"),
            "source_lines": kernel.source.count("\n") + (not kernel.source.endswith("\n")),
            "source_size": _size_text(len(kernel.source)),
            "verification": kernel_verification(kernel),
        },
    )


@login_required
@require_safe
@gzip_page
def kernel_source(request, kernel_id: int):
    """A kernel's whole source, on its own: plain text, shown in the browser (`?highlighted=1`: the HTML its page
    puts in place of the preview, highlighted up to HIGHLIGHT_MAX_CHARS, plain above)."""
    kernel = kernel_or_404(kernel_id)
    if request.GET.get("highlighted") != "1":
        return HttpResponse(kernel.source, content_type="text/plain; charset=utf-8")
    if len(kernel.source) > HIGHLIGHT_MAX_CHARS:
        return HttpResponse(_plain_html(kernel.source))
    return HttpResponse(highlight_source(kernel.source, kernel.language))


@role_required(OPERATOR)
@require_POST
def kernel_verify_view(request, kernel_id: int):
    """Verify here: queue one full evaluation of this kernel's exact source on a worker of this site."""
    kernel = kernel_or_404(kernel_id, "task")
    try:
        run = kernel_verify(kernel=kernel, user=request.user)
    except ServiceError as refused:
        messages.error(request, f"Not queued: {refused}")
        return redirect("kernel_detail", kernel_id=kernel.pk)
    messages.success(
        request,
        f"Verify run {run.pk} is queued: one full evaluation of this source on a worker that serves "
        f"{kernel.task.target}; its result is shown on this kernel's page as verified.",
    )
    return redirect("run_detail", run_id=run.pk)


def kernel_filename(kernel: Kernel) -> str:
    """The download's file name: the release's name or the kernel's file name with the language's suffix, made
    safe again (a release's name is not cleaned when kept; a kernel's file name is, and those kept before
    kernel_record cleaned them were cleaned by migration 0027)."""
    suffix = ".cu" if kernel.language == "cuda" else ".cpp"
    stem = kernel.release_name or (
        kernel.filename.rsplit(".", 1)[0] if kernel.filename else f"kernel-{kernel.sha256[:12]}"
    )
    return safe_filename(f"{stem}{suffix}", kernel.language)


@login_required
@require_safe
def kernel_download(request, kernel_id: int):
    kernel = kernel_or_404(kernel_id)
    response = HttpResponse(kernel.source, content_type="text/plain; charset=utf-8")
    # Django's header: a quote is escaped, a name beyond ASCII sent as RFC 5987's filename*.
    response["Content-Disposition"] = content_disposition_header(True, kernel_filename(kernel))
    return response


@login_required
@require_safe
@gzip_page
def kernel_diff(request):
    ids = [request.GET.get(name, "") for name in ("a", "b")]
    if not all(i.isascii() and i.isdigit() for i in ids):
        return HttpResponseBadRequest("pick two kernels by id: ?a=<id>&b=<id>", content_type="text/plain")
    a, b = (kernel_or_404(int(i)) for i in ids)
    lines = list(
        difflib.unified_diff(
            a.source.splitlines(keepends=True),
            b.source.splitlines(keepends=True),
            fromfile=_kernel_label(a),
            tofile=_kernel_label(b),
        )
    )
    diff = "".join(lines)
    if len(diff) > HIGHLIGHT_MAX_CHARS:
        diff_html = _plain_html(diff)
    else:
        diff_html = highlight(diff, DiffLexer(), HtmlFormatter(cssclass="source")) if lines else ""
    return render(request, "runs/kernel_diff.html", {"a": a, "b": b, "diff_html": diff_html, "identical": not lines})


@login_required
@require_safe
@gzip_page
def evaluation_detail(request, evaluation_id: int):
    try:
        evaluation = evaluation_get(evaluation_id)
    except Evaluation.DoesNotExist:
        raise Http404("no such evaluation") from None
    evidence = evaluation_evidence(evaluation)
    return render(
        request,
        "runs/evaluation_detail.html",
        {
            "evaluation": evaluation,
            "evidence": evidence,
            "environment": evaluation_environment(evaluation),
            # Wrong scenarios only: one never run (no GPU on the host) is not a failure.
            "failing": [s for s in evidence["rows"] if s["outcome"] == "wrong"],
        },
    )
