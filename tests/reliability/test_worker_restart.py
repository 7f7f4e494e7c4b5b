"""Faults on the worker's side, against the real server (daphne) and the real worker (`python -m agentloop worker`).

Each test runs the replay demo run: its model turns are scripted, its compiles and evaluations are real (the CPU
task), so a run takes tens of seconds and its events have the shapes a real run's have.
"""

import json
import time

import pytest

from gpu_harness import figures
from tests.reliability.feed import FeedFollower
from tests.reliability.live import kill, spool_pending, wait_until

pytestmark = pytest.mark.timeout(600)


def stored_steps(site, run_id):
    rows = site.query("select seq, kind, payload from runs_step where run_id = ? order by seq", (run_id,))
    return [(seq, kind, json.loads(payload) if isinstance(payload, str) else payload) for seq, kind, payload in rows]


def trace_events(state_dir, run_id):
    path = state_dir / "runs" / str(run_id) / "trace.jsonl"
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:  # a line cut short by the kill
            pass
    return events


def gap_report(site, state_dir, run_id, events, steps, port=None):
    """What a failure with gaps needs to be understood later (a gap was seen once, in a fresh clone's suite on a
    loaded 2-core machine, and not again): which seqs are missing, their kinds in the trace, whether the server
    refused them for good or the spool still holds them, and the worker's and the server's logs."""
    stored = {s[0] for s in steps}
    missing = sorted(set(range(max(stored | {e["seq"] for e in events}) + 1)) - stored)
    kinds = {e["seq"]: e["kind"] for e in events}
    # the one way the server leaves a gap by design: an event it refused for good (docs/protocol.md 2.4)
    refused = site.query("select seq, kind, error from runs_refusedevent where run_id = ? order by seq", (run_id,))
    lines = [
        f"stored seqs have gaps: missing {[(seq, kinds.get(seq, 'not in the trace')) for seq in missing]}",
        f"events the server refused for good (seq, kind, error): {refused}",
        f"events the spool still holds unacknowledged: {spool_pending(state_dir)}",
        "worker log (tail):",
        site.worker_log(state_dir),
    ]
    if port is not None:
        lines += ["server log (tail):", site.server_log(port)]
    return "\n".join(lines)


def assert_trace_stored_exactly(site, state_dir, run_id, port=None):
    """Every event of the worker's trace is stored, under its seq, with its content; nothing else is stored,
    and the run's totals count each row once."""
    events = trace_events(state_dir, run_id)
    steps = stored_steps(site, run_id)
    if [s[0] for s in steps] != list(range(len(steps))):
        pytest.fail(gap_report(site, state_dir, run_id, events, steps, port))
    assert [(s[0], s[1]) for s in steps] == [(e["seq"], e["kind"]) for e in events]
    for (seq, _kind, payload), event in zip(steps, events):
        assert json.dumps(payload, sort_keys=True) == json.dumps(event["payload"], sort_keys=True), seq
    ((step_count, last_seq, tokens_in, tokens_out),) = site.query(
        "select step_count, last_seq, tokens_in, tokens_out from runs_run where id = ?", (run_id,)
    )
    assert (step_count, last_seq) == (len(steps), len(steps) - 1)
    assert tokens_in == sum(e["usage"]["tokens_in"] for e in events)
    assert tokens_out == sum(e["usage"]["tokens_out"] for e in events)
    return events


def run_status(site, run_id):
    return site.query("select status from runs_run where id = ?", (run_id,))[0][0]


def test_a_worker_killed_mid_run_resumes_from_its_trace_and_every_step_is_stored_once(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("gpu-kill")
    run_id = site.queue_demo_run()
    state_dir = tmp_path / "worker"

    first = site.start_worker(port, token, state_dir)
    evaluated = wait_until(
        lambda: any(kind == "evaluation" for _, kind, _ in stored_steps(site, run_id)), 240, while_alive=first
    )
    kill(first)
    assert evaluated, site.worker_log(state_dir)
    assert run_status(site, run_id) == "running", "the kill came too late: the run had finished"

    second = site.start_worker(port, token, state_dir)
    finished = wait_until(
        lambda: run_status(site, run_id) in ("succeeded", "failed", "stopped"), 300, while_alive=second
    )
    assert finished, site.worker_log(state_dir)
    # The last acks land after the status change is stored; give the spool a moment to empty.
    wait_until(lambda: spool_pending(state_dir) == 0, 20)
    kill(second)

    events = assert_trace_stored_exactly(site, state_dir, run_id, port)
    reasons = [e["payload"].get("reason") for e in events if e["kind"] == "status"]
    assert reasons[0] == "started" and "resumed" in reasons, reasons
    assert_finished_as_the_replay_allows(events)


def goal_lost_in_the_noise(events) -> bool:
    """Whether a full evaluation of the run reached its goal's target by its point figure but not beyond the noise
    (gpu_harness.figures.clears_target): on a loaded host the interval can be too wide to confirm the goal, and
    the harness rightly does not call it met (docs/harness.md, "Noise")."""
    for event in events:
        payload = event["payload"]
        goal, result = payload.get("goal") or {}, payload.get("result") or {}
        if event["kind"] != "evaluation" or not payload.get("full") or not goal:
            continue
        baseline, target = goal.get("baseline"), goal.get("speedup")
        if figures.meets_target(result, baseline, target) and not figures.clears_target(result, baseline, target):
            return True
    return False


def assert_finished_as_the_replay_allows(events):
    """The demo's model is a replay: it succeeds when the kill fell between tool calls; when it fell inside one,
    the resumed run reports that call interrupted (docs/protocol.md 1.2) and the recording has no turn for what
    a live model would do next, so the replay has played its whole recording and is stopped with replay_finished.
    The same ending is right where the host was too loaded for the goal to be confirmed beyond the noise
    (`goal_lost_in_the_noise`). Anything else is a fault."""
    final = events[-1]
    assert final["kind"] == "status", final
    interrupted = [e for e in events if e["kind"] == "tool_result" and e["payload"].get("interrupted")]
    if final["payload"]["status"] != "succeeded":
        assert (interrupted or goal_lost_in_the_noise(events)) and (
            final["payload"]["status"],
            final["payload"]["reason"],
        ) == ("stopped", "replay_finished"), final["payload"]


def test_a_server_killed_while_a_worker_streams_loses_and_doubles_nothing_and_feeds_resume(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("gpu-restart")
    run_id = site.queue_demo_run()
    state_dir = tmp_path / "worker"
    follower = FeedFollower(port, site.session_for("vera"), run_id).start()
    worker = site.start_worker(port, token, state_dir)
    try:
        assert wait_until(lambda: len(stored_steps(site, run_id)) >= 3, 120, while_alive=worker), site.worker_log(
            state_dir
        )
        site.kill_server(port)  # SIGKILL: no goodbye to the sockets, whatever was in flight is lost in flight
        stored_at_kill = len(stored_steps(site, run_id))
        time.sleep(3)
        site.start_server(port)
        finished = wait_until(
            lambda: run_status(site, run_id) in ("succeeded", "failed", "stopped"), 300, while_alive=worker
        )
        assert finished, site.worker_log(state_dir)
        wait_until(lambda: spool_pending(state_dir) == 0, 20)
        all_seqs = [s[0] for s in stored_steps(site, run_id)]
        assert wait_until(lambda: follower.held == set(all_seqs), 30), (sorted(follower.held), all_seqs)
    finally:
        kill(worker)
        follower.stop()

    events = assert_trace_stored_exactly(site, state_dir, run_id, port)
    assert_finished_as_the_replay_allows(events)
    assert stored_at_kill < len(events), "the kill came too late to test a reconnect"
    assert "connection lost" in site.worker_log(state_dir) or "cannot reach" in site.worker_log(state_dir)
    # The page's socket came back, and it paged in after what it held: no page repeated a step it had.
    assert follower.connections >= 2
    assert follower.repeats == [], follower.repeats


def test_a_reviewers_decision_for_an_offline_worker_is_delivered_when_it_reconnects_and_acted_on_once(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("gpu-review")
    run_id = site.queue_demo_run(review_mode="review")
    state_dir = tmp_path / "worker"
    reviewer = site.session_for("rita", "reviewer")  # noqa: F841 - the user the decision is made by
    first = site.start_worker(port, token, state_dir)
    proposed = wait_until(
        lambda: site.query("select id from runs_question where run_id = ? and status = 'proposed'", (run_id,)),
        240,
        while_alive=first,
    )
    assert proposed, site.worker_log(state_dir)
    kill(first)  # the worker is offline while the reviewer decides

    site.django(
        "from django.contrib.auth import get_user_model\nfrom runs.models import Question\n"
        "from runs.services import question_review\n"
        "q = Question.objects.get(pk=question_id)\n"
        "question_review(question=q, reviewer=get_user_model().objects.get(username='rita'), decision='approve')\n"
        "result = True",
        question_id=proposed[0][0],
    )
    ((directive_id, acked),) = site.query("select id, acked_at from runs_directive where run_id = ?", (run_id,))
    assert acked is None

    second = site.start_worker(port, token, state_dir)
    finished = wait_until(
        lambda: run_status(site, run_id) in ("succeeded", "failed", "stopped"), 300, while_alive=second
    )
    assert finished, site.worker_log(state_dir)
    wait_until(lambda: spool_pending(state_dir) == 0, 20)
    kill(second)

    events = assert_trace_stored_exactly(site, state_dir, run_id, port)
    decided = [e["payload"] for e in events if e["kind"] == "question_decided"]
    assert len(decided) == 1, decided
    assert decided[0]["by"] == "reviewer" and decided[0]["action"] == "approve" and decided[0]["reviewer"] == "rita"
    assert decided[0].get("directive_id") == f"d-{directive_id}"
    ((acked,),) = site.query("select acked_at from runs_directive where id = ?", (directive_id,))
    assert acked is not None
    assert site.query("select status from runs_question where run_id = ?", (run_id,)) == [("approved",)]
    assert_finished_as_the_replay_allows(events)
