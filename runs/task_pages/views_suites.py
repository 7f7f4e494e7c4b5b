"""Suites: the benchmarks imported as task folders (`/suites/`, `/suites/<id>/`: each problem, what it imported as
or why not), a study over a suite started from one form (`/suites/<id>/study/`), and its scoreboard
(`/suites/studies/<id>/`, with `scoreboard.csv` and `scoreboard.json`). docs/tasks.md, docs/fork.md."""

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from runs.csv_cells import spreadsheet_csv
from runs.forms import SuiteStudyForm
from runs.models import Suite, SuiteStudy
from runs.permissions import OPERATOR, VIEWER, role_required
from runs.services import ServiceError, suite_study_start
from runs.task_pages.selectors_suites import (
    FAST_P_FIELDS,
    ROW_FIELDS,
    fast_p_rows,
    scoreboard_rows,
    suite_get,
    suite_list,
    suite_page,
    suite_study_scoreboard,
)


@role_required(VIEWER)
@require_safe
def suite_index(request):
    return render(request, "runs/suites.html", {"suites": suite_list()})


@role_required(VIEWER)
@require_safe
def suite_detail(request, suite_id: int):
    try:
        view = suite_page(suite_id)
    except Suite.DoesNotExist:
        raise Http404(f"no suite {suite_id}") from None
    return render(request, "runs/suite_detail.html", view)


def _start(request, suite: Suite, form: SuiteStudyForm):
    data = form.cleaned_data
    return suite_study_start(
        suite=suite,
        setting=data["setting"],
        values=data["values"].split(","),
        model=data["model"],
        user=request.user,
        **form.run_settings(),
        recordings=form.recordings(),
    )


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def suite_study_start_view(request, suite_id: int):
    try:
        view = suite_page(suite_id)
    except Suite.DoesNotExist:
        raise Http404(f"no suite {suite_id}") from None
    if request.method != "POST":
        return render(request, "runs/suite_study_start.html", {**view, "form": SuiteStudyForm()})
    form = SuiteStudyForm(request.POST)
    if form.is_valid():
        try:
            suite_study = _start(request, suite_get(suite_id), form)
        except ServiceError as refused:
            form.add_error(None, str(refused))
        else:
            runs = len(suite_study.values) * view["runnable"]
            messages.success(
                request, f"Suite study {suite_study.pk} is queued: {runs} runs, {view['runnable']} problems."
            )
            return redirect(reverse("suite_scoreboard", args=[suite_study.pk]))
    return render(request, "runs/suite_study_start.html", {**view, "form": form}, status=400)


def _board(study_id: int) -> dict:
    try:
        return suite_study_scoreboard(study_id)
    except SuiteStudy.DoesNotExist:
        raise Http404(f"no suite study {study_id}") from None


@role_required(VIEWER)
@require_safe
def suite_scoreboard(request, study_id: int):
    return render(request, "runs/suite_scoreboard.html", {"board": _board(study_id)})


@role_required(VIEWER)
@require_safe
def suite_scoreboard_json(request, study_id: int):
    return JsonResponse(_board(study_id))


@role_required(VIEWER)
@require_safe
def suite_scoreboard_csv(request, study_id: int):
    """The problems' rows (one per problem and arm), or with `?table=fast_p` fast_p per arm and threshold."""
    board = _board(study_id)
    if request.GET.get("table") == "fast_p":
        fields, rows, name = FAST_P_FIELDS, fast_p_rows(board), f"suite-study-{study_id}-fast_p.csv"
    else:
        fields, rows, name = ROW_FIELDS, scoreboard_rows(board), f"suite-study-{study_id}.csv"
    response = HttpResponse(spreadsheet_csv(rows, fields), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
