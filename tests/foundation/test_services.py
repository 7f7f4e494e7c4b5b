"""The write services: status transitions, questions, evaluations, worker tokens."""

import pytest

from runs.models import Evaluation, EvaluationStatus, QuestionStatus, WorkerHost
from runs.selectors import questions_pending_count, run_list
from runs.services import (
    QuestionAlreadyDecided,
    ServiceError,
    evaluation_record,
    kernel_record,
    question_ask_human,
    question_decide,
    question_propose,
    run_claim,
    run_set_status,
    worker_hello,
    worker_host_authenticate,
    worker_host_create,
    worker_host_revoke,
)
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def serving(host, *targets):
    """The host as after a hello that announced `targets`."""
    return worker_hello(worker=host, gpus=host.gpus, targets=list(targets))


def test_a_queued_run_is_claimed_by_one_worker_once():
    run = make_run()
    first_host = serving(worker_host_create(name="gpu-1")[0], "cpu")
    second_host = serving(worker_host_create(name="gpu-2")[0], "cpu")
    claimed = run_claim(worker=first_host)
    assert claimed.pk == run.pk and claimed.status == "running" and claimed.worker == first_host
    assert run_claim(worker=second_host) is None


def test_a_finished_run_stays_finished():
    run = make_run()
    run_set_status(run=run, status="running")
    run = run_set_status(run=run, status="succeeded")
    assert run.finished_at is not None
    with pytest.raises(ServiceError, match="cannot become running"):
        run_set_status(run=run, status="running")


def test_a_reviewer_decides_a_proposed_question_once():
    from django.contrib.auth import get_user_model

    reviewer = get_user_model().objects.create_user("rev", password="pw-123456789")
    run = make_run()
    question = question_propose(
        run=run, text="Which measurement proves that limit?", source="self", decision_point="claimed-limit"
    )
    assert questions_pending_count() == 1
    edited = question_decide(question=question, reviewer=reviewer, action="edit", text="What does the profiler say?")
    assert edited.status == QuestionStatus.EDITED
    assert edited.original_text == "Which measurement proves that limit?"
    assert edited.decided_at is not None and questions_pending_count() == 0
    with pytest.raises(QuestionAlreadyDecided):
        question_decide(question=question, reviewer=reviewer, action="veto")


def test_a_human_question_is_approved_as_written():
    from django.contrib.auth import get_user_model

    author = get_user_model().objects.create_user("op", password="pw-123456789")
    question = question_ask_human(run=make_run(), author=author, text="  Have you read the SASS?  ")
    assert (question.status, question.source, question.text) == ("approved", "human", "Have you read the SASS?")


def test_a_correct_evaluation_raises_the_runs_best_speedup_and_an_incorrect_one_does_not():
    run = make_run(task=make_task(scenario_ids=["m512"]))  # the verdicts below cover the full set
    kernel = kernel_record(source="k1", run=run, language="cpp")
    scenario = {
        "id": "m512",
        "params": {"m": 512},
        "correct": True,
        "error": 1e-6,
        "time_ms": 2.0,
        "tflops": 0.1,
        "speedup": {"naive": 3.0},
    }
    evaluation_record(
        kernel=kernel,
        run=run,
        result={"status": "correct", "geomean": {"naive": {"speedup": 3.0, "count": 1}}, "scenarios": [scenario]},
    )
    evaluation_record(
        kernel=kernel,
        run=run,
        result={
            "status": "incorrect",
            "geomean": {"naive": {"speedup": 9.0, "count": 1}},
            "scenarios": [dict(scenario, correct=False)],
        },
    )
    run.refresh_from_db()
    assert run.best_speedup == 3.0 and run.best_speedups == {"naive": 3.0}
    assert sum(len(e.verdict["scenarios"]) for e in Evaluation.objects.filter(run=run)) == 2


def test_an_evaluation_with_an_unknown_status_stores_nothing():
    kernel = kernel_record(source="k")
    with pytest.raises(ServiceError):
        evaluation_record(kernel=kernel, result={"status": "blazing", "scenarios": []})
    assert not kernel.evaluations.exists()


def test_an_evaluation_whose_scenarios_fail_leaves_no_half_written_state():
    kernel = kernel_record(source="k")
    duplicate = {"id": "same", "correct": True}
    # refused for good (a ServiceError), where the scenario rows' unique constraint once raised an IntegrityError,
    # which the event store took for a clash of its own and a worker would have sent again and again
    with pytest.raises(ServiceError, match="'same' is in the verdict twice"):
        evaluation_record(
            kernel=kernel, result={"status": EvaluationStatus.CORRECT, "scenarios": [duplicate, duplicate]}
        )
    assert not kernel.evaluations.exists()


def test_worker_tokens_are_stored_hashed_and_revocable():
    host, token = worker_host_create(name="gpu-node-1", gpus=["NVIDIA H200"])
    stored = WorkerHost.objects.get(pk=host.pk)
    assert token not in (stored.token_hash, stored.token_prefix) and len(stored.token_hash) == 64
    assert worker_host_authenticate(token) == host
    assert worker_host_authenticate(token + "x") is None
    assert worker_host_authenticate("") is None
    worker_host_revoke(host=host)
    assert worker_host_authenticate(token) is None


def test_the_run_list_counts_pending_questions():
    run = make_run()
    question_propose(run=run, text="What would the roofline say?", source="self")
    question_propose(run=run, text="Which layer next?", source="bank")
    assert run_list().get(pk=run.pk).pending_questions == 2


def test_a_run_takes_its_tasks_goal_unless_it_names_its_own():
    from runs.services import run_assignment

    task_goal_run = make_run(task=make_task(scenario_ids=["m512"]))  # the verdict below covers the full set
    own_goal_run = make_run(task=task_goal_run.task, goal_baseline="numpy", goal_speedup=0.7)
    assert task_goal_run.goal == ("naive", 2.0)
    assert run_assignment(own_goal_run)["goal"] == {"baseline": "numpy", "speedup": 0.7}
    kernel = kernel_record(source="k", run=own_goal_run, language="cpp")
    evaluation_record(
        kernel=kernel,
        run=own_goal_run,
        result={
            "status": "correct",
            "geomean": {"naive": {"speedup": 3.0, "count": 1}, "numpy": {"speedup": 0.5, "count": 1}},
            "scenarios": [{"id": "m512", "correct": True}],
        },
    )
    own_goal_run.refresh_from_db()
    assert own_goal_run.best_speedup == 0.5  # measured against the run's own baseline


def test_rotating_a_token_retires_the_old_one_and_lifts_a_revocation():
    from runs.services import worker_host_rotate_token

    host, old = worker_host_create(name="local")
    worker_host_revoke(host=host)
    _, new = worker_host_rotate_token(host=host)
    assert worker_host_authenticate(old) is None
    assert worker_host_authenticate(new) == host
