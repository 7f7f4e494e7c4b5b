"""Tasks: every registered task with its ABI, scenarios and baselines, and a Start button for operators."""

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.models import Task
from runs.permissions import VIEWER, role_required
from runs.task_pages.selectors import task_overview, task_page


@role_required(VIEWER)
@require_safe
def task_index(request):
    return render(request, "runs/tasks.html", {"tasks": task_overview()})


@role_required(VIEWER)
@require_safe
def task_detail(request, name: str):
    try:
        view = task_page(name)
    except Task.DoesNotExist:
        raise Http404(f"no task named {name!r}") from None
    return render(request, "runs/task_detail.html", view)
