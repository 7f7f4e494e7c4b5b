"""Flash messages that report a run's status ("Run 7 is queued", "Run 7 is now paused"): each is tagged with the
status it reports (`run-status-<status>`), which base.html renders as `data-tags`, so that the run page drops it
as soon as the run has another status. A banner is shown once, and never says "queued" beside a run that has
succeeded since."""

from django.contrib import messages

from runs.models import Run

TAG_PREFIX = "run-status-"


def flash_run_status(request, run: Run, text: str) -> None:
    """A success message about `run` that holds while the run keeps its current status."""
    messages.success(request, text, extra_tags=TAG_PREFIX + run.status)
