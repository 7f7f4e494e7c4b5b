"""The review queue: self-asked questions waiting for a decision, across runs."""

from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from runs.forms import DecisionForm
from runs.permissions import REVIEWER, role_required
from runs.review.selectors import review_queue, runs_waiting_on_review
from runs.run_pages.selectors import step_evaluations, step_summary
from runs.selectors_pages import question_or_404
from runs.services import QuestionAlreadyDecided, QuestionClosed, ServiceError, question_review


def _queue_context() -> dict:
    items = review_queue()
    for item in items:
        # Each step folded to the line the feed shows it as (run_pages.selectors.step_summary).
        evaluations = step_evaluations(item["recent_steps"])
        item["recent"] = [(s.seq, s.kind, step_summary(s, evaluations.get(s.seq))) for s in item["recent_steps"]]
    return {"items": items, "waiting_runs": runs_waiting_on_review()}


@login_required
@require_safe
def queue(request):
    return render(request, "runs/review.html", _queue_context())


@login_required
@require_safe
def queue_items(request):
    """The queue's items alone, swapped in live when a question changes."""
    return render(request, "runs/_review_items.html", _queue_context())


@role_required(REVIEWER)
@require_POST
def decide(request, question_id: int):
    question = question_or_404(question_id)
    form = DecisionForm(request.POST)
    wants_json = "application/json" in request.headers.get("Accept", "")
    if not form.is_valid():
        error = "; ".join(e for errors in form.errors.values() for e in errors)  # type: ignore[misc]  # (str here: django-stubs allows ValidationError)
        if wants_json:
            return JsonResponse({"ok": False, "error": error}, status=400)
        messages.error(request, error)
        return redirect("review_queue")
    try:
        decided = question_review(
            question=question,
            reviewer=request.user,
            decision=form.cleaned_data["decision"],
            text=form.cleaned_data.get("text") or None,
        )
    except (QuestionAlreadyDecided, QuestionClosed) as late:  # decided already, or its run has finished
        status, result = 409, {"ok": False, "error": str(late)}
    except ServiceError as refused:
        status, result = 400, {"ok": False, "error": str(refused)}
    else:
        status, result = 200, {"ok": True, "status": decided.status, "question_id": decided.pk}
    if wants_json:
        return JsonResponse(result, status=status)
    (messages.success if result["ok"] else messages.error)(
        request, cast(str, result.get("error") or f"Question {question.pk}: {result['status']}")
    )
    return redirect("review_queue")
