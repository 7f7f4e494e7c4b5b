"""Runs: the list (searched, sorted, paged), the start form, and one run's page, with the operators' and reviewers' actions."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from runs import permissions
from runs.demo import demo_run_start
from runs.flash import flash_run_status
from runs.forms import MessageForm, StartRunForm
from runs.kernel_pages.selectors import run_developed_kernels
from runs.model_options import recorded_start, recording_of
from runs.models import COMPARE_MAX, Run, RunStatus, StepKind
from runs.permissions import OPERATOR, REVIEWER, role_required
from runs.run_pages.selectors import (
    RUN_SORTS,
    elapsed_text,
    fork_decision_text,
    run_best_text,
    run_fork_refusal,
    run_forks,
    run_is_verify,
    run_questions_closed,
    run_questions_unheard,
    run_sandbox,
    run_search,
    run_unverified_bests,
)
from runs.selectors import run_usage_unknown, study_value_of
from runs.selectors_pages import newest_evaluations, refused_events_of, run_or_404, task_named, task_names
from runs.services import ServiceError, run_control, run_send_human_message, run_start
from runs.worker_pages.selectors import run_queue_reason, runs_queue_reasons, runs_unserved

RUNS_PER_PAGE = 50
EVALUATIONS_SHOWN = 20  # the newest evaluations the run page lists (run_page.js keeps the same number live)


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _list_context(request) -> dict:
    status = request.GET.get("status") or None
    if status not in RunStatus.values:
        status = None
    task = request.GET.get("task") or None
    query = (request.GET.get("q") or "").strip()[:200]
    sort = request.GET.get("sort") if request.GET.get("sort") in RUN_SORTS else "newest"
    page = Paginator(run_search(status=status, task_name=task, query=query, sort=sort), RUNS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    # The filters without the page number: the pager's links add their own.
    keep = request.GET.copy()
    keep.pop("page", None)
    return {
        "runs": page.object_list,
        # Queued runs and why each waits (no connected worker serves it, busy slots, runs ahead): under the status.
        "unserved": runs_unserved(page.object_list),
        "queue_reasons": runs_queue_reasons(page.object_list),
        "page": page,
        "page_query": keep.urlencode(),
        "status": status,
        "task": task,
        "query": query,
        "sort": sort,
        "sorts": [(key, label) for key, (label, _) in RUN_SORTS.items()],
        "statuses": RunStatus.choices,
        "tasks": task_names(),
    }


@login_required
@require_safe
def home(request):
    context = _list_context(request)
    context["can_start"] = permissions.has_role(request.user, OPERATOR)
    return render(request, "runs/home.html", context)


@login_required
@require_safe
def runs_table(request):
    """The list's rows alone: the page swaps them in when the runs socket says a run changed."""
    return render(request, "runs/_runs_rows.html", _list_context(request))


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def run_start_view(request):
    """The start form on its own page (GET), and the start itself (POST): a list of 200 runs never buries it."""
    if request.method != "POST":
        # From a task's page (?task=NAME): that task is picked already.
        task = task_named(request.GET.get("task") or "")
        return render(request, "runs/start.html", {"start_form": StartRunForm(initial={"task": task} if task else {})})
    form = StartRunForm(request.POST)
    if not form.is_valid():
        return render(request, "runs/start.html", {"start_form": form}, status=400)
    data = form.cleaned_data
    kernel = data["starting_kernel"]
    # A recording found here replays best from where it was recorded: its own starting kernel and goal (as the
    # demo of `serve` does), unless the operator picked a kernel.
    start = recorded_start(recording_of(data["model"], form.model_options))
    if kernel:
        start["starting_kernel"] = kernel.source
    try:
        run = run_start(
            task=data["task"],
            model=data["model"],
            started_by=request.user,
            **start,
            **form.run_settings(),
        )
    except ServiceError as refused:
        form.add_error(None, str(refused))
        return render(request, "runs/start.html", {"start_form": form}, status=400)
    flash_run_status(request, run, f"Run {run.pk} is queued; a worker will pick it up.")
    return redirect("run_detail", run_id=run.pk)


@role_required(OPERATOR)
@require_POST
def demo_start_view(request):
    """The demo run (runs/demo.py), started when someone is there to watch it stream."""
    review = request.POST.get("review") == "1"
    try:
        run = demo_run_start(started_by=request.user, review=review)
    except ServiceError as refused:
        messages.error(request, f"The demo cannot start: {refused}")
        return redirect("home")
    if review:
        flash_run_status(
            request,
            run,
            f"Review demo run {run.pk} is queued: it stops at its first question until you approve, edit or veto "
            "it in the review queue, then plays on.",
        )
    else:
        flash_run_status(request, run, f"Demo run {run.pk} is queued: a recorded run plays back here, live.")
    return redirect("run_detail", run_id=run.pk)


@login_required
@require_safe
def run_detail(request, run_id: int):
    run = run_or_404(run_id, "task", "worker", "started_by", "study")
    goal_baseline, goal_speedup = run.goal  # the run's own goal, which it is judged against
    forks = run_forks(run)
    return render(
        request,
        "runs/run_detail.html",
        {
            "run": run,
            "kinds": StepKind.choices,
            "message_form": MessageForm(),
            "evaluations": newest_evaluations(run, EVALUATIONS_SHOWN),
            "evaluations_shown": EVALUATIONS_SHOWN,
            "baselines": run.best_texts(),
            "goal_baseline": goal_baseline,
            "goal_speedup": goal_speedup,
            "refused_events": refused_events_of(run),
            "sandbox": run_sandbox(run.pk),
            "queue_reason": run_queue_reason(run),
            "forks": forks,
            "developed_kernels": run_developed_kernels(run) if run.imported_from else [],
            "forks_compare": ",".join(str(pk) for pk in [run.pk, *(f.pk for f in forks)][:COMPARE_MAX]),
            "fork_decision": fork_decision_text(run),
            "study_value": study_value_of(run),
            # The best figures that are not verified, shown labelled beside the verified best (issue 34).
            "unverified": run_unverified_bests(run),
            "best_text": run_best_text(run),  # the verified best with its interval (run_page.js redraws it)
            "closed_questions": run_questions_closed(run),
            "unheard_questions": run_questions_unheard(run),
            "elapsed": elapsed_text(run),  # run_page.js ticks it on while the run runs
            # Only operators fork (one more query, asked for them alone), and are told why where they cannot.
            "fork_refusal": run_fork_refusal(run) if permissions.has_role(request.user, OPERATOR) else "",
            "usage_unknown": run_usage_unknown(run),
            "is_verify": run_is_verify(run),
            # The feed follows new steps only where some can come: not on a finished or an imported run.
            "live": not run.is_finished and not run.imported_from,
        },
    )


def _done(request, run_id: int, *, ok: bool, message: str, status: int = 200, run: Run | None = None):
    """The answer to an action on a run: JSON for the page's scripts, else a flash and the run's page. `run`: the
    message reports its status (runs/flash.py)."""
    if _wants_json(request):
        return JsonResponse({"ok": ok, "message": message}, status=status)
    if ok and run is not None:
        flash_run_status(request, run, message)
    else:
        (messages.success if ok else messages.error)(request, message)
    return redirect("run_detail", run_id=run_id)


@role_required(OPERATOR)
@require_POST
def run_control_view(request, run_id: int):
    run = run_or_404(run_id)
    action = request.POST.get("action")
    if action not in ("pause", "resume", "stop"):
        return HttpResponseBadRequest("action must be pause, resume or stop")
    try:
        run = run_control(run=run, action=action, user=request.user)
    except ServiceError as refused:
        return _done(request, run_id, ok=False, message=str(refused), status=409)
    return _done(request, run_id, ok=True, message=f"Run {run.pk} is now {run.get_status_display().lower()}.", run=run)


@role_required(REVIEWER)
@require_POST
def run_message_view(request, run_id: int):
    run = run_or_404(run_id)
    form = MessageForm(request.POST)
    if not form.is_valid():
        # The form's own words: "the message is empty", or the length limit with the message's length, which a
        # writer of a long message needs (the bare "empty or too long" named neither the limit nor the length).
        reason = " ".join(str(error) for error in form.errors.get("text", [])) or "the message is empty"
        return _done(request, run_id, ok=False, message=reason, status=400)
    try:
        run_send_human_message(run=run, user=request.user, text=form.cleaned_data["text"])
    except ServiceError as refused:
        return _done(request, run_id, ok=False, message=str(refused), status=409)
    return _done(request, run_id, ok=True, message="Sent: the agent reads it at its next turn.")
