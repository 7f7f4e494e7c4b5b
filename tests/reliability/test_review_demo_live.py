"""The review demo decided from the review queue, through a real daphne and a real worker (issue 34, item 8):
a veto of its recorded question ends the replay stopped (replay_finished), as a replay that has nothing more to
play ends, never "Failed (replay_exhausted)"; an edit plays on to the recording's end. The demo's model turns are
a recording, its compiles and evaluations real (the CPU task)."""

import json

import pytest

from tests.reliability.live import LiveSite, kill, wait_until
from tests.reliability.test_dashboard_bad_requests import Client

pytestmark = pytest.mark.timeout(600)

FINISHED = ("succeeded", "failed", "stopped")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A site, its daphne, one worker with one slot, and a reviewer's session."""
    folder = tmp_path_factory.mktemp("review-demo")
    site = LiveSite(folder).setup()
    try:
        port = site.start_server()
        worker = site.start_worker(port, site.worker_token("cpu-host"), folder / "worker")
        yield site, Client(site, port, "rita", "reviewer"), worker, folder / "worker"
        kill(worker)
    finally:
        site.close()


def decide_first_question(site, reviewer, worker, state_dir, run_id, fields) -> None:
    """Wait for the run's question, then decide it as a reviewer on the queue does (a POST of its form)."""
    waiting = wait_until(
        lambda: site.query("select id from runs_question where run_id = ? and status = 'proposed'", (run_id,)),
        300,
        while_alive=worker,
    )
    assert waiting, site.worker_log(state_dir)
    status, _, body = reviewer.request("POST", f"/review/{waiting[0][0]}/decide/", fields, accept_json=True)
    assert status == 200 and json.loads(body)["ok"], body


def finished(site, worker, state_dir, run_id) -> tuple[str, str]:
    done = wait_until(
        lambda: site.query(
            "select status, status_reason from runs_run where id = ? and status in (?, ?, ?)", (run_id, *FINISHED)
        ),
        300,
        while_alive=worker,
    )
    assert done, site.worker_log(state_dir)
    return done[0]


def test_a_veto_of_the_review_demos_question_ends_the_replay_stopped_not_failed(live):
    site, reviewer, worker, state_dir = live
    run_id = site.queue_demo_run(review_mode="review")
    decide_first_question(site, reviewer, worker, state_dir, run_id, {"decision": "veto"})
    status, reason = finished(site, worker, state_dir, run_id)
    assert (status, reason.split(":")[0]) == ("stopped", "replay_finished"), reason
    assert "went another way than the recording" in reason
    assert site.query("select status from runs_question where run_id = ?", (run_id,)) == [("vetoed",)]
    page = reviewer.request("GET", f"/runs/{run_id}/")[2]
    assert "Stopped" in page and "replay_finished" in page and "replay_exhausted" not in page


def test_an_edit_of_the_review_demos_question_plays_on_to_the_recordings_end(live):
    site, reviewer, worker, state_dir = live
    run_id = site.queue_demo_run(review_mode="review")
    edited = "Is the kernel bound by memory traffic, and which loop order would cut it?"
    decide_first_question(site, reviewer, worker, state_dir, run_id, {"decision": "edit", "text": edited})
    status, reason = finished(site, worker, state_dir, run_id)
    assert status == "succeeded", reason
    assert site.query("select status, text from runs_question where run_id = ?", (run_id,)) == [("edited", edited)]
