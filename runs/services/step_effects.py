"""What a stored event means beyond its row: a question, a decision, a kernel and its evaluation, a status change.

EFFECTS is the one list of kinds with effects: the store (runs/services/steps.py), given it by its caller, applies
a kind's effect in the savepoint that inserts its step, so an event and its consequences are stored together or
not at all. Every other kind is a row and a contribution to its run's totals.
"""

import logging
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import cast

from django.contrib.auth import get_user_model

from gpu_harness import figures
from questionbank.models import BankQuestion, DecisionPoint, QuestionCategory
from runs.models import (
    FINISHED_STATUSES,
    Evaluation,
    Kernel,
    Question,
    QuestionSource,
    QuestionStatus,
    Run,
    RunStatus,
    Step,
    StepKind,
    Target,
)
from runs.services.errors import ServiceError, UnconfirmedSuccess
from runs.services.kernels import evaluation_record, kernel_record, run_goal_evaluation
from runs.services.questions import (
    REPORTED_STATUS,
    ReportedDecision,
    question_by_ref,
    question_decide,
    question_decision_reported,
    question_propose,
)
from runs.services.runs import run_set_status

_log = logging.getLogger(__name__)

Effect = Callable[[Run, Step], object]  # called in the savepoint that stores its step (runs/services/steps.py)


def _status_from_event(run: Run, step: Step) -> None:
    """A worker's status change. A final status carries why the run ended (`reason`, `detail`): the run keeps it
    as its status_reason, which its page shows in the header. `succeeded` is taken only when a stored evaluation
    of the run confirms the goal by the server's own reading; otherwise the event is refused (UnconfirmedSuccess)."""
    payload = step.payload
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
    limit = cast(int, Run._meta.get_field("status_reason").max_length)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _question_from_event(run: Run, step: Step) -> Question:
    """A proposed question. Its `question_ref` is unique within the run (docs/protocol.md 1.2: a reviewer's
    decision names it), so a second proposal under a used ref is refused; the same event re-sent never gets here
    (the store acknowledges it as stored before)."""
    payload = step.payload
    text = str(payload.get("text") or "").strip()
    if not text:
        raise ServiceError("a question_proposed event needs text")
    ref = payload.get("question_ref")
    if not ref:  # a decision names its question by it: without one, none could ever reach the agent
        raise ServiceError("a question_proposed needs a question_ref: a reviewer's decision names it")
    earlier = (
        Step.objects.filter(run=run, kind=StepKind.QUESTION_PROPOSED, payload__question_ref=ref)
        .exclude(pk=step.pk)
        .values_list("seq", flat=True)
        .first()
    )
    if earlier is not None:
        raise ServiceError(
            f"question_ref {ref!r} is already used in run {run.pk} (step #{earlier}): a question_ref is unique "
            "within its run"
        )
    bank_key = payload.get("bank_key")
    bank_entry = BankQuestion.objects.filter(key=bank_key).first() if bank_key else None
    decision_point = payload.get("decision_point") if payload.get("decision_point") in DecisionPoint.values else ""
    category = payload.get("category") if payload.get("category") in QuestionCategory.values else ""
    by = payload.get("by", "model")
    # "human": a person's own question, as a fork's operator writes it (docs/fork.md). In an imported run it is
    # the trace's word, kept as such (Question.trace_proposed_by): no person here wrote it.
    source = {"model": QuestionSource.SELF, "human": QuestionSource.HUMAN}.get(by, QuestionSource.BANK)
    limit = cast(int, Question._meta.get_field("trace_proposed_by").max_length)
    return question_propose(
        run=run,
        text=text,
        source=source,
        decision_point=decision_point,
        category=category,
        reason=str(payload.get("reason") or ""),
        bank_entry=bank_entry,
        step=step,
        trace_proposed_by=str(by)[:limit] if run.imported_from else "",
    )


def _decision_from_event(run: Run, step: Step) -> None:
    """The agent reports a decision: one the dashboard made (already stored: question_decision_reported), an
    auto/timeout approval, or a fork's own decision. A worker's reviewer is looked up as an account only for the
    last (`_fork_operator`). In an imported run it is the trace's claim: the reviewer it names is kept as the
    trace's text, never looked up as an account here (a trace could otherwise credit its decisions to any user of
    the site)."""
    payload = step.payload
    question = question_by_ref(run, str(payload.get("question_ref") or ""))
    if question is None:
        return
    action = payload.get("action")
    if action not in REPORTED_STATUS:
        return
    if question.status != QuestionStatus.PROPOSED:
        # The agent's report of a reviewer's decision stored here: one it did not act on gives way to what it did.
        reported = ReportedDecision(
            action=action,
            by=str(payload.get("by") or ""),
            text=str(payload.get("text") or ""),
            reviewer=str(payload.get("reviewer") or ""),
        )
        question_decision_reported(question, reported)
        return
    reviewer, named = None, ""
    if payload.get("by") == "reviewer" and payload.get("reviewer"):
        if run.imported_from:
            limit = cast(int, Question._meta.get_field("trace_reviewer").max_length)
            named = str(payload["reviewer"])[:limit]
        else:
            reviewer = _fork_operator(run, payload)
    question_decide(
        question=question,
        reviewer=reviewer,
        action="edit" if action == "replace" else action,
        text=payload.get("text"),
        replaced=action == "replace",
        trace_reviewer=named,
    )


def _fork_operator(run: Run, payload: dict):
    """The account a worker's reviewer decision on a question held undecided here is credited to: the operator
    whose own decision at a fork's question it is (docs/protocol.md 2.10: the fork's `decision.by`, on the event
    marked `fork_decision` that decides `q-<run>-fork`), the one decision the dashboard hands a worker without
    storing it first. Any other names no account (None): a reviewer's decision made here is stored before a worker
    hears of it, so a worker reporting one the dashboard holds undecided speaks for no one of this site."""
    fork_decision = (run.fork or {}).get("decision") or {}
    named = payload.get("reviewer")
    its_question = payload.get("question_ref") == f"q-{run.pk}-fork" and payload.get("fork_decision") is True
    if not its_question or not named or fork_decision.get("by") != named:
        return None
    return get_user_model().objects.filter(username=named).first()


def _evaluation_from_event(run: Run, step: Step) -> Evaluation:
    payload = step.payload
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
        if isinstance(scenario_set, list) and not all(isinstance(s, str) for s in scenario_set):
            raise ServiceError("an evaluation's scenario_set must be a set's name or a list of scenario ids (strings)")
        result["scenario_set"] = ",".join(scenario_set) if isinstance(scenario_set, list) else scenario_set
    return evaluation_record(kernel=kernel, result=result, run=run, step=step)


# kind -> what its event implies. A worker's events have all of these; an imported trace all but the status
# (the import settles the run's status from the trace's last one: IMPORT_EFFECTS).
EFFECTS: dict[str, Effect] = {
    StepKind.QUESTION_PROPOSED: _question_from_event,
    StepKind.QUESTION_DECIDED: _decision_from_event,
    StepKind.EVALUATION: _evaluation_from_event,
    StepKind.STATUS: _status_from_event,
}
IMPORT_EFFECTS = {kind: effect for kind, effect in EFFECTS.items() if kind != StepKind.STATUS}
