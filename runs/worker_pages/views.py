"""Worker hosts and their tokens: operators register a host (its token is shown once) or revoke one."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from runs.forms import WorkerHostForm
from runs.permissions import OPERATOR, role_required
from runs.selectors_pages import worker_host_or_404, worker_name_taken
from runs.services import worker_host_create, worker_host_revoke
from runs.worker_pages.selectors import held_runs_of, worker_hosts


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def workers(request):
    form = WorkerHostForm(request.POST or None)
    token = None
    if request.method == "POST" and form.is_valid():
        if worker_name_taken(form.cleaned_data["name"]):
            form.add_error("name", "a host of this name exists; revoke it or choose another name")
        else:
            host, token = worker_host_create(name=form.cleaned_data["name"], gpus=form.cleaned_data["gpus"])
            form = WorkerHostForm()
    # The token is rendered into this one response and never stored in plain text. A refused form is a 400, as
    # every form of the dashboard answers one.
    return render(
        request,
        "runs/workers.html",
        {"hosts": worker_hosts(), "form": form, "token": token},
        status=400 if form.errors else 200,
    )


@role_required(OPERATOR)
@require_http_methods(["GET", "HEAD", "POST"])
def worker_revoke(request, host_id: int):
    """GET asks for a confirmation (what revoking does to this host and its runs); POST revokes."""
    host = worker_host_or_404(host_id)
    if request.method == "GET":
        return render(request, "runs/worker_revoke.html", {"host": host, "held_runs": held_runs_of(host)})
    if not host.is_active:
        messages.info(request, f"The token of {host.name} was already revoked.")
    else:
        worker_host_revoke(host=host)
        messages.success(
            request, f"Revoked the token of {host.name}: its sockets are closed and it is refused from now on."
        )
    return redirect("workers")
