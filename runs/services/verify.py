"""Verify here: a run that evaluates one kernel's exact source once, on the full scenario set, on a worker of
this site that serves its task's target (docs/protocol.md 2.12). It is how an imported trace's claim becomes a
figure this site measured: the imported kernel's own figures stay claims, and only the verify run's evaluation
(a kernel of the same task and source) is verified (gpu_harness.figures.standing)."""

from typing import cast

from agentloop.protocol import VERIFY_MODEL
from runs.models import FINISHED_STATUSES, Kernel, ReviewMode, Run, Task
from runs.services.errors import ServiceError
from runs.services.kernels import sha256_text
from runs.services.runs import run_start


def verification_pending(kernel: Kernel) -> Run | None:
    """The unfinished verify run of this kernel's task and source, if one is queued or running."""
    if kernel.task_id is None:
        return None
    unfinished = Run.objects.filter(model=VERIFY_MODEL, task_id=kernel.task_id).exclude(status__in=FINISHED_STATUSES)
    # Verify runs are few and short-lived: their sources are compared here rather than indexed.
    return next((run for run in unfinished.order_by("pk") if sha256_text(run.starting_kernel) == kernel.sha256), None)


def kernel_verify(*, kernel: Kernel, user=None) -> Run:
    """Queue a verify run of `kernel`'s source: the `verify` model (no agent, no questions, one evaluation), the
    task's goal. Refused for a kernel with no task here, and while a verification of the same source waits."""
    if kernel.task_id is None:
        raise ServiceError("this kernel names no task of this site: no harness here can evaluate it")
    pending = verification_pending(kernel)
    if pending is not None:
        raise ServiceError(f"run {pending.pk} already verifies this source ({pending.get_status_display().lower()})")
    return run_start(
        task=cast(Task, kernel.task),  # (a kernel that is verified names its task)
        model=VERIFY_MODEL,
        started_by=user,
        starting_kernel=kernel.source,
        review_mode=ReviewMode.AUTO,
        asks_questions=False,
        budget_evaluations=1,
    )
