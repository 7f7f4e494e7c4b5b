"""Writes to questions: proposed (by the agent or the bank), decided by a reviewer once, asked by a person."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from questionbank.models import BankQuestion
from runs import notify
from runs.events import publish_after_commit
from runs.models import DirectiveAction, Question, QuestionSource, QuestionStatus, ReviewMode, Run, Step, StepKind
from runs.services.directives import directive_send
from runs.services.errors import QuestionAlreadyDecided, QuestionClosed, ServiceError

# The longest text a person writes to the agent, one limit for each way in: a message to a running agent, the own
# question of a fork, a reviewer's edit or replacement of a proposed question (the worker socket's
# `question_decision` too, docs/protocol.md). The bank's own questions are held shorter (questionbank.bank). Here,
# not in runs.forms (which takes it from here), so that a service no form is in front of refuses the same length
# (a fork's own question, docs/fork.md).
PERSON_TEXT_MAX = 10_000


def shows_something(text: str | None) -> bool:
    """Whether `text` has a character a reader sees: not only whitespace, nor only the invisible format
    characters (zero-width spaces and joiners, a byte-order mark, a soft hyphen) that str.strip() keeps. An edit
    of nothing but those would ask the agent an empty question."""
    return any(char.isprintable() and not char.isspace() for char in text or "")


def question_propose(
    *,
    run: Run,
    text: str,
    source: str,
    decision_point: str = "",
    category: str = "",
    reason: str = "",
    bank_entry: BankQuestion | None = None,
    step: Step | None = None,
    trace_proposed_by: str = "",
) -> Question:
    """A question proposed in `run`. `trace_proposed_by`: who an imported trace says proposed it (its claim)."""
    if source not in QuestionSource.values:
        raise ServiceError(f"unknown question source {source!r}")
    if not text.strip():
        raise ServiceError("a question needs text")
    with transaction.atomic():
        question = Question.objects.create(
            run=run,
            text=text.strip(),
            source=source,
            decision_point=decision_point,
            category=category or (bank_entry.category if bank_entry else ""),
            reason=reason,
            bank_entry=bank_entry,
            step=step,
            trace_proposed_by=trace_proposed_by,
        )
        # A question the agent asked itself waits on a person unless the run approves them automatically: the
        # webhook and the review page's browser notification (`needs_review`) tell reviewers of those only. A
        # question of an imported trace waits on nobody: the run is a record, it never runs on.
        needs_review = source != QuestionSource.HUMAN and run.review_mode != ReviewMode.AUTO and not run.imported_from
        publish_after_commit(
            run.pk,
            {
                "type": "question.changed",
                "run_id": run.pk,
                "question_id": question.pk,
                "status": question.status,
                "needs_review": needs_review,
            },
            to_all_runs=True,
        )
        if needs_review:
            notify.notify_after_commit(notify.WAITING_REVIEW, run, question=question)
    return question


def question_decide(
    *,
    question: Question,
    reviewer,
    action: str,
    text: str | None = None,
    replaced: bool = False,
    trace_reviewer: str = "",
) -> Question:
    """A reviewer's decision on a proposed question: approve, edit (approve a new text) or veto. Once only.
    `replaced`: the edit's text is the reviewer's own question, written in place of the proposal.
    `trace_reviewer`: the reviewer an imported trace names (its claim; `reviewer` is then None)."""
    if action not in ("approve", "edit", "veto"):
        raise ServiceError(f"unknown decision {action!r}: use approve, edit or veto")
    if action == "edit" and not shows_something(text):
        raise ServiceError("an edit needs the new text")
    with transaction.atomic():
        question = Question.objects.select_for_update().get(pk=question.pk)
        if question.status != QuestionStatus.PROPOSED:
            raise QuestionAlreadyDecided(f"question {question.pk} was already {question.status}")
        if action == "edit":
            question.original_text, question.text = question.text, text.strip()
            question.replaced = replaced
        question.status = {
            "approve": QuestionStatus.APPROVED,
            "edit": QuestionStatus.EDITED,
            "veto": QuestionStatus.VETOED,
        }[action]
        question.reviewer, question.trace_reviewer = reviewer, trace_reviewer
        _store_decision(question)
    return question


# what a decision writes of a question (besides `decided_at`, set when it is stored)
DECISION_FIELDS = ["status", "text", "original_text", "replaced", "reviewer", "trace_reviewer"]


def _store_decision(question: Question, *more_fields: str) -> None:
    """Save a decision just made on `question` (inside its transaction), stamped now, and tell the pages."""
    question.decided_at = timezone.now()
    question.save(update_fields=[*DECISION_FIELDS, "decided_at", *more_fields])
    publish_after_commit(
        question.run_id,
        {"type": "question.changed", "run_id": question.run_id, "question_id": question.pk, "status": question.status},
        to_all_runs=True,
    )


# the status a decision the agent reports leaves its question in (a replacement is stored as an edit, `replaced`)
REPORTED_STATUS = {
    "approve": QuestionStatus.APPROVED,
    "edit": QuestionStatus.EDITED,
    "replace": QuestionStatus.EDITED,
    "veto": QuestionStatus.VETOED,
}


@dataclass(frozen=True)
class ReportedDecision:
    """What a `question_decided` event says the agent acted on: `action` (a key of REPORTED_STATUS), `by`
    (reviewer, auto or timeout), the `text` asked for an edit or a replacement, the `reviewer` it names."""

    action: str
    by: str
    text: str = ""
    reviewer: str = ""

    def words(self) -> str:
        """'veto by reviewer bob', 'approve by timeout'."""
        return f"{self.action} by {self.by}" + (f" {self.reviewer}" if self.reviewer else "")


def question_decision_reported(question: Question, reported: ReportedDecision) -> Question:
    """The agent reports the decision it acted on for `question`, which the dashboard holds as decided by a
    reviewer. The same decision (action, text, and the reviewer where it names one) changes nothing. Any other
    says the stored one never reached the agent: one made just before the worker's review timeout ran out, one the
    worker, offline then, never got, or one the worker mixed up. What the agent was told is the run's record, so
    the question becomes what it reports, credited to no reviewer (the dashboard sent no such decision, and a
    worker's word names no account here), and the reviewer's decision is kept as `unheard_decision`, saying it
    was not acted on. A question decided by no one (an earlier timeout, auto approval or report) stays as it is:
    the agent's first report is the record."""
    with transaction.atomic():
        question = Question.objects.select_for_update().get(pk=question.pk)  # (no join: PostgreSQL locks no outer join)
        by_nobody = not question.reviewer_id and not question.trace_reviewer
        if question.status == QuestionStatus.PROPOSED or by_nobody or _reported_as_stored(question, reported):
            return question
        question.unheard_decision = _decision_said(question, reported)
        _take_reported(question, reported)
        question.reviewer, question.trace_reviewer = None, ""
        _store_decision(question, "unheard_decision")
    return question


def _reported_as_stored(question: Question, reported: ReportedDecision) -> bool:
    """Whether the agent reports the reviewer's decision the dashboard stored (and sent). One by timeout or in
    auto mode is never a reviewer's."""
    if reported.by != "reviewer":
        return False
    who = question.reviewer.get_username() if question.reviewer else question.trace_reviewer
    edits = reported.action in ("edit", "replace")
    return (
        REPORTED_STATUS[reported.action] == question.status
        and question.replaced == (reported.action == "replace")
        and (not edits or reported.text.strip() == question.text)
        and reported.reviewer in ("", who)
    )


def _take_reported(question: Question, reported: ReportedDecision) -> None:
    """Make `question` what the agent reports it was asked: the proposal (approve, veto) or the reported text."""
    proposal = question.original_text or question.text
    if reported.action in ("edit", "replace"):
        if not shows_something(reported.text):
            raise ServiceError(f"a question_decided '{reported.action}' needs the text that was asked")
        question.text, question.original_text = reported.text.strip(), proposal
    else:
        question.text, question.original_text = proposal, ""
    question.status = REPORTED_STATUS[reported.action]
    question.replaced = reported.action == "replace"


def _decision_said(question: Question, reported: ReportedDecision) -> str:
    """A stored decision in words: '<vetoed | approved | edited | replaced> by <who> at <time> UTC[: <its text>]',
    and what the agent acted on instead: the proposal, by timeout, or the decision it reports."""
    verb = "replaced" if question.replaced else str(question.status)
    who = question.reviewer.get_username() if question.reviewer else (question.trace_reviewer or "a reviewer")
    when = f" at {question.decided_at:%Y-%m-%d %H:%M:%S} UTC" if question.decided_at else ""
    text = f": {question.text}" if question.status == QuestionStatus.EDITED else ""
    if (reported.action, reported.by) == ("approve", "timeout"):
        instead = "the agent had asked the proposal as it was (review timeout) before it came"
    else:
        instead = f"the agent reported another decision ({reported.words()}) and acted on that one, not this"
    return f"{verb} by {who}{when}{text}; {instead}"


def question_ask_human(*, run: Run, author, text: str) -> Question:
    """A question a reviewer writes themselves: approved as it is written."""
    with transaction.atomic():
        question = question_propose(run=run, text=text, source=QuestionSource.HUMAN)
        return question_decide(question=question, reviewer=author, action="approve")


def question_ref_of(question: Question) -> str:
    """The agent's name for a question (the `question_ref` of its `question_proposed` event), or ''."""
    if question.step is None:
        return ""
    return str((question.step.payload or {}).get("question_ref") or "")


def review_deadline(run: Run, question: Question) -> datetime | None:
    """When the agent approves `question` by timeout, or None where nothing does: the worker counts
    `review_timeout_s` from the proposal's time by its own clock (agentloop.worker.parking.waiting_review), which
    is the proposal step's `created_at`. A decision after it would be stored while the agent asked the proposal
    as it was: the record would say what the agent was never told."""
    if run.review_mode != ReviewMode.REVIEW_TIMEOUT or not run.review_timeout_s or question.step is None:
        return None
    return question.step.created_at + timedelta(seconds=run.review_timeout_s)


def question_review(*, question: Question, reviewer, decision: str, text: str | None = None) -> Question:
    """A reviewer decides a proposed question, and the run's agent is told (a `question_decision` directive).

    `replace` (the reviewer writes their own question) is stored like an edit: the proposal is kept as
    `original_text`; the agent is told it was a replacement. A question no reviewer can decide now is closed
    (QuestionClosed, `_closed_to_reviewers` says why), and nothing is stored or sent.
    """
    if decision not in ("approve", "edit", "veto", "replace"):
        raise ServiceError(f"unknown decision {decision!r}: use approve, edit, veto or replace")
    with transaction.atomic():
        # The run's row, locked, as run_set_status locks it: a run that finishes now does so before or after.
        run = Run.objects.select_for_update().get(pk=question.run_id)
        if closed := _closed_to_reviewers(run, question):
            raise QuestionClosed(f"question {question.pk} {closed}")
        decided = question_decide(
            question=question,
            reviewer=reviewer,
            action="edit" if decision == "replace" else decision,
            text=text,
            replaced=decision == "replace",
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


def _closed_to_reviewers(run: Run, question: Question) -> str:
    """Why no reviewer may decide `question` of `run` now (the rest of a sentence that begins with the
    question), or '' when one may. A decision stored then would record what the agent was never told."""
    if run.is_finished:  # its agent has stopped and no worker holds the run
        return f"is closed: run {run.pk} has finished ({run.status}) and nobody waits for a decision"
    if question.source == QuestionSource.HUMAN:  # a fork's own question: its author decided it
        return "is not a reviewer's to decide: it is a person's own question, asked as they wrote it"
    if run.review_mode == ReviewMode.AUTO:  # its agent approves what it asks itself, waiting for no directive
        return (
            f"is not a reviewer's to decide: run {run.pk} is in review mode auto, so its agent approves each "
            "question it asks itself"
        )
    if question.step is not None and not question_ref_of(question):  # (stored before such were refused)
        return "names no question_ref, so no decision can reach its agent: it is not decided here"
    deadline = review_deadline(run, question)
    if deadline is not None and timezone.now() >= deadline:
        return (
            f"is closed: its review timeout ({run.review_timeout_s} s) ran out at {deadline:%Y-%m-%d %H:%M:%S} UTC, "
            "so the agent asks it as proposed (approved by timeout)"
        )
    return ""


def question_by_ref(run: Run, ref: str) -> Question | None:
    return (
        Question.objects.filter(run=run, step__kind=StepKind.QUESTION_PROPOSED, step__payload__question_ref=ref)
        .select_related("step")
        .first()
    )
