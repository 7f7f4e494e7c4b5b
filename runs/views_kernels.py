"""Kernels: released ones and every one a run produced; their source, diffs, results and provenance."""

import difflib

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from runs.models import Evaluation, Kernel
from runs.selectors import (
    best_kernel_per_task,
    evaluation_get,
    evaluation_scenarios,
    kernel_evaluations,
    kernel_get,
    kernel_list,
    kernel_question_before,
    kernel_source_groups,
)
from runs.selectors_evidence import evaluation_evidence

KERNELS_SHOWN = 300


def _kernel_label(kernel: Kernel) -> str:
    name = kernel.release_name or kernel.sha256[:12]
    return f"{name} (run {kernel.run_id}, step {kernel.step.seq})" if kernel.run_id and kernel.step else name


@login_required
@require_safe
def kernel_index(request):
    task = request.GET.get("task") or None
    return render(
        request,
        "runs/kernels.html",
        {
            "released": kernel_list(released=True, task_name=task),
            "produced": kernel_source_groups(task_name=task, limit=KERNELS_SHOWN),
            "best": best_kernel_per_task(),
            "task": task,
        },
    )


@login_required
@require_safe
def kernel_detail(request, kernel_id: int):
    try:
        kernel = kernel_get(kernel_id)
    except Kernel.DoesNotExist:
        raise Http404("no such kernel") from None
    others = (
        Kernel.objects.filter(task_id=kernel.task_id)
        .exclude(pk=kernel.pk)
        .select_related("step")
        .order_by("-created_at")[:200]
    )
    evaluations = list(kernel_evaluations(kernel))
    lead = evaluations[0] if evaluations else None
    return render(
        request,
        "runs/kernel_detail.html",
        {
            "kernel": kernel,
            "evaluations": evaluations,
            "lead": lead,
            "evidence": evaluation_evidence(lead, list(lead.scenarios.all())) if lead else None,
            "question": kernel_question_before(kernel),
            "others": [(k.pk, _kernel_label(k)) for k in others],
        },
    )


def kernel_filename(kernel: Kernel) -> str:
    suffix = ".cu" if kernel.language == "cuda" else ".cpp"
    stem = kernel.release_name or (
        kernel.filename.rsplit(".", 1)[0] if kernel.filename else f"kernel-{kernel.sha256[:12]}"
    )
    return f"{stem}{suffix}"


@login_required
@require_safe
def kernel_download(request, kernel_id: int):
    kernel = get_object_or_404(Kernel, pk=kernel_id)
    response = HttpResponse(kernel.source, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{kernel_filename(kernel)}"'
    return response


@login_required
@require_safe
def kernel_diff(request):
    ids = [request.GET.get(name, "") for name in ("a", "b")]
    if not all(i.isascii() and i.isdigit() for i in ids):
        return HttpResponseBadRequest("pick two kernels by id: ?a=<id>&b=<id>", content_type="text/plain")
    a, b = (get_object_or_404(Kernel, pk=int(i)) for i in ids)
    lines = list(
        difflib.unified_diff(
            a.source.splitlines(keepends=True),
            b.source.splitlines(keepends=True),
            fromfile=_kernel_label(a),
            tofile=_kernel_label(b),
        )
    )
    diff_html = highlight("".join(lines), DiffLexer(), HtmlFormatter(cssclass="source")) if lines else ""
    return render(request, "runs/kernel_diff.html", {"a": a, "b": b, "diff_html": diff_html, "identical": not lines})


@login_required
@require_safe
def evaluation_detail(request, evaluation_id: int):
    try:
        evaluation = evaluation_get(evaluation_id)
    except Evaluation.DoesNotExist:
        raise Http404("no such evaluation") from None
    evidence = evaluation_evidence(evaluation, evaluation_scenarios(evaluation))
    return render(
        request,
        "runs/evaluation_detail.html",
        {
            "evaluation": evaluation,
            "evidence": evidence,
            # Wrong scenarios only: one never run (no GPU on the host) is not a failure.
            "failing": [s for s in evidence["rows"] if s["outcome"] == "wrong"],
        },
    )
