from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from runs.models import RunStatus
from runs.selectors import run_list


@login_required
def home(request):
    status = request.GET.get("status") or None
    if status not in RunStatus.values:
        status = None
    runs = run_list(status=status)[:200]
    return render(request, "runs/home.html", {"runs": runs, "status": status, "statuses": RunStatus.choices})
