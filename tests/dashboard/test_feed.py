"""The run page's feed API: pages by seq, resumes after a reconnect without gaps or repeats, filters, permalinks."""

import json

import pytest
from django.urls import reverse

from runs.services import trace_import
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


TOOL_RESULT = {
    "call_id": "c1",
    "name": "shell",
    "output": "",
    "is_error": False,
    "truncated_chars": 0,
    "duration_s": 0.5,
}


def big_run(steps: int):
    make_task()
    kinds = ["model_message", "tool_call", "tool_result", "note"]
    lines = []
    for seq in range(steps):
        kind = kinds[seq % len(kinds)]
        payload = {"text": f"line {seq}", "level": "info"}
        if kind == "model_message":
            payload = {
                "purpose": "turn",
                "model": "replay:big",
                "stop_reason": "tool_use",
                "content": [{"type": "text", "text": f"thought {seq}"}],
            }
        elif kind == "tool_result":
            payload = {**TOOL_RESULT, "call_id": f"c{seq - 1}", "output": f"line {seq}"}
        if seq == 0:  # every agent-loop trace starts with its configuration
            kind, payload = (
                "status",
                {"status": "running", "reason": "started", "config": {"task": "matmul_cpu", "model": "replay:big"}},
            )
        elif kind == "tool_call":
            payload = {"call_id": f"c{seq}", "name": "shell", "input": {"command": f"make run-{seq}"}}
        lines.append(
            json.dumps(
                {
                    "v": 1,
                    "run_id": "local-1",
                    "seq": seq,
                    "kind": kind,
                    "ts": "2026-11-30T12:00:00+00:00",
                    "payload": payload,
                    "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": None},
                }
            )
        )
    return trace_import(lines=lines, name="big.jsonl")


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def steps(client, run, **params):
    response = client.get(reverse("run_steps", args=[run.pk]), params)
    assert response.status_code == 200
    return response.json()


def test_a_12000_step_run_page_renders_no_steps_and_the_feed_opens_on_its_last_page(
    viewer, django_assert_max_num_queries
):
    run = big_run(12_000)
    # A fixed number, whatever the steps: 13 with the one that asks which released kernels an imported run developed,
    # 14 with the one that asks which review timeouts are in use (the badge's count leaves out timed-out questions)
    with django_assert_max_num_queries(14):
        page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "thought 11996" not in page  # the feed is fetched by the page, never rendered whole
    tail = steps(viewer, run)
    assert [s["seq"] for s in tail["steps"]] == list(range(11_800, 12_000))
    assert tail["has_older"] and not tail["has_newer"] and tail["run_last_seq"] == 11_999


def test_paging_back_then_resuming_after_the_last_held_seq_misses_and_repeats_nothing(viewer):
    run = big_run(1_000)
    held = [s["seq"] for s in steps(viewer, run, limit=100)["steps"]]
    while True:
        older = steps(viewer, run, before=held[0], limit=100)
        held = [s["seq"] for s in older["steps"]] + held
        if not older["has_older"]:
            break
    assert held == list(range(1_000))
    resumed = steps(viewer, run, after=499, limit=200)
    assert [s["seq"] for s in resumed["steps"]] == list(range(500, 700)) and resumed["has_newer"]


def test_the_kind_filter_and_text_search_apply_on_the_server(viewer):
    run = big_run(400)
    calls = steps(viewer, run, kind="tool_call", limit=500)["steps"]
    assert len(calls) == 100 and {s["kind"] for s in calls} == {"tool_call"}
    found = steps(viewer, run, q="run-201")["steps"]
    assert [s["seq"] for s in found] == [201] and found[0]["summary"] == "shell: make run-201"


def test_a_permalink_opens_around_its_step(viewer):
    run = big_run(1_000)
    around = steps(viewer, run, around=500, limit=100)
    seqs = [s["seq"] for s in around["steps"]]
    assert seqs == list(range(451, 551)) and around["has_older"] and around["has_newer"]


def test_a_huge_payload_is_left_out_of_the_page_and_served_on_its_own(viewer):
    from runs.services import step_record

    run = make_run()
    step_record(run=run, seq=0, kind="tool_result", payload={**TOOL_RESULT, "output": "x" * 50_000})
    listed = steps(viewer, run)["steps"][0]
    assert listed["payload"] is None and listed["payload_chars"] > 50_000 and "50000 chars" in listed["summary"]
    full = viewer.get(reverse("run_step", args=[run.pk, 0])).json()
    assert len(full["payload"]["output"]) == 50_000


def test_a_bad_paging_parameter_is_a_400_with_the_reason_not_a_crash(viewer):
    run = make_run()
    response = viewer.get(reverse("run_steps", args=[run.pk]), {"after": "x"})
    assert response.status_code == 400 and "after must be a whole number" in response.json()["error"]
    # Every value in range is taken, ends included (after=-1: from the start).
    for query in ({"after": -1}, {"before": 2**31 - 1}, {"around": 0}, {"limit": 1}, {"limit": 500}, {"kind": "note"}):
        assert viewer.get(reverse("run_steps", args=[run.pk]), query).status_code == 200, query


def test_the_chart_series_has_points_best_line_and_questions(viewer):
    from runs.services import run_claim, worker_events_record
    from tests.dashboard.helpers import evaluation_payload, event, make_worker, question_payload

    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    for seq, kind, payload in [
        (0, "evaluation", evaluation_payload(1.2)),
        (1, "question_proposed", question_payload("q")),
        (2, "evaluation", evaluation_payload(None, correct=False)),
        (3, "evaluation", evaluation_payload(1.9, source="// v3\n")),
    ]:
        [outcome] = worker_events_record(items=[(host, event(run.pk, seq, kind, payload))])
        assert outcome.stored, outcome.error
    chart = viewer.get(reverse("run_chart", args=[run.pk])).json()
    assert [(p["x"], p["status"]) for p in chart["points"]] == [(0, "correct"), (2, "incorrect"), (3, "correct")]
    assert [(b["x"], b["best"]) for b in chart["best"]] == [(0, 1.2), (2, 1.2), (3, 1.9)]
    assert chart["questions"][0]["x"] == 1 and chart["goal"] == 2.0
