"""The compare page: 2 to 8 runs side by side (`/runs/compare/?runs=1,2,3`), and its CSV and JSON exports."""

from typing import cast

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.csv_cells import spreadsheet_csv
from runs.models import COMPARE_MAX, COMPARE_MIN
from runs.run_pages.selectors_compare import (
    SUMMARY_FIELDS,
    compare_runs_get,
    fork_family,
    run_comparison,
    study_csv,
    study_run_ids,
    study_setting,
)
from runs.run_pages.selectors_compare_detail import question_timeline, ratio_grids

# More digits than any run's key has (a 64-bit key has 19): such an id names no run. int() is not asked to read
# it, since Python refuses to convert a string of more than 4300 digits (a ValueError, a 500 for a long link).
_ID_MAX_DIGITS = 20


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _study_id(request) -> int | None:
    study = (request.GET.get("study") or "").strip().lstrip("#")
    return int(study) if study.isascii() and study.isdigit() and len(study) < 10 else None


def _run_ids(request) -> list[int]:
    """The ids of `runs`, given as one comma-separated value (a shared link) or repeated (the runs list's
    checkboxes), each once, in the order given."""
    study = (request.GET.get("study") or "").strip().lstrip("#")
    if study:  # a study's runs (runs.services.studies)
        ids = study_run_ids(cast(int, _study_id(request))) if _study_id(request) is not None else []
        if not ids:
            raise _BadRequest(f"no study {study} with runs", status=404)
        return ids
    words = [w.strip().lstrip("#") for value in request.GET.getlist("runs") for w in value.split(",")]
    words = [w for w in words if w]
    # ASCII digits only: str.isdigit() also takes "²" and "٧", which int() refuses or reads as another number.
    bad = [w for w in words if not (w.isascii() and w.isdigit())]
    if bad:
        raise _BadRequest(f"run ids are numbers: {', '.join(bad[:5])} is not")
    too_long = [w for w in words if len(w.lstrip("0")) > _ID_MAX_DIGITS]
    if too_long:
        named = ", ".join(f"#{w[:_ID_MAX_DIGITS]}… ({len(w)} digits)" for w in too_long[:5])
        raise _BadRequest(f"no such run: {named}", status=404)
    ids = list(dict.fromkeys(int(w) for w in words))
    if len(ids) == 1:  # one run: a fork opens on its parent and itself, a parent on itself and its forks
        ids = fork_family(ids[0]) or ids
    if len(ids) == 1 and compare_runs_get(ids)[1]:  # an id no run has is named, alone as among others
        raise _BadRequest(f"no such run: #{ids[0]}", status=404)
    if not COMPARE_MIN <= len(ids) <= COMPARE_MAX:
        raise _BadRequest(f"pick {COMPARE_MIN} to {COMPARE_MAX} runs to compare ({len(ids)} given)")
    return ids


def _csv(summary: list[dict], study: dict | None) -> HttpResponse:
    rows, fields = study_csv(summary, study) if study else (summary, SUMMARY_FIELDS)
    response = HttpResponse(spreadsheet_csv(rows, fields), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="compare.csv"'
    return response


@login_required
@require_safe
def compare(request):
    try:
        ids = _run_ids(request)
        runs, missing = compare_runs_get(ids)
        if missing:
            raise _BadRequest(f"no such run: {', '.join(f'#{i}' for i in missing)}", status=404)
    except _BadRequest as bad:
        return render(request, "runs/compare.html", {"error": str(bad)}, status=bad.status)
    comparison = run_comparison(runs)
    if _study_id(request) is not None:  # a study's page names the setting its runs differ in, and their values
        comparison["study"] = study_setting(_study_id(request))
    export = request.GET.get("format")
    if export == "json":
        return JsonResponse(comparison)
    if export == "csv":
        return _csv(comparison["summary"], comparison.get("study"))
    # A study's page shares and exports the study, so that its links keep the setting and each run's value.
    study = comparison.get("study")
    share = f"study={study['id']}" if study else "runs=" + ",".join(str(i) for i in ids)
    markers = {series["run_id"]: series["questions"] for series in comparison["series"]}
    return render(
        request,
        "runs/compare.html",
        {
            "comparison": comparison,
            "share": share,
            "ratio_grids": ratio_grids(runs),
            "timeline": question_timeline(runs, markers),
        },
    )
