"""Writes to runs: queue, claim, status changes (with the transitions a run may make), the controls a person
uses, and the assignment a worker receives."""

import json
import logging
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from agentloop.protocol import MESSAGE_MAX_BYTES, PROTOCOL_VERSION
from questionbank.bank import BankEntry
from runs import notify
from runs.events import publish_after_commit
from runs.models import FINISHED_STATUSES, Directive, DirectiveAction, ReviewMode, Run, RunStatus, Task, WorkerHost
from runs.services.directives import directive_send
from runs.services.errors import ServiceError
from runs.services.questions import shows_something

_log = logging.getLogger(__name__)


def run_start(
    *,
    task: Task,
    model: str,
    started_by=None,
    starting_kernel: str | None = None,
    review_mode: str = ReviewMode.REVIEW,
    review_timeout_s: int | None = None,
    goal_baseline: str = "",
    goal_speedup: float | None = None,
    budget_steps: int | None = None,
    budget_tokens: int | None = None,
    budget_cost_usd: Decimal | None = None,
    budget_wall_s: int | None = None,
    budget_evaluations: int | None = None,
    asks_questions: bool = True,
    study=None,
) -> Run:
    """Queue a run; a worker claims it with `run_claim`. `asks_questions` False: the agent asks no question at
    its decision points; `study`: the study (runs.services.studies) it is one run of."""
    if review_mode == ReviewMode.REVIEW_TIMEOUT and not review_timeout_s:
        raise ServiceError("review mode 'review_timeout' needs review_timeout_s")
    with transaction.atomic():
        run = Run.objects.create(
            task=task,
            model=model,
            started_by=started_by,
            starting_kernel=starting_kernel if starting_kernel is not None else task.starting_kernel,
            review_mode=review_mode,
            review_timeout_s=review_timeout_s,
            goal_baseline=goal_baseline,
            goal_speedup=goal_speedup,
            budget_steps=budget_steps,
            budget_tokens=budget_tokens,
            budget_cost_usd=budget_cost_usd,
            budget_wall_s=budget_wall_s,
            budget_evaluations=budget_evaluations,
            asks_questions=asks_questions,
            study=study,
        )
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run


def run_claim(*, worker: WorkerHost, gpu=None) -> Run | None:
    """Give `worker` the oldest queued run whose task's target it serves (the targets its newest hello announced,
    as stored on the host: `worker_hello`). Two workers asking at once never get the same run, a host whose
    token was revoked (its socket may not have closed yet) gets none, and so does a host that serves no target.
    `gpu`: the index the worker's claim named (the GPU the run will use), recorded on the run as "gpu N" so that
    its pages can show it; anything else records none."""
    with transaction.atomic():
        # Read from the row, not from `worker`: the host's targets are what its newest hello said.
        targets = (
            WorkerHost.objects.filter(pk=worker.pk, revoked_at__isnull=True).values_list("targets", flat=True).first()
        )
        if not targets:
            return None
        # skip_locked lets concurrent claims on PostgreSQL pass each other; SQLite serialises writers anyway. The
        # target is matched through a subquery, not a join, so that FOR UPDATE locks the run rows only: a join
        # would lock their task rows too, and a second claim would then skip every run of a task being claimed.
        run = (
            Run.objects.select_for_update(skip_locked=True)
            .filter(
                status=RunStatus.QUEUED,
                worker__isnull=True,
                task_id__in=Task.objects.filter(target__in=targets).values("pk"),
            )
            .order_by("created_at", "pk")
            .first()
        )
        if run is None:
            return None
        run.worker = worker
        run.worker_gpu = f"gpu {gpu}" if isinstance(gpu, int) and not isinstance(gpu, bool) and 0 <= gpu < 1024 else ""
        run.status = RunStatus.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.save(update_fields=["worker", "worker_gpu", "status", "started_at", "updated_at"])
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run


_ALLOWED_TRANSITIONS = {
    RunStatus.QUEUED: {RunStatus.RUNNING, RunStatus.STOPPED, RunStatus.FAILED},
    RunStatus.RUNNING: {RunStatus.WAITING_REVIEW, RunStatus.PAUSED, *FINISHED_STATUSES},
    RunStatus.WAITING_REVIEW: {RunStatus.RUNNING, RunStatus.PAUSED, *FINISHED_STATUSES},
    RunStatus.PAUSED: {RunStatus.RUNNING, RunStatus.QUEUED, *FINISHED_STATUSES},
}


def run_set_status(*, run: Run, status: str, reason: str | None = None) -> Run:
    """Move a run to `status`. A finished run stays finished; a run does not go back to queued from running.
    `reason` (when given) becomes the run's status_reason, which its page shows beside the status."""
    if status not in RunStatus.values:
        raise ServiceError(f"unknown run status {status!r}")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status == status and (reason is None or reason == run.status_reason):
            return run
        if run.status != status and status not in _ALLOWED_TRANSITIONS.get(run.status, set()):
            raise ServiceError(f"a run that is {run.status} cannot become {status}")
        changed = run.status != status
        run.status = status
        fields = ["status", "updated_at"]
        if reason is not None:
            run.status_reason = reason[: Run._meta.get_field("status_reason").max_length]
            fields.append("status_reason")
        if changed and status in FINISHED_STATUSES:
            run.finished_at = timezone.now()
            fields.append("finished_at")
        run.save(update_fields=fields)
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": status}, to_all_runs=True)
        if changed and status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            notify.notify_after_commit(status, run)
    return run


_CONTROL_STATUS = {"pause": RunStatus.PAUSED, "resume": RunStatus.RUNNING, "stop": RunStatus.STOPPED}
_CONTROL_DONE = {"pause": "paused", "resume": "resumed", "stop": "stopped"}  # for messages: "cannot be stopped"


def run_control(*, run: Run, action: str, user=None) -> Run:
    """Pause, resume or stop a run: its status changes now, and its worker (if any) is told.

    A queued run that no worker holds is simply stopped; pausing it is refused (nothing is running).
    """
    if action not in _CONTROL_STATUS:
        raise ServiceError(f"unknown control {action!r}: use pause, resume or stop")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            raise ServiceError(f"run {run.pk} has finished ({run.status}); it cannot be {_CONTROL_DONE[action]}")
        if action == "resume" and run.status != RunStatus.PAUSED:
            raise ServiceError(f"only a paused run can be resumed; run {run.pk} is {run.status}")
        if action == "pause" and run.status not in (RunStatus.RUNNING, RunStatus.WAITING_REVIEW):
            raise ServiceError(f"only a running run can be paused; run {run.pk} is {run.status}")
        run = run_set_status(run=run, status=_CONTROL_STATUS[action])
        if run.worker_id is not None:
            directive_send(run=run, action=action, user=user)
    return run


def run_send_human_message(*, run: Run, user, text: str) -> Directive:
    text = (text or "").strip()
    if not shows_something(text):
        raise ServiceError("the message is empty")
    if run.is_finished:
        raise ServiceError(f"run {run.pk} has finished; nobody would read the message")
    author = user.get_username() if user is not None else ""
    return directive_send(
        run=run, action=DirectiveAction.HUMAN_MESSAGE, fields={"text": text, "author": author}, user=user
    )


def run_assignment(run: Run) -> dict:
    """The `run` object of an `assign` message (docs/protocol.md 2.3), with the question bank the agent asks from
    (the active entries, reviewers' own included) and the figures of how each question worked in earlier runs."""
    task = run.task
    assignment = {
        "id": run.pk,
        "task": task.name,
        "model": run.model,
        "starting_kernel": run.starting_kernel,
        "starting_kernel_name": task.starting_kernel_name or None,
        "goal": dict(zip(("baseline", "speedup"), run.goal)),
        "budgets": {
            "steps": run.budget_steps,
            "tokens": run.budget_tokens,
            "cost_usd": float(run.budget_cost_usd) if run.budget_cost_usd is not None else None,
            "wall_s": run.budget_wall_s,
            "evaluations": run.budget_evaluations,
        },
        "review_mode": run.review_mode,
        "review_timeout_s": run.review_timeout_s,
    }
    if not run.asks_questions:  # docs/protocol.md 2.11: sent only when off, so older workers see no change
        assignment["questions"] = False
    if run.fork is not None:  # docs/protocol.md 2.10: the worker starts it from the parent's step
        assignment["fork"] = run.fork
        assignment["starting_kernel_name"] = run.fork.get("kernel_filename") or assignment["starting_kernel_name"]
    with_questions = assignment | _assignment_questions(task.target)
    # The bank and its figures are optional: an assignment they would push over the socket's limit goes without.
    if _message_bytes(with_questions) > MESSAGE_MAX_BYTES:
        _log.warning("run %s: assignment sent without the question bank, which would exceed the message limit", run.pk)
        return assignment
    return with_questions


def _message_bytes(run: dict) -> int:
    return len(
        json.dumps({"type": "assign", "v": PROTOCOL_VERSION, "run": run})
    )  # as sent: non-ASCII escaped, so bytes


def _wire_entry(entry: BankEntry) -> dict[str, object]:
    """A bank entry as the assignment's `bank` lists it (docs/protocol.md 2.7): `targets` only where the entry is
    not for every target, since the worker reads a missing one as every target and refuses an empty list."""
    wire: dict[str, object] = {
        "key": entry.key,
        "text": entry.text,
        "category": entry.category,
        "triggers": list(entry.triggers),
        "active": entry.active,
    }
    if entry.targets:
        wire["targets"] = list(entry.targets)
    return wire


def _assignment_questions(task_target: str) -> dict[str, object]:
    """`bank` and `question_stats` for an assignment. The run is already claimed when this runs, so a failure
    here must not lose the assignment: the fields are optional, and without them the worker uses its bank file.
    The bank is the entries that apply to the run's `task_target`, each with its `targets`: a worker that
    predates them (and would ask any entry) still gets none made for another target."""
    from questionbank.selectors import bank_entries
    from runs.selectors_bank import selection_stats

    questions: dict[str, object] = {}
    try:
        questions["bank"] = [_wire_entry(e) for e in bank_entries(task_target=task_target)]
    except Exception:
        _log.exception("assignment without the question bank: it could not be read")
        return questions
    try:
        questions["question_stats"] = selection_stats()
    except Exception:
        _log.exception("assignment without question stats: they could not be computed")
    return questions
