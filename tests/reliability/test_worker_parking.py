"""A worker's slot and its acknowledged directives, against the real server (daphne) and the real worker
(`python -m agentloop worker`, one GPU slot): the replay demo in review mode waits for its reviewer without holding
the slot (docs/protocol.md 2.4), and a directive the worker acknowledged survives a SIGKILL of the worker."""

import urllib.parse
import urllib.request
from http.cookies import SimpleCookie

import pytest

from tests.reliability.live import kill, wait_until
from tests.reliability.test_worker_restart import assert_finished_as_the_replay_allows, run_status, trace_events

pytestmark = pytest.mark.timeout(600)
FINISHED = ("succeeded", "failed", "stopped")


def proposed_question(site, run_id):
    rows = site.query("select id from runs_question where run_id = ? and status = 'proposed'", (run_id,))
    return rows[0][0] if rows else None


def post_as(site, port, username: str, role: str, path: str, form: dict) -> None:
    """A form posted through the server as a signed-in user does, CSRF token and all: the server process that
    stores the directive tells the worker's socket at once (one stored by another process, with the in-memory
    channel layer, would reach the worker only at its next hello)."""
    cookie = f"sessionid={site.session_for(username, role)}"
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(
        urllib.request.Request(f"{base}/review/", headers={"Cookie": cookie}), timeout=30
    ) as page:
        csrf = SimpleCookie(page.headers["Set-Cookie"])["csrftoken"].value
    request = urllib.request.Request(
        f"{base}{path}",
        data=urllib.parse.urlencode({**form, "csrfmiddlewaretoken": csrf}).encode(),
        headers={"Cookie": f"{cookie}; csrftoken={csrf}", "Referer": f"{base}/review/"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


def review(site, port, question_id):
    post_as(site, port, "rita", "reviewer", f"/review/{question_id}/decide/", {"decision": "approve"})


def test_a_run_waiting_for_its_reviewer_leaves_the_only_slot_to_the_next_run_and_resumes_when_decided(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("one-slot")
    waiting = site.queue_demo_run(review_mode="review")
    state_dir = tmp_path / "worker"
    worker = site.start_worker(port, token, state_dir)
    question = wait_until(lambda: proposed_question(site, waiting), 240, while_alive=worker)
    assert question, site.worker_log(state_dir)
    assert wait_until(lambda: run_status(site, waiting) == "waiting_review", 30)
    # Started now, nobody having decided: the one slot is free for it, and it runs to its end.
    demo = site.queue_demo_run()
    assert wait_until(lambda: run_status(site, demo) in FINISHED, 300, while_alive=worker), site.worker_log(state_dir)
    assert run_status(site, waiting) == "waiting_review" and proposed_question(site, waiting) == question
    review(site, port, question)
    assert wait_until(lambda: run_status(site, waiting) in FINISHED, 300, while_alive=worker), site.worker_log(
        state_dir
    )
    kill(worker)
    events = trace_events(state_dir, waiting)
    decided = [e["payload"] for e in events if e["kind"] == "question_decided"]
    assert [(d["action"], d["by"], d["reviewer"]) for d in decided] == [("approve", "reviewer", "rita")]
    assert any(e["kind"] == "status" and e["payload"]["reason"] == "resumed" for e in events)
    assert_finished_as_the_replay_allows(events)


def test_a_message_acknowledged_before_the_worker_is_killed_reaches_the_model_after_its_restart(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("killed")
    run_id = site.queue_demo_run(review_mode="review")
    state_dir = tmp_path / "worker"
    first = site.start_worker(port, token, state_dir)
    question = wait_until(lambda: proposed_question(site, run_id), 240, while_alive=first)
    assert question, site.worker_log(state_dir)
    post_as(site, port, "olga", "operator", f"/runs/{run_id}/message/", {"text": "Try blocking the loops."})
    ((directive,),) = site.query(
        "select id from runs_directive where run_id = ? and action = 'human_message'", (run_id,)
    )
    # The run takes a message at its next turn, after the review: the worker acknowledged it, then died.
    assert wait_until(
        lambda: site.query("select acked_at from runs_directive where id = ?", (directive,))[0][0],
        60,
        while_alive=first,
    ), site.worker_log(state_dir)
    kill(first)
    review(site, port, question)
    second = site.start_worker(port, token, state_dir)
    assert wait_until(lambda: run_status(site, run_id) in FINISHED, 300, while_alive=second), site.worker_log(state_dir)
    kill(second)
    messages = [e["payload"] for e in trace_events(state_dir, run_id) if e["kind"] == "human_message"]
    assert [(m["text"], m["directive_id"]) for m in messages] == [("Try blocking the loops.", f"d-{directive}")]
