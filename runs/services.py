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
    goal_baseline: str = "", goal_speedup: float | None = None,
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
            review_mode=review_mode, review_timeout_s=review_timeout_s, goal_baseline=goal_baseline,
            goal_speedup=goal_speedup, budget_steps=budget_steps,
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

    When the evaluation is correct on every scenario it ran and beats the run's best over the run's goal
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
    goal = evaluation.speedup_over(run.goal[0])
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


def worker_host_rotate_token(*, host: WorkerHost) -> tuple[WorkerHost, str]:
    """Give a host a new token (the old one stops working at once) and lift a revocation. Returns the token."""
    token = "kst_" + secrets.token_urlsafe(32)
    host.token_hash, host.token_prefix, host.revoked_at = hash_token(token), token[:12], None
    host.save(update_fields=["token_hash", "token_prefix", "revoked_at"])
    return host, token


def worker_host_revoke(*, host: WorkerHost) -> WorkerHost:
    host.revoked_at = timezone.now()
    host.save(update_fields=["revoked_at"])
    return host


# ============================================================================================================
# The dashboard's writes: directives to workers, run controls, reviews, worker events, trace import.
# ============================================================================================================

import logging  # noqa: E402
from pathlib import PurePosixPath  # noqa: E402

from asgiref.sync import async_to_sync  # noqa: E402
from channels.layers import get_channel_layer  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402

from questionbank.models import DecisionPoint, QuestionCategory  # noqa: E402
from runs.models import Directive, DirectiveAction, Target  # noqa: E402

_log = logging.getLogger(__name__)


def worker_group(host_id: int) -> str:
    """The channel group of one worker host's sockets: told when a directive for it is stored."""
    return f"worker.{host_id}"


def _tell_worker_after_commit(host_id: int | None) -> None:
    if host_id is None:
        return

    def send():
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(worker_group(host_id), {"type": "directives.available"})
        except Exception:  # the directive is stored; the worker gets it at its next hello
            _log.exception("could not tell worker %s about a directive", host_id)

    transaction.on_commit(send)


def directive_send(*, run: Run, action: str, fields: dict | None = None, user=None) -> Directive:
    """Queue an instruction for the worker holding `run`; it is pushed after commit and kept until acked."""
    if action not in DirectiveAction.values:
        raise ServiceError(f"unknown directive action {action!r}")
    with transaction.atomic():
        directive = Directive.objects.create(run=run, action=action, fields=fields or {}, created_by=user)
        # The holder as stored now: the caller's run object may predate the claim.
        _tell_worker_after_commit(Run.objects.filter(pk=run.pk).values_list("worker_id", flat=True).first())
    return directive


def directives_pending_for(*, worker: WorkerHost) -> list[Directive]:
    """Unacknowledged directives of the runs this worker holds, oldest first."""
    return list(
        Directive.objects.filter(run__worker=worker, acked_at__isnull=True).select_related("created_by").order_by("pk")
    )


def directive_mark_sent(*, directive: Directive) -> None:
    Directive.objects.filter(pk=directive.pk).update(sent_count=F("sent_count") + 1, last_sent_at=timezone.now())


def directive_acknowledge(*, worker: WorkerHost, wire_id: str) -> bool:
    """Mark a directive acknowledged. False when the id is not one of this worker's (nothing changes)."""
    if not isinstance(wire_id, str) or not wire_id.startswith("d-") or not wire_id[2:].isdigit():
        return False
    updated = Directive.objects.filter(pk=int(wire_id[2:]), run__worker=worker, acked_at__isnull=True).update(
        acked_at=timezone.now()
    )
    # An id acked before is fine (the worker re-acks duplicates); an id of another worker's run is not.
    return bool(updated) or Directive.objects.filter(pk=int(wire_id[2:]), run__worker=worker).exists()


def directive_wire_message(directive: Directive) -> dict:
    """The `directive` message of docs/protocol.md 2.3 for this row."""
    return {"type": "directive", "v": 1, "id": directive.wire_id, "run_id": directive.run_id,
            "action": directive.action, **directive.fields}


# ------------------------------------------------------------------------------------------- run controls

_CONTROL_STATUS = {"pause": RunStatus.PAUSED, "resume": RunStatus.RUNNING, "stop": RunStatus.STOPPED}


def run_control(*, run: Run, action: str, user=None) -> Run:
    """Pause, resume or stop a run: its status changes now, and its worker (if any) is told.

    A queued run that no worker holds is simply stopped; pausing it is refused (nothing is running).
    """
    if action not in _CONTROL_STATUS:
        raise ServiceError(f"unknown control {action!r}: use pause, resume or stop")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            raise ServiceError(f"run {run.pk} has finished ({run.status}); it cannot be {action}d")
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
    if not text:
        raise ServiceError("the message is empty")
    if run.is_finished:
        raise ServiceError(f"run {run.pk} has finished; nobody would read the message")
    author = user.get_username() if user is not None else ""
    return directive_send(run=run, action=DirectiveAction.HUMAN_MESSAGE, fields={"text": text, "author": author}, user=user)


# ---------------------------------------------------------------------------------------------- reviews


def question_ref_of(question: Question) -> str:
    """The agent's name for a question (the `question_ref` of its `question_proposed` event), or ''."""
    if question.step is None:
        return ""
    return str((question.step.payload or {}).get("question_ref") or "")


def question_review(*, question: Question, reviewer, decision: str, text: str | None = None) -> Question:
    """A reviewer decides a proposed question, and the run's agent is told (a `question_decision` directive).

    `replace` (the reviewer writes their own question) is stored like an edit: the proposal is kept as
    `original_text`; the agent is told it was a replacement.
    """
    if decision not in ("approve", "edit", "veto", "replace"):
        raise ServiceError(f"unknown decision {decision!r}: use approve, edit, veto or replace")
    with transaction.atomic():
        decided = question_decide(
            question=question, reviewer=reviewer, action="edit" if decision == "replace" else decision, text=text
        )
        ref = question_ref_of(decided)
        if ref:
            fields = {"question_ref": ref, "decision": decision}
            if decision in ("edit", "replace"):
                fields["text"] = decided.text
            if reviewer is not None:
                fields["reviewer"] = reviewer.get_username()
            directive_send(run=decided.run, action=DirectiveAction.QUESTION_DECISION, fields=fields, user=reviewer)
    return decided


# ------------------------------------------------------------------------------------------ worker events


def worker_hello(*, worker: WorkerHost, gpus) -> WorkerHost:
    if isinstance(gpus, list) and all(isinstance(g, str) for g in gpus) and gpus != worker.gpus:
        worker.gpus = gpus[:64]
        worker.save(update_fields=["gpus"])
    return worker


HELD_STATUSES = (RunStatus.RUNNING, RunStatus.WAITING_REVIEW, RunStatus.PAUSED)


def worker_runs_reconcile(*, worker: WorkerHost, active_run_ids: set[str]) -> dict[int, str]:
    """Runs this worker holds here but did not list in its `hello` (docs/protocol.md 2.4): it has lost them
    (a wiped state folder, a new machine under the old name), so no event of theirs will come.

    A run with no stored event was never started there (the `assign` may have been lost with the connection):
    it goes back to the queue for any worker. A run that has events is failed, with the reason, rather than
    started afresh elsewhere, where a second copy could mix its events with the first's. Returns run id -> new
    status.
    """
    changed = {}
    with transaction.atomic():
        held = Run.objects.select_for_update().filter(worker=worker, status__in=HELD_STATUSES)
        for run in held:
            if str(run.pk) in active_run_ids:
                continue
            if run.step_count == 0:
                run.status, run.worker, run.started_at = RunStatus.QUEUED, None, None
                run.status_reason = f"re-queued: worker {worker.name} reconnected without it before it started"
            else:
                run.status, run.finished_at = RunStatus.FAILED, timezone.now()
                run.status_reason = f"worker {worker.name} reconnected without this run: its state is lost"
            run.save(update_fields=["status", "worker", "started_at", "finished_at", "status_reason", "updated_at"])
            publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
            changed[run.pk] = run.status
    return changed


def run_assignment(run: Run) -> dict:
    """The `run` object of an `assign` message (docs/protocol.md 2.3), with the question bank the agent asks from
    (the active entries, reviewers' own included) and the figures of how each question worked in earlier runs."""
    task = run.task
    assignment = {
        "id": run.pk, "task": task.name, "model": run.model, "starting_kernel": run.starting_kernel,
        "starting_kernel_name": task.starting_kernel_name or None,
        "goal": dict(zip(("baseline", "speedup"), run.goal)),
        "budgets": {
            "steps": run.budget_steps, "tokens": run.budget_tokens,
            "cost_usd": float(run.budget_cost_usd) if run.budget_cost_usd is not None else None,
            "wall_s": run.budget_wall_s, "evaluations": run.budget_evaluations,
        },
        "review_mode": run.review_mode, "review_timeout_s": run.review_timeout_s,
    }
    return assignment | _assignment_questions()


def _assignment_questions() -> dict:
    """`bank` and `question_stats` for an assignment. The run is already claimed when this runs, so a failure
    here must not lose the assignment: the fields are optional, and without them the worker uses its bank file."""
    from questionbank.selectors import bank_entries, selection_stats

    questions = {}
    try:
        questions["bank"] = [
            {"key": e.key, "text": e.text, "category": e.category, "triggers": list(e.triggers), "active": e.active}
            for e in bank_entries()
        ]
    except Exception:  # noqa: BLE001 - see the docstring: the assignment goes out without the bank
        _log.exception("assignment without the question bank: it could not be read")
        return questions
    try:
        questions["question_stats"] = selection_stats()
    except Exception:  # noqa: BLE001 - the figures are a help to the agent, not a condition of the run
        _log.exception("assignment without question stats: they could not be computed")
    return questions


def _int_field(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ServiceError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def _usage_of(usage) -> tuple[int, int, Decimal]:
    if usage is None:
        return 0, 0, Decimal(0)
    if not isinstance(usage, dict):
        raise ServiceError("usage must be a JSON object")
    cost = usage.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise ServiceError(f"usage.cost_usd must be a number or null, not {cost!r}")
    # An unknown price is null in the protocol; a total adds nothing for it (the run's cost is then a floor).
    return (_int_field(usage.get("tokens_in", 0), "usage.tokens_in"),
            _int_field(usage.get("tokens_out", 0), "usage.tokens_out"), Decimal(str(cost or 0)))


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
    seq = _int_field(event.get("seq"), "seq")
    tokens_in, tokens_out, cost = _usage_of(event.get("usage"))
    with transaction.atomic():
        recorded = step_record(
            run=run, seq=seq, kind=event.get("kind"), payload=event.get("payload"), created_at=event.get("ts"),
            tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
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
        status = payload.get("status")
        if status in RunStatus.values:
            try:
                run_set_status(run=run, status=status)
            except ServiceError as refused:  # e.g. the worker catching up after an operator stopped the run
                _log.info("run %s: status event %s not applied: %s", run.pk, status, refused)


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
        run=run, text=text, source=source, decision_point=decision_point, category=category,
        reason=str(payload.get("reason") or ""), bank_entry=bank_entry, step=step,
    )


def question_by_ref(run: Run, ref: str) -> Question | None:
    return (
        Question.objects.filter(run=run, step__kind=StepKind.QUESTION_PROPOSED, step__payload__question_ref=ref)
        .select_related("step").first()
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
        question=question, reviewer=reviewer, action="edit" if action == "replace" else action,
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
        source=source, task=run.task, language="cpp" if cpu else "cuda", target_arch="" if cpu else "sm_90a",
        filename=filename, parent=previous, run=run, step=step,
    )
    result = dict(result)
    if payload.get("scenario_set") is not None and not result.get("scenario_set"):
        scenario_set = payload["scenario_set"]
        result["scenario_set"] = ",".join(scenario_set) if isinstance(scenario_set, list) else scenario_set
    return evaluation_record(kernel=kernel, result=result, run=run, step=step)


# ------------------------------------------------------------------------------------------- trace import

import json as _json  # noqa: E402

_IMPORT_BATCH = 1000


def _trace_records(lines) -> list[dict]:
    """Parse JSONL; a last line cut short (a crash mid-write) is dropped, a broken line elsewhere is an error."""
    raw = [line.decode("utf-8") if isinstance(line, bytes) else line for line in lines]
    raw = [line for line in raw if line.strip()]
    records = []
    for number, line in enumerate(raw, start=1):
        try:
            record = _json.loads(line)
        except ValueError:
            if number == len(raw):
                break
            raise ServiceError(f"line {number} is not JSON") from None
        if not isinstance(record, dict):
            raise ServiceError(f"line {number} is not a JSON object")
        records.append(record)
    if not records:
        raise ServiceError("the trace holds no events")
    return records


def _is_harness_line(record: dict) -> bool:
    # `python -m gpu_harness eval --trace`: one EvalResult per line, with kind=evaluation and no seq.
    return record.get("kind") == "evaluation" and "seq" not in record and "scenarios" in record


def _harness_line_as_event(record: dict, seq: int) -> dict:
    result = {k: v for k, v in record.items() if k not in ("kind", "note", "summary")}
    payload = {"purpose": "tool", "kernel_source": record.get("kernel_source") or "",
               "kernel_path": record.get("kernel_path") or "", "result": result}
    if record.get("note"):
        payload["note"] = record["note"]
    return {"seq": seq, "kind": StepKind.EVALUATION, "ts": record.get("finished_at") or None, "payload": payload}


def trace_import(*, lines, name: str, user=None) -> Run:
    """Make a browsable run from a trace: this dashboard's export, an agent-loop trace, or a harness `--trace` file.

    Steps are stored in bulk (a trace may hold tens of thousands); questions, kernels and evaluations are
    derived from their events as if a worker had sent them. The run ends in the trace's last finished status,
    or `stopped` when the trace stops before one (an imported run never runs on).
    """
    records = _trace_records(lines)
    meta = next((r for r in records if r.get("type") == "run"), {})
    if any(_is_harness_line(r) for r in records):
        events = [_harness_line_as_event(r, seq) for seq, r in enumerate(r for r in records if _is_harness_line(r))]
    else:
        events = [r for r in records if "seq" in r and "kind" in r and "type" not in r]
    if not events:
        raise ServiceError("the trace holds no run events")
    config = next(
        (e["payload"].get("config") for e in events
         if e.get("kind") == StepKind.STATUS and isinstance(e.get("payload"), dict) and e["payload"].get("config")),
        None,
    ) or {}
    task_name = meta.get("task") or config.get("task") or next(
        (e["payload"]["result"].get("task") for e in events if e.get("kind") == StepKind.EVALUATION
         and isinstance(e.get("payload"), dict) and isinstance(e["payload"].get("result"), dict)), None)
    task = Task.objects.filter(name=task_name).first() if task_name else None
    if task is None:
        raise ServiceError(f"the trace's task {task_name!r} is not known here" if task_name else "the trace names no task")

    with transaction.atomic():
        run = Run.objects.create(
            task=task, model=str(meta.get("model") or config.get("model") or f"import:{name}")[:120],
            starting_kernel=config.get("starting_kernel") or task.starting_kernel, started_by=user,
            review_mode=meta.get("review_mode") if meta.get("review_mode") in ReviewMode.values else ReviewMode.AUTO,
        )
        steps, seen = [], {}
        for number, event in enumerate(events, start=1):
            seq, kind, payload = event.get("seq"), event.get("kind"), event.get("payload")
            if kind not in StepKind.values or isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
                raise ServiceError(f"event {number}: needs a known kind and a non-negative seq")
            if not isinstance(payload, dict):
                raise ServiceError(f"event {number} (seq {seq}): payload must be a JSON object")
            if seq in seen:
                if seen[seq] != (kind, _json.dumps(payload, sort_keys=True)):
                    raise ServiceError(f"seq {seq} appears twice with different events")
                continue
            seen[seq] = (kind, _json.dumps(payload, sort_keys=True))
            tokens_in, tokens_out, cost = _usage_of(event.get("usage"))
            steps.append(Step(run=run, seq=seq, kind=kind, payload=payload, created_at=_as_datetime(event.get("ts")),
                              tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost))
        steps.sort(key=lambda s: s.seq)
        for start in range(0, len(steps), _IMPORT_BATCH):
            Step.objects.bulk_create(steps[start:start + _IMPORT_BATCH])
        final_status = RunStatus.STOPPED
        for step in steps:
            if step.kind == StepKind.STATUS and step.payload.get("status") in FINISHED_STATUSES:
                final_status = step.payload["status"]
        Run.objects.filter(pk=run.pk).update(
            last_seq=steps[-1].seq, step_count=len(steps), status=final_status,
            tokens_in=sum(s.tokens_in for s in steps), tokens_out=sum(s.tokens_out for s in steps),
            cost_usd=sum((s.cost_usd for s in steps), Decimal(0)),
            started_at=steps[0].created_at, finished_at=steps[-1].created_at,
        )
        run.refresh_from_db()
        effect_kinds = [StepKind.QUESTION_PROPOSED, StepKind.QUESTION_DECIDED, StepKind.EVALUATION]
        for step in Step.objects.filter(run=run, kind__in=effect_kinds).order_by("seq"):
            try:
                apply_step_effects(run=run, step=step)
            except (KeyError, TypeError, ValueError, AttributeError) as malformed:
                raise ServiceError(f"seq {step.seq}: a {step.kind} event of the wrong shape: {malformed!r}") from None
        run.refresh_from_db()  # the effects moved its best speedups
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run


# ------------------------------------------------------------------------------------ worker event batches

from django.db import DataError, DatabaseError, connection  # noqa: E402

# Kinds whose events mean more than their row (a question, a kernel and its evaluation, a status change): these
# go one by one through worker_event_record. Every other kind is a row and a contribution to the run's totals.
# StepKind.values builds a new list on each use: a set, for the batch path's check of every event.
_STEP_KINDS = frozenset(StepKind.values)
_KINDS_WITH_EFFECTS = frozenset({StepKind.QUESTION_PROPOSED, StepKind.QUESTION_DECIDED, StepKind.EVALUATION,
                                 StepKind.STATUS})


@dataclass(frozen=True)
class EventOutcome:
    """What became of one event of a batch: stored (now or before, with the same content) or refused for good."""

    stored: bool
    error: str = ""
    # (run id, seq, kind) of a row this call inserted in bulk: the caller publishes it after the commit.
    # None for a re-delivery, a refusal, and an event stored through worker_event_record (published there).
    published_by_caller: tuple[int, int, str] | None = None


@dataclass
class _Candidate:
    index: int
    worker: WorkerHost
    event: dict
    run_id: int
    seq: int
    kind: str
    payload: dict
    when: datetime
    tokens_in: int
    tokens_out: int
    cost: Decimal


# The columns' limits (positive integer; decimal(10, 6)), checked here so that no database sees a value it
# would refuse or, on SQLite, store wrongly.
_INT_COLUMN_MAX = 2**31 - 1
_STEP_COST_LIMIT = Decimal(10_000)


def _bounded(value: int, name: str) -> int:
    if value > _INT_COLUMN_MAX:
        raise ServiceError(f"{name} must be at most {_INT_COLUMN_MAX}, not {value}")
    return value


def _candidate(index: int, worker: WorkerHost, event: dict) -> _Candidate:
    """Check one event's fields without the database; ServiceError says what is wrong, as worker_event_record would."""
    if not isinstance(event, dict):
        raise ServiceError("an event must be a JSON object")
    run_id = event.get("run_id")
    if isinstance(run_id, bool):
        raise ServiceError(f"run_id must be a server run's id, not {run_id!r}")
    try:
        run_id = int(run_id)
    except (TypeError, ValueError, OverflowError):
        raise ServiceError(f"run_id must be a server run's id, not {run_id!r}") from None
    seq = _bounded(_int_field(event.get("seq"), "seq"), "seq")
    kind = event.get("kind")
    if not isinstance(kind, str) or kind not in _STEP_KINDS:
        raise ServiceError(f"unknown step kind {kind!r}")
    payload = event.get("payload")
    if not isinstance(payload, dict):
        raise ServiceError("payload must be a JSON object")
    tokens_in, tokens_out, cost = _usage_of(event.get("usage"))
    _bounded(tokens_in, "usage.tokens_in")
    _bounded(tokens_out, "usage.tokens_out")
    if not cost.is_finite() or not 0 <= cost < _STEP_COST_LIMIT:
        raise ServiceError(f"usage.cost_usd must be a number from 0 to {_STEP_COST_LIMIT}, not {cost}")
    try:
        when = _as_datetime(event.get("ts"))
    except (ValueError, OverflowError):  # well-formed but impossible, e.g. month 13
        raise ServiceError(f"not a valid timestamp: {event.get('ts')!r}") from None
    return _Candidate(index, worker, event, run_id, seq, kind, payload, when, tokens_in, tokens_out, cost)


def _refusal_of_database_error(error: DatabaseError) -> str | None:
    """The reason to refuse an event for good when the database rejects its data; None for a passing fault."""
    if isinstance(error, DataError):  # e.g. PostgreSQL cannot hold a NUL character in JSON, or a number too big
        return f"the database cannot store this event: {str(error).strip().splitlines()[0][:200]}"
    return None


def _record_one(candidate: _Candidate) -> EventOutcome:
    """The one-event path, in a savepoint of the batch's transaction: a refusal rolls back only this event."""
    try:
        with transaction.atomic():
            worker_event_record(worker=candidate.worker, event=candidate.event)
    except ServiceError as refused:
        return EventOutcome(stored=False, error=str(refused))
    except DataError as rejected:
        return EventOutcome(stored=False, error=_refusal_of_database_error(rejected))
    return EventOutcome(stored=True)


def worker_events_record(*, items: list[tuple[WorkerHost, dict]]) -> list[EventOutcome]:
    """Store many `event` messages (from one or several worker sockets) in one transaction; one outcome each.

    Every promise of `worker_event_record` holds for each event: a (run, seq) is stored once, a re-delivery with
    the same content is stored-already, a different event under a used seq is refused, an event for a run the
    sender does not hold is refused, totals count each stored row once, and a refusal stores nothing of that
    event. What changes is the cost: the rows of events without effects are inserted in bulk, each run's totals
    move once, and the caller publishes one message per run (`published_by_caller`) after the commit. A fault of
    the database (unreachable, locked) raises DatabaseError for the whole batch, which then is not stored at all.
    """
    outcomes: list[EventOutcome | None] = [None] * len(items)
    candidates: list[_Candidate] = []
    for index, (worker, event) in enumerate(items):
        try:
            candidates.append(_candidate(index, worker, event))
        except ServiceError as refused:
            outcomes[index] = EventOutcome(stored=False, error=str(refused))
    with transaction.atomic():
        holders = dict(Run.objects.filter(pk__in={c.run_id for c in candidates}).values_list("pk", "worker_id"))
        held = []
        for c in candidates:
            if c.run_id not in holders:
                outcomes[c.index] = EventOutcome(stored=False, error=f"there is no run {c.run_id}")
            elif holders[c.run_id] != c.worker.pk:
                outcomes[c.index] = EventOutcome(stored=False, error=f"run {c.run_id} is not assigned to worker {c.worker.name}")
            else:
                held.append(c)
        fresh = _drop_repeats(held, outcomes)
        plain = [c for c in fresh if c.kind not in _KINDS_WITH_EFFECTS]
        _insert_plain(plain, outcomes)
        for c in fresh:
            if c.kind in _KINDS_WITH_EFFECTS:
                outcomes[c.index] = _record_one(c)
    return outcomes


def _drop_repeats(held: list[_Candidate], outcomes: list) -> list[_Candidate]:
    """Settle events whose (run, seq) is stored already or repeats within the batch; return the rest, in order."""
    if not held:
        return []
    # Keys first: the filter matches every stored (run, seq) of the batch's runs and seqs crossed, which under load
    # (runs at neighbouring seqs) is many rows that are no repeat; only true repeats have their payload read.
    wanted = {(c.run_id, c.seq) for c in held}
    repeats = wanted & set(Step.objects.filter(run_id__in={k[0] for k in wanted}, seq__in={k[1] for k in wanted})
                           .values_list("run_id", "seq"))
    stored = {}
    if repeats:
        stored = {
            (run_id, seq): (kind, payload)
            for run_id, seq, kind, payload in Step.objects.filter(
                run_id__in={k[0] for k in repeats}, seq__in={k[1] for k in repeats}
            ).values_list("run_id", "seq", "kind", "payload")
            if (run_id, seq) in repeats
        }
    first_in_batch: dict[tuple[int, int], _Candidate] = {}
    fresh = []
    for c in held:
        key = (c.run_id, c.seq)
        earlier = stored.get(key)
        if earlier is None and key in first_in_batch:
            earlier = (first_in_batch[key].kind, first_in_batch[key].payload)
        if earlier is not None:
            kind, payload = earlier
            if kind != c.kind or not _same_payload(payload, c.payload):
                outcomes[c.index] = EventOutcome(stored=False, error=f"run {c.run_id} already has a different step #{c.seq} ({kind})")
            else:
                outcomes[c.index] = EventOutcome(stored=True)
            continue
        first_in_batch[key] = c
        fresh.append(c)
    return fresh


def _insert_plain(plain: list[_Candidate], outcomes: list) -> None:
    """Insert the rows in one statement and move each run's totals once; on a clash fall back to one by one."""
    if not plain:
        return
    try:
        with transaction.atomic():
            _insert_steps(plain)
            _add_to_run_totals(plain)
    except (IntegrityError, DataError):
        # Another process stored one of these (run, seq) since we looked, or one row's data is refused by the
        # database: the one-event path sorts out which, each event in its own savepoint.
        for c in plain:
            outcomes[c.index] = _record_one(c)
        return
    for c in plain:
        outcomes[c.index] = EventOutcome(stored=True, published_by_caller=(c.run_id, c.seq, c.kind))


def _insert_steps(rows: list[_Candidate]) -> None:
    """INSERT the steps with one executemany.

    Plain SQL rather than bulk_create: the ORM compiles every field of every row through its generic machinery,
    which took most of the writer's time under load (profile in docs/benchmarks.md). The values are prepared by
    the fields themselves, so they are stored exactly as bulk_create would store them.
    """
    fields = {name: Step._meta.get_field(name) for name in ("payload", "created_at", "stored_at", "cost_usd")}
    now = fields["stored_at"].get_db_prep_save(timezone.now(), connection)
    values = [
        (c.run_id, c.seq, c.kind, fields["payload"].get_db_prep_save(c.payload, connection),
         fields["created_at"].get_db_prep_save(c.when, connection), now, c.tokens_in, c.tokens_out,
         fields["cost_usd"].get_db_prep_save(c.cost, connection))
        for c in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {Step._meta.db_table} (run_id, seq, kind, payload, created_at, stored_at, tokens_in, "
            f"tokens_out, cost_usd) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            values,
        )


def _add_to_run_totals(stored: list[_Candidate]) -> None:
    """Each run's totals move once per batch, in one statement for all runs.

    Plain SQL rather than a QuerySet.update per run: the ORM compiles each update anew, which cost more than
    inserting the batch's rows. The statement is the one step_record's update makes.
    """
    by_run: dict[int, list[_Candidate]] = {}
    for c in stored:
        by_run.setdefault(c.run_id, []).append(c)
    now = timezone.now()
    rows = [
        (max(c.seq for c in steps), len(steps), sum(c.tokens_in for c in steps), sum(c.tokens_out for c in steps),
         str(sum((c.cost for c in steps), Decimal(0))), now, run_id)
        for run_id, steps in by_run.items()
    ]
    greatest, cost = ("GREATEST", "%s") if connection.vendor == "postgresql" else ("MAX", "CAST(%s AS NUMERIC)")
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {Run._meta.db_table} SET last_seq = {greatest}(last_seq, %s), step_count = step_count + %s, "
            f"tokens_in = tokens_in + %s, tokens_out = tokens_out + %s, cost_usd = cost_usd + {cost}, "
            f"updated_at = %s WHERE id = %s",
            rows,
        )
