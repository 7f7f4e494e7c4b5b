"""Studies: N runs of one task that differ in one setting, started from one form (`/studies/start/`); the
compare page opens on them (`/runs/compare/?study=ID`). docs/fork.md, "Studies"."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from runs.forms import StudyForm
from runs.permissions import OPERATOR, role_required
from runs.selectors_pages import task_named
from runs.services import ServiceError, study_start


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def study_start_view(request):
    if request.method != "POST":
        task = task_named(request.GET.get("task") or "")
        form = StudyForm(initial={"task": task} if task else {})
        return render(request, "runs/study_start.html", {"form": form})
    form = StudyForm(request.POST)
    if not form.is_valid():
        return render(request, "runs/study_start.html", {"form": form}, status=400)
    data = form.cleaned_data
    try:
        study = study_start(
            task=data["task"],
            setting=data["setting"],
            values=data["values"].split(","),
            model=data["model"],
            user=request.user,
            **form.run_settings(),
            recordings=form.recordings(),
        )
    except ServiceError as refused:
        form.add_error(None, str(refused))
        return render(request, "runs/study_start.html", {"form": form}, status=400)
    messages.success(request, f"Study {study.pk} is queued: {len(study.values)} runs that differ in {study.setting}.")
    return redirect(reverse("run_compare") + f"?study={study.pk}")
