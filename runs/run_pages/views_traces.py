"""Traces: a run out as JSONL, and a JSONL trace in as a run that can be browsed like any other."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from runs.forms import TraceImportForm
from runs.permissions import OPERATOR, role_required
from runs.run_pages.selectors import trace_export_records
from runs.selectors_pages import run_or_404
from runs.services import ServiceError, trace_import


@login_required
@require_safe
def trace_export(request, run_id: int):
    run = run_or_404(run_id, "task")
    lines = (json.dumps(record, default=str) + "\n" for record in trace_export_records(run))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.jsonl"'
    return response


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def trace_import_view(request):
    form = TraceImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["trace"]
        try:
            # Handed over as the open file: the import reads it line by line, never whole.
            run = trace_import(lines=upload.open("rb"), name=upload.name, user=request.user)
        except ServiceError as refused:
            form.add_error("trace", str(refused))
        else:
            messages.success(request, f"Imported {upload.name} as run {run.pk} ({run.step_count} steps).")
            return redirect("run_detail", run_id=run.pk)
    status = 413 if form.has_error("trace", "too_large") else 400 if form.errors else 200
    return render(request, "runs/trace_import.html", {"form": form}, status=status)
