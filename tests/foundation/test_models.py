"""The data model's promises, checked on whichever database the run uses (CI: SQLite, then PostgreSQL)."""

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from questionbank.models import BankQuestion
from runs.models import Evaluation, Kernel, Question, Run, Step, Task
from runs.services import (
    ServiceError,
    StepConflict,
    kernel_record,
    kernel_release,
    sha256_text,
    step_record,
)
from tests.foundation.factories import make_run, make_task
from tests.payloads import payload

pytestmark = pytest.mark.django_db

USAGE = payload("usage", tokens_in=10, tokens_out=5)


def test_a_step_delivered_twice_is_stored_once():
    run = make_run()
    first = step_record(run=run, seq=0, kind="usage", payload=USAGE, tokens_in=10, tokens_out=5)
    again = step_record(run=run, seq=0, kind="usage", payload=USAGE, tokens_in=10, tokens_out=5)
    assert first.created and not again.created
    assert again.step.pk == first.step.pk
    assert Step.objects.filter(run=run).count() == 1
    run.refresh_from_db()
    # The totals counted the event once, not twice.
    assert (run.step_count, run.tokens_in, run.tokens_out, run.last_seq) == (1, 10, 5, 0)


def test_a_different_event_under_a_used_sequence_number_is_refused_and_the_first_kept():
    run = make_run()
    step_record(run=run, seq=3, kind="tool_call", payload=payload("tool_call", input={"command": "ls"}))
    with pytest.raises(StepConflict):
        step_record(run=run, seq=3, kind="tool_call", payload=payload("tool_call", input={"command": "rm -rf /"}))
    assert Step.objects.get(run=run, seq=3).payload["input"]["command"] == "ls"


def test_steps_out_of_order_keep_the_highest_sequence_number():
    run = make_run()
    for seq in (2, 0, 5, 1):
        spent = payload("usage", cost_usd=0.25, tokens_in=seq)
        step_record(run=run, seq=seq, kind="usage", payload=spent, tokens_in=seq, cost_usd="0.25")
    run.refresh_from_db()
    assert run.last_seq == 5 and run.step_count == 4
    assert run.cost_usd == Decimal("1.000000")


@pytest.mark.parametrize("seq", [-1, "7", 1.5, True])
def test_a_bad_sequence_number_is_refused_with_a_clear_error(seq):
    run = make_run()
    with pytest.raises(ServiceError, match="seq must be a non-negative integer"):
        step_record(run=run, seq=seq, kind="note", payload={})


def test_an_unknown_step_kind_is_refused():
    with pytest.raises(ServiceError, match="unknown step kind"):
        step_record(run=make_run(), seq=0, kind="telepathy", payload={})


def test_the_database_itself_refuses_a_second_row_for_one_run_and_seq():
    run = make_run()
    Step.objects.create(run=run, seq=1, kind="note", payload={}, created_at="2026-11-30T10:00:00Z")
    with pytest.raises(IntegrityError), transaction.atomic():
        Step.objects.create(run=run, seq=1, kind="note", payload={}, created_at="2026-11-30T10:00:01Z")


@pytest.mark.parametrize(
    "model, fields, constraint",
    [
        (Run, {"status": "sleeping"}, "run_status_valid"),
        (Run, {"best_speedup": -1.0}, "run_best_speedup_nonnegative"),
        (Task, {"goal_speedup": 0}, "task_goal_speedup_positive"),
        (Task, {"target": "tpu"}, "task_target_valid"),
    ],
)
def test_check_constraints_hold_in_the_database(model, fields, constraint):
    run = make_run()
    target = run if model is Run else run.task
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.filter(pk=target.pk).update(**fields)


def test_a_step_kind_is_the_parsers_to_check_so_a_new_kind_needs_no_migration():
    # The kinds are agentloop/protocol.py's: the event parser refuses any other (tests/dashboard/test_event_parser.py),
    # and the database holds no list of its own that a new kind would have to be migrated into.
    run = make_run()
    Step.objects.create(run=run, seq=0, kind="a_kind_of_tomorrow", payload={}, created_at="2026-11-30T10:00:00Z")
    with pytest.raises(ServiceError, match="unknown step kind"):
        step_record(run=run, seq=1, kind="a_kind_of_tomorrow", payload={})


def test_a_decided_question_must_record_when():
    run = make_run()
    question = Question.objects.create(run=run, source="self", text="Which layer have you not looked at?")
    with pytest.raises(IntegrityError), transaction.atomic():
        Question.objects.filter(pk=question.pk).update(status="approved")


def test_a_bank_question_with_an_unknown_category_is_refused():
    with pytest.raises(IntegrityError), transaction.atomic():
        BankQuestion.objects.create(key="q-x", text="?", category="gossip")


def test_kernel_hash_must_be_a_sha256_and_a_released_kernel_needs_a_unique_name():
    with pytest.raises(IntegrityError), transaction.atomic():
        Kernel.objects.create(source="x", sha256="not-a-hash")
    with pytest.raises(IntegrityError), transaction.atomic():
        Kernel.objects.create(source="x", sha256=sha256_text("x"), released=True)
    first = kernel_record(source="a")
    second = kernel_record(source="b")
    kernel_release(kernel=first, name="attention-fwd-sm90")
    with pytest.raises(IntegrityError), transaction.atomic():
        Kernel.objects.filter(pk=second.pk).update(released=True, release_name="attention-fwd-sm90")


def test_evaluation_status_outside_the_verdicts_is_refused():
    kernel = kernel_record(source="k")
    with pytest.raises(IntegrityError), transaction.atomic():
        Evaluation.objects.create(kernel=kernel, status="fast")


def test_deleting_a_run_removes_its_steps_and_questions_but_keeps_its_kernels():
    run = make_run()
    step = step_record(run=run, seq=0, kind="note", payload=payload("note")).step
    Question.objects.create(
        run=run, step=step, source="human", text="?", status="approved", decided_at="2026-11-30T10:00:00Z"
    )
    kernel = kernel_record(source="k", run=run, step=step)
    run.delete()
    assert not Step.objects.exists() and not Question.objects.exists()
    kernel.refresh_from_db()
    assert kernel.run_id is None


def test_a_task_with_runs_cannot_be_deleted():
    from django.db.models import ProtectedError

    run = make_run()
    with pytest.raises(ProtectedError):
        run.task.delete()


def test_make_task_is_idempotent_by_name():
    make_task(goal_speedup=2.0)
    make_task(goal_speedup=3.0)
    assert Task.objects.get(name="matmul_cpu").goal_speedup == 3.0
