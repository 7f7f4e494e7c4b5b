"""Every write to runs, steps, questions, kernels, evaluations and worker hosts.

Each function keeps one invariant that a plain `save()` would not, and says which. Views, consumers and
commands call these; nothing else writes these models.
"""

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from questionbank.models import BankQuestion
from runs.events import publish_after_commit
from runs.models import (
    FINISHED_STATUSES,
    Evaluation,
    EvaluationStatus,
    Kernel,
    Question,
    QuestionSource,
    QuestionStatus,
    ReviewMode,
    Run,
    RunStatus,
    ScenarioResult,
    Step,
    StepKind,
    Task,
    WorkerHost,
)


class ServiceError(Exception):
    """A request that the data does not allow; the message is meant for the user."""


class StepConflict(ServiceError):
    """A step with this (run, seq) is stored already with different content: the sender reused a number."""


class QuestionAlreadyDecided(ServiceError):
    pass


# ---------------------------------------------------------------------------------------------------- tasks


def task_upsert(
    *, name: str, target: str, starting_kernel: str, goal_baseline: str, goal_speedup: float,
    title: str = "", description: str = "", starting_kernel_name: str = "",
) -> Task:
    task, _ = Task.objects.update_or_create(
        name=name,
        defaults=dict(
            target=target, starting_kernel=starting_kernel, goal_baseline=goal_baseline, goal_speedup=goal_speedup,
            title=title, description=description, starting_kernel_name=starting_kernel_name,
        ),
    )
    return task


# ----------------------------------------------------------------------------------------------------- runs


def run_start(
    *, task: Task, model: str, started_by=None, starting_kernel: str | None = None,
    review_mode: str = ReviewMode.REVIEW, review_timeout_s: int | None = None,
    budget_steps: int | None = None, budget_tokens: int | None = None, budget_cost_usd: Decimal | None = None,
    budget_wall_s: int | None = None, budget_evaluations: int | None = None,
) -> Run:
    """Queue a run; a worker claims it with `run_claim`."""
    if review_mode == ReviewMode.REVIEW_TIMEOUT and not review_timeout_s:
        raise ServiceError("review mode 'review_timeout' needs review_timeout_s")
    with transaction.atomic():
        run = Run.objects.create(
            task=task, model=model, started_by=started_by,
            starting_kernel=starting_kernel if starting_kernel is not None else task.starting_kernel,
            review_mode=review_mode, review_timeout_s=review_timeout_s, budget_steps=budget_steps,
            budget_tokens=budget_tokens, budget_cost_usd=budget_cost_usd, budget_wall_s=budget_wall_s,
            budget_evaluations=budget_evaluations,
        )
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run


def run_claim(*, worker: WorkerHost) -> Run | None:
    """Give the oldest queued run to `worker`. Two workers asking at once never get the same run."""
    with transaction.atomic():
        # skip_locked lets concurrent claims on PostgreSQL pass each other; SQLite serialises writers anyway.
        run = (
            Run.objects.select_for_update(skip_locked=True)
            .filter(status=RunStatus.QUEUED, worker__isnull=True)
            .order_by("created_at", "pk")
            .first()
        )
        if run is None:
            return None
        run.worker = worker
        run.status = RunStatus.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.save(update_fields=["worker", "status", "started_at", "updated_at"])
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run


_ALLOWED_TRANSITIONS = {
    RunStatus.QUEUED: {RunStatus.RUNNING, RunStatus.STOPPED, RunStatus.FAILED},
    RunStatus.RUNNING: {RunStatus.WAITING_REVIEW, RunStatus.PAUSED, *FINISHED_STATUSES},
    RunStatus.WAITING_REVIEW: {RunStatus.RUNNING, RunStatus.PAUSED, *FINISHED_STATUSES},
    RunStatus.PAUSED: {RunStatus.RUNNING, RunStatus.QUEUED, *FINISHED_STATUSES},
}


def run_set_status(*, run: Run, status: str) -> Run:
    """Move a run to `status`. A finished run stays finished; a run does not go back to queued from running."""
    if status not in RunStatus.values:
        raise ServiceError(f"unknown run status {status!r}")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status == status:
            return run
        if status not in _ALLOWED_TRANSITIONS.get(run.status, set()):
            raise ServiceError(f"a run that is {run.status} cannot become {status}")
        run.status = status
        fields = ["status", "updated_at"]
        if status in FINISHED_STATUSES:
            run.finished_at = timezone.now()
            fields.append("finished_at")
        run.save(update_fields=fields)
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": status}, to_all_runs=True)
    return run


# ---------------------------------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class StepRecorded:
    step: Step
    created: bool  # False: the same event was stored before (a re-delivery)


def _as_datetime(value) -> datetime:
    if value is None:
        return timezone.now()
    if isinstance(value, datetime):
        return value
    parsed = parse_datetime(str(value))
    if parsed is None:
        raise ServiceError(f"not an ISO 8601 timestamp: {value!r}")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, timezone.utc)


def _same_payload(a, b) -> bool:
    # Compare as JSON: the database may hand back a dict with other key order or int/float spellings.
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def step_record(
    *, run: Run, seq: int, kind: str, payload: dict, created_at=None,
    tokens_in: int = 0, tokens_out: int = 0, cost_usd: Decimal | float | str = 0,
) -> StepRecorded:
    """Store one event of a run, exactly once.

    The same (run, seq) delivered again with the same content is acknowledged without a second row; with other
    content it is refused (StepConflict), because two different events under one number means the sender is
    broken and silently keeping either would lose the other. Run totals are kept in the same transaction.
    """
    if kind not in StepKind.values:
        raise ServiceError(f"unknown step kind {kind!r}")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise ServiceError(f"seq must be a non-negative integer, not {seq!r}")
    if not isinstance(payload, dict):
        raise ServiceError("payload must be a JSON object")
    when = _as_datetime(created_at)
    cost = Decimal(str(cost_usd))
    try:
        with transaction.atomic():
            step = Step.objects.create(
                run=run, seq=seq, kind=kind, payload=payload, created_at=when,
                tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
            )
            Run.objects.filter(pk=run.pk).update(
                last_seq=Greatest(F("last_seq"), seq), step_count=F("step_count") + 1,
                tokens_in=F("tokens_in") + tokens_in, tokens_out=F("tokens_out") + tokens_out,
                cost_usd=F("cost_usd") + cost, updated_at=timezone.now(),
            )
            publish_after_commit(run.pk, {"type": "step.stored", "run_id": run.pk, "seq": seq, "kind": kind})
    except IntegrityError:
        existing = Step.objects.filter(run=run, seq=seq).first()
        if existing is None:  # the integrity error was something else: let it be seen
            raise
        if existing.kind != kind or not _same_payload(existing.payload, payload):
            raise StepConflict(f"run {run.pk} already has a different step #{seq} ({existing.kind})") from None
        return StepRecorded(existing, created=False)
    return StepRecorded(step, created=True)


# ------------------------------------------------------------------------------------------------ questions


def question_propose(
    *, run: Run, text: str, source: str, decision_point: str = "", category: str = "", reason: str = "",
    bank_entry: BankQuestion | None = None, step: Step | None = None,
) -> Question:
    if source not in QuestionSource.values:
        raise ServiceError(f"unknown question source {source!r}")
    if not text.strip():
        raise ServiceError("a question needs text")
    with transaction.atomic():
        question = Question.objects.create(
            run=run, text=text.strip(), source=source, decision_point=decision_point,
            category=category or (bank_entry.category if bank_entry else ""), reason=reason,
            bank_entry=bank_entry, step=step,
        )
        publish_after_commit(
            run.pk, {"type": "question.changed", "run_id": run.pk, "question_id": question.pk, "status": question.status},
            to_all_runs=True,
        )
    return question


def question_decide(*, question: Question, reviewer, action: str, text: str | None = None) -> Question:
    """A reviewer's decision on a proposed question: approve, edit (approve a new text) or veto. Once only."""
    if action not in ("approve", "edit", "veto"):
        raise ServiceError(f"unknown decision {action!r}: use approve, edit or veto")
    if action == "edit" and not (text and text.strip()):
        raise ServiceError("an edit needs the new text")
    with transaction.atomic():
        question = Question.objects.select_for_update().get(pk=question.pk)
        if question.status != QuestionStatus.PROPOSED:
            raise QuestionAlreadyDecided(f"question {question.pk} was already {question.status}")
        if action == "edit":
            question.original_text, question.text = question.text, text.strip()
        question.status = {"approve": QuestionStatus.APPROVED, "edit": QuestionStatus.EDITED, "veto": QuestionStatus.VETOED}[action]
        question.reviewer = reviewer
        question.decided_at = timezone.now()
        question.save(update_fields=["status", "text", "original_text", "reviewer", "decided_at"])
        publish_after_commit(
            question.run_id,
            {"type": "question.changed", "run_id": question.run_id, "question_id": question.pk, "status": question.status},
            to_all_runs=True,
        )
    return question


def question_ask_human(*, run: Run, author, text: str) -> Question:
    """A question a reviewer writes themselves: approved as it is written."""
    with transaction.atomic():
        question = question_propose(run=run, text=text, source=QuestionSource.HUMAN)
        return question_decide(question=question, reviewer=author, action="approve")


# -------------------------------------------------------------------------------------- kernels, evaluations


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def kernel_record(
    *, source: str, task: Task | None = None, language: str = "cuda", target_arch: str = "", filename: str = "",
    parent: Kernel | None = None, run: Run | None = None, step: Step | None = None,
) -> Kernel:
    """Store a kernel's source. Within one run the same source is one kernel, however often it is evaluated."""
    digest = sha256_text(source)
    if run is not None:
        existing = Kernel.objects.filter(run=run, sha256=digest).first()
        if existing:
            return existing
    return Kernel.objects.create(
        source=source, sha256=digest, task=task, language=language, target_arch=target_arch, filename=filename,
        parent=parent, run=run, step=step,
    )


def kernel_release(*, kernel: Kernel, name: str) -> Kernel:
    if not name:
        raise ServiceError("a released kernel needs a name")
    with transaction.atomic():
        Kernel.objects.filter(released=True, release_name=name).exclude(pk=kernel.pk).update(released=False)
        kernel.released, kernel.release_name = True, name
        kernel.save(update_fields=["released", "release_name"])
    return kernel


def evaluation_record(*, kernel: Kernel, result: dict, run: Run | None = None, step: Step | None = None) -> Evaluation:
    """Store a harness verdict (`EvalResult.to_dict()`) with its per-scenario rows, all or nothing.

    When the evaluation is correct on every scenario it ran and beats the run's best over the task's goal
    baseline, the run's best speedups move with it.
    """
    status = result.get("status")
    if status not in EvaluationStatus.values:
        raise ServiceError(f"unknown evaluation status {status!r}")
    scenarios = result.get("scenarios") or []
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            kernel=kernel, run=run, step=step, host=result.get("host") or "", gpu_name=result.get("device_name") or "",
            status=status, reason=result.get("reason") or "", scenario_set=str(result.get("scenario_set") or "")[:40],
            geomean=result.get("geomean") or {},
            started_at=_as_datetime(result["started_at"]) if result.get("started_at") else None,
            finished_at=_as_datetime(result["finished_at"]) if result.get("finished_at") else None,
        )
        ScenarioResult.objects.bulk_create(
            ScenarioResult(
                evaluation=evaluation, scenario_id=s["id"], params=s.get("params") or {}, correct=bool(s.get("correct")),
                error=s.get("error"), reason=s.get("reason") or "", time_ms=s.get("time_ms"), tflops=s.get("tflops"),
                speedups=s.get("speedup") or {},
            )
            for s in scenarios
        )
        if run is not None and status == EvaluationStatus.CORRECT:
            _raise_run_best(run, evaluation)
    return evaluation


def _raise_run_best(run: Run, evaluation: Evaluation) -> None:
    run = Run.objects.select_for_update().get(pk=run.pk)
    best = dict(run.best_speedups)
    for baseline, figures in evaluation.geomean.items():
        speedup = (figures or {}).get("speedup")
        if speedup is not None and speedup > best.get(baseline, 0):
            best[baseline] = speedup
    goal = evaluation.speedup_over(run.task.goal_baseline)
    fields = []
    if best != run.best_speedups:
        run.best_speedups = best
        fields.append("best_speedups")
    if goal is not None and (run.best_speedup is None or goal > run.best_speedup):
        run.best_speedup = goal
        fields.append("best_speedup")
    if fields:
        run.save(update_fields=fields + ["updated_at"])
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)


# ------------------------------------------------------------------------------------------------- workers


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def worker_host_create(*, name: str, gpus: list[str] | None = None) -> tuple[WorkerHost, str]:
    """Register a GPU host. Returns the host and its token; only the token's hash is stored."""
    token = "kst_" + secrets.token_urlsafe(32)
    host = WorkerHost.objects.create(name=name, gpus=gpus or [], token_hash=hash_token(token), token_prefix=token[:12])
    return host, token


def worker_host_authenticate(token: str) -> WorkerHost | None:
    """The active host this token belongs to, or None. Revoked tokens authenticate nobody."""
    if not token:
        return None
    host = WorkerHost.objects.filter(token_hash=hash_token(token), revoked_at__isnull=True).first()
    if host is not None:
        WorkerHost.objects.filter(pk=host.pk).update(last_seen=timezone.now())
    return host


def worker_host_revoke(*, host: WorkerHost) -> WorkerHost:
    host.revoked_at = timezone.now()
    host.save(update_fields=["revoked_at"])
    return host
