"""Kernels: released ones and every one a run produced; their source, diffs, results and provenance."""

import difflib

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from runs.models import Evaluation, Kernel
from runs.selectors import (
    evaluation_get,
    evaluation_scenarios,
    kernel_evaluations,
    kernel_get,
    kernel_list,
    kernel_question_before,
)

KERNELS_SHOWN = 300


def _kernel_label(kernel: Kernel) -> str:
    name = kernel.release_name or kernel.sha256[:12]
    return f"{name} (run {kernel.run_id}, step {kernel.step.seq})" if kernel.run_id and kernel.step else name


@login_required
def kernel_index(request):
    task = request.GET.get("task") or None
    return render(
        request,
        "runs/kernels.html",
        {
            "released": kernel_list(released=True, task_name=task),
            "produced": kernel_list(released=False, task_name=task)[:KERNELS_SHOWN],
            "task": task,
        },
    )


@login_required
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
    return render(
        request,
        "runs/kernel_detail.html",
        {
            "kernel": kernel,
            "evaluations": kernel_evaluations(kernel),
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
def kernel_download(request, kernel_id: int):
    kernel = get_object_or_404(Kernel, pk=kernel_id)
    response = HttpResponse(kernel.source, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{kernel_filename(kernel)}"'
    return response


@login_required
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


# Scenario axes, in the order the chart groups by; any other parameter follows in name order.
SCENARIO_AXES = ["causal", "dtype", "head_dim", "d", "gqa", "heads_q", "heads_kv", "seqlen", "seq_len", "batch"]


def _axis_order(params: dict) -> list[str]:
    known = [k for k in SCENARIO_AXES if k in params]
    return known + sorted(k for k in params if k not in known)


def scenario_chart_data(evaluation: Evaluation, scenarios) -> dict:
    """Per-scenario speedups against each baseline and correctness, grouped by the scenario axes."""
    rows = sorted(scenarios, key=lambda s: [str(s.params.get(k)) for k in _axis_order(s.params)])
    baselines = sorted({b for s in rows for b in (s.speedups or {})})
    groups, labels = [], []
    for s in rows:
        axes = _axis_order(s.params)
        group_keys, label_keys = axes[:2], axes[2:]
        groups.append(" ".join(f"{k}={s.params[k]}" for k in group_keys) or "all")
        labels.append(" ".join(f"{k}={s.params[k]}" for k in label_keys) or s.scenario_id)
    return {
        "groups": groups,
        "labels": labels,
        "ids": [s.scenario_id for s in rows],
        "correct": [s.correct for s in rows],
        "reasons": [s.reason for s in rows],
        "speedups": {b: [(s.speedups or {}).get(b) for s in rows] for b in baselines},
    }


@login_required
def evaluation_detail(request, evaluation_id: int):
    try:
        evaluation = evaluation_get(evaluation_id)
    except Evaluation.DoesNotExist:
        raise Http404("no such evaluation") from None
    scenarios = evaluation_scenarios(evaluation)
    return render(
        request,
        "runs/evaluation_detail.html",
        {
            "evaluation": evaluation,
            "scenarios": scenarios,
            "failing": [s for s in scenarios if not s.correct],
            "chart": scenario_chart_data(evaluation, scenarios),
        },
    )
