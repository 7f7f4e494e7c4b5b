"""Forks on the server (runs/services/forks.py, runs/run_pages/views_forks.py): a fork of an imported run at a question
with each decision, what its assignment carries, the refusals (a step the parent lacks, a decision where there is
no question, a fork too large for the socket), the pages (the fork's parent, the parent's forks, "Fork here"
for operators only) and the compare page opening on parent and fork. Runs on SQLite and PostgreSQL alike."""

import io
import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from agentloop.fork import fork_problems
from agentloop.protocol import MESSAGE_MAX_BYTES
from questionbank.bank import BankEntry
from questionbank.services import bank_sync
from runs.model_options import model_options, model_refusal
from runs.models import Question, QuestionSource, Run
from runs.services import ServiceError, run_assignment, run_claim, run_fork, trace_import, worker_events_record
from runs.services.forks import fork_max_bytes
from tests.dashboard.helpers import (
    api_models_configured,  # noqa: F401 - the fixture
    event,
    make_user,
    make_worker,
)
from tests.foundation.factories import make_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("api_models_configured")]

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
EVENTS = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
QUESTION_SEQ = next(e["seq"] for e in EVENTS if e["kind"] == "question_proposed")
QUESTION_TEXT = EVENTS[QUESTION_SEQ]["payload"]["text"]


@pytest.fixture
def parent():
    make_task()
    return trace_import(lines=io.BytesIO(DEMO.read_bytes()), name="demo.jsonl")


@pytest.fixture
def olga(client):
    user = make_user("olga", "operator")
    client.force_login(user)
    return user


def test_a_fork_at_a_question_with_a_veto_is_queued_with_its_parents_settings_and_cut(parent, olga):
    fork = run_fork(parent=parent, step_seq=QUESTION_SEQ, model="claude-sonnet-4-6", action="veto", user=olga)
    fork.refresh_from_db()
    assert (fork.parent, fork.fork_seq, fork.status) == (parent, QUESTION_SEQ, "queued")
    assert (fork.task, fork.review_mode) == (parent.task, parent.review_mode)
    recorded = EVENTS[0]["payload"]["config"]["goal"]  # the goal the parent's agent pursued, not its task's
    # The import keeps it on the parent too (issue 34, item 2), and the fork takes it.
    assert (
        fork.goal
        == (recorded["baseline"], recorded["speedup"])
        == parent.goal
        != (parent.task.goal_baseline, parent.task.goal_speedup)
    )
    assert fork.model == "claude-sonnet-4-6" and fork.starting_kernel == parent.starting_kernel
    assert fork.fork["decision"] == {"action": "veto", "by": "olga"}
    assert fork.fork["played"] == {"turn": 3, "select_question": 0}
    assert fork.fork["question"]["text"] == QUESTION_TEXT
    assert QUESTION_TEXT not in json.dumps(fork.fork["conversation"])
    assert fork_problems(fork.fork) == []
    host, _ = make_worker()
    claimed = run_claim(worker=host)
    assert claimed == fork
    assignment = run_assignment(claimed)
    assert assignment["fork"] == fork.fork and assignment["starting_kernel_name"] == "kernel.cpp"
    assert len(json.dumps({"type": "assign", "v": 1, "run": assignment})) < MESSAGE_MAX_BYTES


def test_a_fork_asks_a_bank_question_or_the_operators_own_and_the_server_stores_who_chose_it(parent, olga):
    bank_sync([BankEntry("layer-reuse", "Which data is fetched twice?", "layer", ("plateau",))])
    by_bank = run_fork(parent=parent, step_seq=QUESTION_SEQ, action="bank", bank_key="layer-reuse", user=olga)
    assert by_bank.fork["decision"]["text"] == "Which data is fetched twice?"
    assert by_bank.model == parent.model  # the parent's model unless the operator picks another
    written = run_fork(parent=parent, step_seq=QUESTION_SEQ + 1, action="write", text=" Why not tile? ", user=olga)
    assert written.fork_seq == QUESTION_SEQ + 1 and written.fork["decision"]["text"] == "Why not tile?"
    # The worker reports the fork's question as a person's (by "human"): stored as one.
    host, _ = make_worker()
    run = run_claim(worker=host)
    proposed = {"question_ref": "q-x-fork", "text": "Which data is fetched twice?", "by": "human", "attempt": 0}
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "question_proposed", proposed))])
    assert outcome.stored, outcome.error
    assert Question.objects.get(run=run).source == QuestionSource.HUMAN


def test_forks_that_cannot_be_made_are_refused_with_the_reason(parent, olga):
    with pytest.raises(ServiceError, match="no step #999"):
        run_fork(parent=parent, step_seq=999, action="", user=olga)
    with pytest.raises(ServiceError, match="is not a question"):
        run_fork(parent=parent, step_seq=3, action="veto", user=olga)
    with pytest.raises(ServiceError, match="veto it, pick a bank question, or write one"):
        run_fork(parent=parent, step_seq=QUESTION_SEQ, action="", user=olga)
    with pytest.raises(ServiceError, match="no active question"):
        run_fork(parent=parent, step_seq=QUESTION_SEQ, action="bank", bank_key="nope", user=olga)
    with pytest.raises(ServiceError, match="pick the bank question the fork asks instead"):
        run_fork(parent=parent, step_seq=QUESTION_SEQ, action="bank", bank_key="", user=olga)
    with pytest.raises(ServiceError, match="write the question"):
        run_fork(parent=parent, step_seq=QUESTION_SEQ, action="write", text="  ", user=olga)
    assert Run.objects.filter(parent=parent).count() == 0


def test_a_fork_of_a_cpu_run_neither_lists_nor_takes_a_question_made_for_gpus(parent, olga, client):
    bank_sync(
        [
            BankEntry("layer-reuse", "Which data is fetched twice?", "layer", ("plateau",)),
            BankEntry("layer-warps", "What does each warp own?", "layer", ("plateau",), targets=("gpu",)),
        ]
    )
    assert parent.task.target == "cpu"
    page = client.get(reverse("run_fork", args=[parent.pk]) + f"?seq={QUESTION_SEQ}").content.decode()
    assert "layer-reuse" in page and "layer-warps" not in page and "each warp" not in page
    with pytest.raises(ServiceError, match="no active question 'layer-warps' for a cpu task"):
        run_fork(parent=parent, step_seq=QUESTION_SEQ, action="bank", bank_key="layer-warps", user=olga)
    response = client.post(
        reverse("run_fork", args=[parent.pk]),
        {"seq": QUESTION_SEQ, "model": parent.model, "decision": "bank", "bank_key": "layer-warps"},
    )
    assert response.status_code == 400 and Run.objects.filter(parent=parent).count() == 0


@pytest.mark.parametrize("char,count", [("x", 1.0), ("é", 0.25)])  # é: under the limit in UTF-8, 6 bytes escaped
def test_a_fork_over_what_the_socket_carries_is_refused_before_it_is_stored(olga, char, count):
    task = make_task()
    huge = char * int(fork_max_bytes(task.starting_kernel) * count + 10)
    lines = [
        dict(EVENTS[0], run_id="big"),
        dict(EVENTS[1], run_id="big", seq=1, kind="human_message", payload={"text": huge}),
    ]
    parent = trace_import(lines=io.BytesIO("\n".join(json.dumps(e) for e in lines).encode()), name="big.jsonl")
    with pytest.raises(ServiceError, match="over the .* bytes the worker socket carries"):
        run_fork(parent=parent, step_seq=1, user=olga)
    assert run_fork(parent=parent, step_seq=0, user=olga).fork_seq == 0  # before the huge message: fine


def test_the_pages_show_fork_and_parent_and_fork_here_only_for_operators(parent, olga, client):
    page = client.get(reverse("run_fork", args=[parent.pk]) + f"?seq={QUESTION_SEQ}")
    assert page.status_code == 200
    assert QUESTION_TEXT in page.content.decode() and 'name="decision"' in page.content.decode()
    response = client.post(
        reverse("run_fork", args=[parent.pk]), {"seq": QUESTION_SEQ, "model": parent.model, "decision": "veto"}
    )
    fork = Run.objects.get(parent=parent)
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[fork.pk])
    fork_page = client.get(reverse("run_detail", args=[fork.pk])).content.decode()
    assert f"run {parent.pk}</a> at step #{QUESTION_SEQ}" in fork_page and "vetoed by olga" in fork_page
    assert f"?runs={parent.pk},{fork.pk}" in fork_page
    parent_page = client.get(reverse("run_detail", args=[parent.pk])).content.decode()
    assert 'id="run-forks"' in parent_page and f"run {fork.pk}</a>" in parent_page
    assert "data-fork-url=" in parent_page
    # compare of the fork alone opens on its parent and itself
    compared = client.get(reverse("run_compare") + f"?runs={fork.pk}&format=json").json()
    assert [row["run_id"] for row in compared["summary"]] == [parent.pk, fork.pk]
    viewer = make_user("vera", "viewer")
    client.force_login(viewer)
    assert "data-fork-url=" not in client.get(reverse("run_detail", args=[parent.pk])).content.decode()
    assert client.get(reverse("run_fork", args=[parent.pk]) + "?seq=1").status_code == 403


def test_the_fork_page_says_what_is_wrong_with_a_bad_step(parent, olga, client):
    assert client.get(reverse("run_fork", args=[parent.pk])).status_code == 400
    missing = client.get(reverse("run_fork", args=[parent.pk]) + "?seq=500")
    assert missing.status_code == 400 and "no step #500" in missing.content.decode()
    no_text = client.post(
        reverse("run_fork", args=[parent.pk]), {"seq": QUESTION_SEQ, "model": "m", "decision": "write"}
    )
    assert no_text.status_code == 400 and "write the question" in no_text.content.decode()


def test_compare_of_a_parent_alone_opens_on_it_and_its_forks(parent, olga, client):
    forks = [run_fork(parent=parent, step_seq=seq, user=olga) for seq in (3, 5)]
    compared = client.get(reverse("run_compare") + f"?runs={parent.pk}&format=json").json()
    assert [row["run_id"] for row in compared["summary"]] == [parent.pk, *(f.pk for f in forks)]
    lonely = make_task(name="other_task")
    from tests.foundation.factories import make_run

    alone = make_run(task=lonely)
    assert client.get(reverse("run_compare") + f"?runs={alone.pk}").status_code == 400


def test_the_fork_form_offers_a_model_that_can_run_here_when_the_parents_cannot_and_says_why(
    parent, olga, client, monkeypatch
):
    # The recorded run's own model, taken as an Anthropic model id: without a key nothing here runs it.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert parent.model == "scripted-demo"
    html = client.get(reverse("run_fork", args=[parent.pk]) + f"?seq={QUESTION_SEQ}").content.decode()
    offered = re.search(r'<input[^>]*name="model"[^>]*value="([^"]*)"', html).group(1)
    assert offered != "scripted-demo" and model_refusal(offered, model_options()) is None
    assert "The parent's model is not offered: scripted-demo cannot run here" in html


def test_the_fork_pages_step_line_names_the_steps_kind_and_its_feed_line(parent, olga, client):
    """Audit 15: "The step" read "#16 ·" with nothing after the dot (Step.kind has no choices to display)."""
    html = client.get(reverse("run_fork", args=[parent.pk]) + f"?seq={QUESTION_SEQ}").content.decode()
    line = unescape(re.search(r'<p id="fork-step-line">([^<]*)</p>', html)[1])
    assert line.startswith(f"#{QUESTION_SEQ} · Question proposed: ") and QUESTION_TEXT[:40] in line


def test_the_fork_pages_step_line_writes_an_imported_goal_met_as_the_traces_claim(parent, olga, client):
    """The step line wrote the sender's word, "GOAL MET", as the feed no longer does (honesty audit)."""
    seq = next(e["seq"] for e in EVENTS if e["kind"] == "evaluation" and e["payload"].get("goal_met"))
    html = client.get(reverse("run_fork", args=[parent.pk]) + f"?seq={seq}").content.decode()
    line = unescape(re.search(r'<p id="fork-step-line">([^<]*)</p>', html)[1])
    assert line.startswith(f"#{seq} · Evaluation: ") and "GOAL MET" not in line
    assert "imported" in line and "goal met: the trace's claim" in line


@pytest.mark.parametrize(
    "field,value,says",
    [
        ("bank_key", "nope", "nope is not an active bank question offered for this fork"),
        ("text", "x" * 10_001, "Ensure this value has at most 10000 characters (it has 10001)."),
    ],
)
def test_the_fork_page_says_why_it_refuses_a_bank_key_or_a_question_text(parent, olga, client, field, value, says):
    """The page refused these with a 400 and no reason: the form's errors on the bank question and the text were
    never written out."""
    decision = "bank" if field == "bank_key" else "write"
    response = client.post(
        reverse("run_fork", args=[parent.pk]),
        {"seq": QUESTION_SEQ, "model": parent.model, "decision": decision, field: value},
    )
    assert response.status_code == 400 and Run.objects.filter(parent=parent).count() == 0
    assert says in unescape(response.content.decode())


def test_the_fork_page_refuses_a_decision_at_a_step_that_is_not_a_question(parent, olga, client):
    """The page dropped the decision there and queued the fork as though none had been given."""
    response = client.post(reverse("run_fork", args=[parent.pk]), {"seq": 3, "model": parent.model, "decision": "veto"})
    assert response.status_code == 400 and Run.objects.filter(parent=parent).count() == 0
    assert "step #3 is not a question: there is no decision to take there" in unescape(response.content.decode())
    queued = client.post(reverse("run_fork", args=[parent.pk]), {"seq": 3, "model": parent.model})
    assert queued.status_code == 302 and Run.objects.filter(parent=parent).count() == 1
