"""One event from a worker, stored with what it implies: a question, a decision, a kernel and its evaluation,
a status change."""

import logging
from decimal import Decimal
from pathlib import PurePosixPath

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from gpu_harness import figures
from questionbank.models import BankQuestion, DecisionPoint, QuestionCategory
from runs.events import publish_after_commit
from runs.models import (
    FINISHED_STATUSES,
    Evaluation,
    Kernel,
    Question,
    QuestionSource,
    QuestionStatus,
    RefusedEvent,
    Run,
    RunStatus,
    Step,
    StepKind,
    Target,
    WorkerHost,
)
from runs.services.errors import ServiceError, UnconfirmedSuccess
from runs.services.kernels import evaluation_record, kernel_record, run_goal_evaluation
from runs.services.questions import question_by_ref, question_decide, question_propose
from runs.services.runs import run_set_status
from runs.services.steps import StepRecorded, step_record

_log = logging.getLogger(__name__)


# The largest value of the integer columns (PositiveIntegerField: 32-bit signed on PostgreSQL).
INT_COLUMN_MAX = 2**31 - 1


def int_field(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ServiceError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def usage_of(usage) -> tuple[int, int, Decimal]:
    if usage is None:
        return 0, 0, Decimal(0)
    if not isinstance(usage, dict):
        raise ServiceError("usage must be a JSON object")
    cost = usage.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise ServiceError(f"usage.cost_usd must be a number or null, not {cost!r}")
    # An unknown price is null in the protocol; a total adds nothing for it (the run's cost is then a floor).
    return (
        int_field(usage.get("tokens_in", 0), "usage.tokens_in"),
        int_field(usage.get("tokens_out", 0), "usage.tokens_out"),
        Decimal(str(cost or 0)),
    )


def worker_event_record(*, worker: WorkerHost, event: dict) -> StepRecorded:
    """Store one `event` message from `worker` with what it implies (questions, kernels, evaluations, status).

    The step and its consequences commit together, so a re-delivered event (acked without a second row) can
    never be one whose consequences were lost.
    """
    run_id = event.get("run_id")
    try:
        run_id = int(run_id)
    except (TypeError, ValueError):
        raise ServiceError(f"run_id must be a server run's id, not {run_id!r}") from None
    run = Run.objects.select_related("task").filter(pk=run_id).first()
    if run is None:
        raise ServiceError(f"there is no run {run_id}")
    if run.worker_id != worker.pk:
        raise ServiceError(f"run {run_id} is not assigned to worker {worker.name}")
    seq = int_field(event.get("seq"), "seq")
    tokens_in, tokens_out, cost = usage_of(event.get("usage"))
    with transaction.atomic():
        recorded = step_record(
            run=run,
            seq=seq,
            kind=event.get("kind"),
            payload=event.get("payload"),
            created_at=event.get("ts"),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost,
        )
        if recorded.created:
            try:
                apply_step_effects(run=run, step=recorded.step)
            except (KeyError, TypeError, ValueError, AttributeError) as malformed:
                # A payload of the wrong shape: refuse the event (and roll its step back) with a clear reason.
                raise ServiceError(f"a {recorded.step.kind} event of the wrong shape: {malformed!r}") from None
    return recorded


def apply_step_effects(*, run: Run, step: Step) -> None:
    """What a stored event means beyond its row: a Question, a Kernel and its Evaluation, a status change."""
    payload = step.payload
    if step.kind == StepKind.QUESTION_PROPOSED:
        _question_from_event(run, step, payload)
    elif step.kind == StepKind.QUESTION_DECIDED:
        _decision_from_event(run, payload)
    elif step.kind == StepKind.EVALUATION:
        _evaluation_from_event(run, step, payload)
    elif step.kind == StepKind.STATUS:
        _status_from_event(run, payload)


def _status_from_event(run: Run, payload: dict) -> None:
    """A worker's status change. A final status carries why the run ended (`reason`, `detail`): the run keeps it
    as its status_reason, which its page shows in the header. `succeeded` is taken only when a stored evaluation
    of the run confirms the goal by the server's own reading; otherwise the event is refused (UnconfirmedSuccess)."""
    status = payload.get("status")
    if status not in RunStatus.values:
        return
    if status == RunStatus.SUCCEEDED and run_goal_evaluation(run) is None:
        baseline, target = run.goal
        raise UnconfirmedSuccess(
            f"a 'succeeded' status with no stored evaluation that confirms the goal (correct on every scenario of "
            f"the task's full set, at least {target:g}x over {baseline})"
        )
    reason = None
    if status in FINISHED_STATUSES:
        reason = status_reason_text(payload)
    elif status == RunStatus.RUNNING and payload.get("reason") in ("started", "resumed"):
        reason = ""  # a reason from before (e.g. re-queued) no longer applies
    try:
        run_set_status(run=run, status=status, reason=reason)
    except ServiceError as refused:  # e.g. the worker catching up after an operator stopped the run
        _log.info("run %s: status event %s not applied: %s", run.pk, status, refused)


def status_reason_text(payload: dict) -> str:
    """`budget_cost: cost budget spent (...)` from a status event's reason and detail, as the run page shows it."""
    reason = str(payload.get("reason") or "").strip()
    detail = str(payload.get("detail") or "").strip()
    text = f"{reason}: {detail}" if reason and detail and detail != reason else (reason or detail)
    limit = Run._meta.get_field("status_reason").max_length
    return text if len(text) <= limit else text[: limit - 1] + "…"


def event_refusal_record(
    *, worker: WorkerHost, event: dict, error: str, size_bytes: int = 0, fail_run: bool = False
) -> RefusedEvent | None:
    """Keep on its run that an event was refused for good, so that the run's page says what is missing and why
    (the worker drops a refused event). Only for a run this worker holds: nobody writes on another's run. With
    `fail_run` (a `succeeded` nobody confirmed) the run also ends failed, with the refusal as its reason."""
    try:
        run_id, seq = int(event.get("run_id")), int_field(event.get("seq"), "seq")
    except (TypeError, ValueError, OverflowError, ServiceError):
        return None
    run = Run.objects.select_related("task").filter(pk=run_id, worker=worker).first()
    if run is None or seq > INT_COLUMN_MAX:
        return None
    kind = event.get("kind") if isinstance(event.get("kind"), str) else ""
    refusal, _ = RefusedEvent.objects.update_or_create(
        run=run,
        seq=seq,
        defaults={
            "kind": kind[:32],
            "size_bytes": min(size_bytes, INT_COLUMN_MAX),
            "error": error[:2000],
            "refused_at": timezone.now(),
        },
    )
    if fail_run and not run.is_finished:
        run_set_status(run=run, status=RunStatus.FAILED, reason=f"refused: {error}")
    else:
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status})
    return refusal


def _question_from_event(run: Run, step: Step, payload: dict) -> Question:
    text = str(payload.get("text") or "").strip()
    if not text:
        raise ServiceError("a question_proposed event needs text")
    bank_key = payload.get("bank_key")
    bank_entry = BankQuestion.objects.filter(key=bank_key).first() if bank_key else None
    decision_point = payload.get("decision_point") if payload.get("decision_point") in DecisionPoint.values else ""
    category = payload.get("category") if payload.get("category") in QuestionCategory.values else ""
    source = QuestionSource.SELF if payload.get("by", "model") == "model" else QuestionSource.BANK
    return question_propose(
        run=run,
        text=text,
        source=source,
        decision_point=decision_point,
        category=category,
        reason=str(payload.get("reason") or ""),
        bank_entry=bank_entry,
        step=step,
    )


def _decision_from_event(run: Run, payload: dict) -> None:
    """The agent reports a decision: one the dashboard made (already stored) or an auto/timeout approval."""
    question = question_by_ref(run, str(payload.get("question_ref") or ""))
    if question is None or question.status != QuestionStatus.PROPOSED:
        return
    action = payload.get("action")
    if action not in ("approve", "edit", "veto", "replace"):
        return
    reviewer = None
    if payload.get("by") == "reviewer" and payload.get("reviewer"):
        reviewer = get_user_model().objects.filter(username=payload["reviewer"]).first()
    question_decide(
        question=question,
        reviewer=reviewer,
        action="edit" if action == "replace" else action,
        text=payload.get("text"),
    )


def _evaluation_from_event(run: Run, step: Step, payload: dict) -> Evaluation:
    result = payload.get("result")
    if not isinstance(result, dict):
        raise ServiceError("an evaluation event needs a result object")
    source = payload.get("kernel_source") or result.get("kernel_source")
    if not isinstance(source, str) or not source:
        raise ServiceError("an evaluation event needs the kernel source")
    cpu = run.task.target == Target.CPU
    previous = Kernel.objects.filter(run=run).order_by("-created_at", "-pk").first()
    filename = PurePosixPath(str(payload.get("kernel_path") or result.get("kernel_path") or "")).name
    kernel = kernel_record(
        source=source,
        task=run.task,
        language="cpp" if cpu else "cuda",
        target_arch=figures.build_arch(result),  # what its build was compiled for (blank for a CPU build)
        filename=filename,
        parent=previous,
        run=run,
        step=step,
    )
    result = dict(result)
    if payload.get("scenario_set") is not None and not result.get("scenario_set"):
        scenario_set = payload["scenario_set"]
        result["scenario_set"] = ",".join(scenario_set) if isinstance(scenario_set, list) else scenario_set
    return evaluation_record(kernel=kernel, result=result, run=run, step=step)
