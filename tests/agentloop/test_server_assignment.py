"""The server's side of the assignment: the `assign` message carries the active bank (a reviewer's own question
included, a retired entry left out) and the figures of earlier runs, worked out here by hand.

Runs through the real worker consumer (WebsocketCommunicator against the ASGI application)."""

import pytest
from asgiref.sync import sync_to_async

from questionbank.bank import BankEntry
from questionbank.models import BankQuestion
from questionbank.services import bank_question_add, bank_sync
from runs.services import (
    evaluation_record,
    kernel_record,
    question_decide,
    question_propose,
    run_assignment,
    run_claim,
    step_record,
)
from tests.dashboard.helpers import connected_worker, make_worker
from tests.foundation.factories import make_run, make_task
from tests.payloads import payload
from tests.questionbank.test_selectors import timings

pytestmark = pytest.mark.django_db(transaction=True)

FILE_ENTRIES = [
    BankEntry("layer-reuse", "Which data is fetched twice?", "layer", ("plateau",)),
    BankEntry("limit-evidence", "What shows the limit you claimed?", "limit", ("claimed-limit",)),
    BankEntry("process-retired", "An entry the file has retired?", "process", ("start",), active=False),
]


def earlier_run_history(task, reviewer_key: str) -> None:
    """One finished run: starting kernel x1.0; the reviewer's question asked; x1.5; limit-evidence vetoed."""
    run = make_run(task)
    run_claim(worker=make_worker("history-host")[0])
    seq = iter(range(100))

    def evaluate(source, speedup):
        step = step_record(run=run, seq=next(seq), kind="evaluation", payload=payload("evaluation")).step
        kernel = kernel_record(source=source, run=run, task=task, language="cpp", step=step)
        evaluation_record(
            kernel=kernel,
            run=run,
            step=step,
            result={
                "status": "correct",
                "geomean": {"naive": {"speedup": speedup, "count": 3}},
                # the task's full set: only a figure measured on it is verified (gpu_harness.figures.headline_speedup)
                # with the harness's intervals, 1% either side: a rise to x1.5 is large beyond that noise
                "scenarios": [
                    {"id": sid, "correct": True, **timings({"naive": {"speedup": speedup}}, 0.01)}
                    for sid in task.scenario_ids
                ],
            },
        )

    def ask(key, action):
        step = step_record(run=run, seq=next(seq), kind="question_proposed", payload=payload("question_proposed")).step
        entry = BankQuestion.objects.get(key=key)
        question = question_propose(
            run=run, text=entry.text, source="self", decision_point="plateau", bank_entry=entry, step=step
        )
        question_decide(question=question, reviewer=None, action=action)

    evaluate(run.starting_kernel, 1.0)
    ask(reviewer_key, "approve")
    evaluate("// blocked", 1.5)
    ask("limit-evidence", "veto")


async def test_the_assignment_carries_the_active_bank_with_a_reviewers_question_and_its_figures():
    def setup():
        bank_sync(FILE_ENTRIES)
        reviewer = bank_question_add("What does each element of B cost you?", "layer", ["plateau", "claimed-limit"])
        task = make_task(goal_baseline="naive")
        earlier_run_history(task, reviewer.key)
        return reviewer, make_run(task)

    reviewer, run = await sync_to_async(setup)()
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assign = await socket.receive_json_from(timeout=5)
    await socket.disconnect()
    assert assign["type"] == "assign" and assign["run"]["id"] == run.pk
    bank = {e["key"]: e for e in assign["run"]["bank"]}
    assert set(bank) == {"layer-reuse", "limit-evidence", reviewer.key}  # the retired entry is left out
    assert bank[reviewer.key] == {
        "key": reviewer.key,
        "text": "What does each element of B cost you?",
        "category": "layer",
        "triggers": ["plateau", "claimed-limit"],
        "active": True,
    }
    stats = assign["run"]["question_stats"]
    # By hand: asked once, before x1.0 (the starting kernel), after x1.5: gain x1.5, and beyond the noise
    # 1.485 / 1.01 = 1.47 >= x1.2, a large gain.
    assert stats[reviewer.key] == {"asked": 1, "mean_gain": pytest.approx(1.5), "large_gain_rate": 1.0}
    # Vetoed only: never asked, so no gain to show.
    assert stats["limit-evidence"] == {"asked": 0, "mean_gain": None, "large_gain_rate": None}


@pytest.mark.django_db(transaction=False)
def test_an_assignment_goes_out_without_figures_when_they_cannot_be_computed(monkeypatch):
    run = make_run()

    def broken():
        raise RuntimeError("a row the figures cannot read")

    monkeypatch.setattr("runs.selectors_bank.selection_stats", broken)
    assignment = run_assignment(run)
    assert assignment["id"] == run.pk and "question_stats" not in assignment
    assert isinstance(assignment["bank"], list)


@pytest.mark.django_db(transaction=False)
def test_a_cpu_runs_assignment_leaves_out_the_questions_made_for_gpus_and_a_gpu_runs_keeps_them():
    warps = BankEntry("layer-warps", "What does each warp own?", "layer", ("plateau",), targets=("gpu",))
    bank_sync([*FILE_ENTRIES, warps])
    on_cpu = run_assignment(make_run(make_task("matmul_cpu", target="cpu")))
    assert [e["key"] for e in on_cpu["bank"]] == ["layer-reuse", "limit-evidence"]
    assert all("targets" not in e for e in on_cpu["bank"])  # for every target: the field is left out
    on_gpu = run_assignment(make_run(make_task("softmax_rows", target="cuda-sm90")))
    wired = {e["key"]: e for e in on_gpu["bank"]}
    assert set(wired) == {"layer-reuse", "limit-evidence", "layer-warps"}
    assert wired["layer-warps"]["targets"] == ["gpu"]
    # What the worker reads of it: the entry keeps its targets, so the agent's own filter holds them too.
    from agentloop.bank_source import bank_from_wire

    entries, problems = bank_from_wire(on_gpu["bank"])
    assert problems == [] and {e.key: e.targets for e in entries}["layer-warps"] == ("gpu",)
