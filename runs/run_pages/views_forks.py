"""Forks: a run continued from one of its steps (`/runs/<id>/fork/?seq=N`): the page that shows what the fork
starts from and takes the operator's decision at a question (GET), and the fork itself (POST). docs/fork.md."""

from typing import Any

from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from questionbank.selectors import bank_entries
from runs.flash import flash_run_status
from runs.forms import ForkForm
from runs.model_options import default_model, model_options, model_refusal
from runs.permissions import OPERATOR, role_required
from runs.run_pages.selectors import step_line
from runs.selectors_pages import run_or_404, step_at
from runs.services import ServiceError, fork_preview, run_fork


def _seq(request) -> int | None:
    raw = (request.POST.get("seq") or request.GET.get("seq") or "").strip().lstrip("#")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 10 else None  # "²".isdigit() too


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def fork_view(request, run_id: int):
    parent = run_or_404(run_id, "task")
    seq = _seq(request)
    options = model_options()
    context: dict[str, Any] = {"parent": parent, "seq": seq, "model_options": options}
    if seq is None:
        context["error"] = "name the step to fork at: ?seq=N, a step number of this run"
        return render(request, "runs/fork.html", context, status=400)
    try:
        cut = fork_preview(parent=parent, step_seq=seq)
    except ServiceError as refused:
        context["error"] = str(refused)
        return render(request, "runs/fork.html", context, status=400)
    bank = bank_entries(task_target=parent.task.target) if cut.question else []
    if cut.question and cut.question.get("bank_key"):
        bank = [e for e in bank if e.key != cut.question["bank_key"]]  # another question than the one asked
    step = step_at(parent, seq)
    context |= {"cut": cut, "step": step, "step_line": step_line(step) if step else ""}
    if request.method != "POST":
        # The parent's model when it can run here; else (an imported trace's, a model without its key) the form
        # offers one that can and says why, rather than a fork the start would refuse.
        refusal = model_refusal(parent.model, options)
        model = default_model([o for o in options if o.ready]) if refusal else parent.model
        context["parent_model_refusal"] = refusal
        context["form"] = ForkForm(initial={"model": model, "decision": "veto"}, bank=bank)
        return render(request, "runs/fork.html", context)
    form = ForkForm(request.POST, bank=bank)
    context["form"] = form
    if not form.is_valid():
        return render(request, "runs/fork.html", context, status=400)
    data = form.cleaned_data
    try:
        fork = run_fork(
            parent=parent,
            step_seq=seq,
            model=data["model"],
            action=data["decision"],  # the service refuses one at a step that is not a question (docs/fork.md)
            bank_key=data["bank_key"],
            text=data["text"],
            user=request.user,
        )
    except ServiceError as refused:
        form.add_error(None, str(refused))
        return render(request, "runs/fork.html", context, status=400)
    flash_run_status(request, fork, f"Run {fork.pk} is queued: a fork of run {parent.pk} at step #{seq}.")
    return redirect("run_detail", run_id=fork.pk)
