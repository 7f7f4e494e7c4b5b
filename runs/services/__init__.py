"""Every write to runs, steps, questions, kernels, evaluations and worker hosts.

Each function keeps one invariant that a plain `save()` would not, and says which. Views, consumers and
commands call these (`from runs.services import run_start`); nothing else writes these models. One module
per thing written:

    errors         ServiceError and its kinds
    tasks          task_upsert
    runs           queue, claim, status transitions, pause/resume/stop, a person's message, a worker's assignment
    steps          the one store of events (events_store): each (run, seq) once, totals and effects with it,
                   announced after the commit; step_record, one step without its effects
    step_effects   what a stored event implies (a question, a decision, a kernel and its evaluation, a status)
    questions      proposed, decided once by a reviewer, asked by a person
    kernels        kernel_record, kernel_release, evaluation_record (a verdict, stored once as the harness wrote it), whether
                   a stored verdict confirms a run's goal
    workers        worker hosts and their hashed tokens, connected or not, hello (its GPUs and the targets it
                   serves), the runs a host lost
    directives     instructions for the worker holding a run, kept until it acknowledges them
    worker_events  a worker's events (one or a batch): parsed, checked against who holds their runs, stored; the
                   events the server refused, kept on their run
    trace_import   a browsable run made from a trace file
    forks          a run that continues another from one of its steps, with its own decision at a question
    studies        runs of one task that differ in one setting, started together as one study
    suites         a suite read from its folder's manifest; a study over a suite (one study per problem)
    verify         "verify here": one full evaluation of a kernel's exact source on a worker of this site
    development    a released kernel's development run: its lab's trace, imported once and linked to the kernel
"""

from runs.services.directives import (
    directive_acknowledge,
    directive_mark_sent,
    directive_send,
    directive_wire_message,
    directives_pending_for,
    worker_group,
)
from runs.services.errors import (
    QuestionAlreadyDecided,
    QuestionClosed,
    ServiceError,
    StepConflict,
    UnconfirmedSuccess,
)
from runs.services.forks import fork_preview, run_fork
from runs.services.kernels import (
    evaluation_meets_goal,
    evaluation_record,
    kernel_record,
    kernel_release,
    run_goal_evaluation,
    safe_filename,
    sha256_text,
)
from runs.services.questions import (
    question_ask_human,
    question_by_ref,
    question_decide,
    question_propose,
    question_ref_of,
    question_review,
)
from runs.services.runs import run_assignment, run_claim, run_control, run_send_human_message, run_set_status, run_start
from runs.services.steps import EventOutcome, StepRecorded, events_store, step_record
from runs.services.studies import study_start
from runs.services.suites import suite_study_start, suite_sync
from runs.services.tasks import task_upsert
from runs.services.trace_import import trace_import
from runs.services.verify import kernel_verify, verification_pending
from runs.services.worker_events import event_refusal_record, worker_event_record, worker_events_record
from runs.services.workers import (
    HELD_STATUSES,
    NO_RUN,
    hash_token,
    hello_active_runs,
    hello_gpus,
    hello_targets,
    no_work_reason,
    worker_connected,
    worker_disconnected,
    worker_hello,
    worker_host_authenticate,
    worker_host_create,
    worker_host_is_revoked,
    worker_host_note_start,
    worker_host_revoke,
    worker_host_rotate_token,
    worker_runs_reconcile,
    worker_socket_state,
)

__all__ = [
    "HELD_STATUSES",
    "NO_RUN",
    "EventOutcome",
    "QuestionAlreadyDecided",
    "QuestionClosed",
    "ServiceError",
    "StepConflict",
    "StepRecorded",
    "UnconfirmedSuccess",
    "directive_acknowledge",
    "directive_mark_sent",
    "directive_send",
    "directive_wire_message",
    "directives_pending_for",
    "evaluation_meets_goal",
    "evaluation_record",
    "event_refusal_record",
    "events_store",
    "fork_preview",
    "hash_token",
    "run_fork",
    "study_start",
    "suite_study_start",
    "suite_sync",
    "hello_active_runs",
    "hello_gpus",
    "hello_targets",
    "kernel_record",
    "safe_filename",
    "kernel_release",
    "no_work_reason",
    "question_ask_human",
    "question_by_ref",
    "question_decide",
    "question_propose",
    "question_ref_of",
    "question_review",
    "run_assignment",
    "run_claim",
    "run_control",
    "run_send_human_message",
    "run_set_status",
    "run_goal_evaluation",
    "run_start",
    "sha256_text",
    "step_record",
    "task_upsert",
    "trace_import",
    "kernel_verify",
    "verification_pending",
    "worker_connected",
    "worker_socket_state",
    "worker_disconnected",
    "worker_event_record",
    "worker_events_record",
    "worker_group",
    "worker_hello",
    "worker_host_authenticate",
    "worker_host_create",
    "worker_host_is_revoked",
    "worker_host_note_start",
    "worker_host_revoke",
    "worker_host_rotate_token",
    "worker_runs_reconcile",
]
