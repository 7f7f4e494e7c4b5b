"""A trace replays to the same events, and a run cut off mid-way resumes from its trace."""

import json

import pytest

from agentloop.agent import Agent, Oversight
from agentloop.config import Budgets
from agentloop.errors import ReplayFinished
from agentloop.models.replay import ReplayModel
from agentloop.review import Decision, ScriptedReviewer, TraceReviewer
from agentloop.trace import TraceWriter, read_trace
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, unsandboxed
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use
from tests.agentloop.test_loop import edit_to, evaluate

VOLATILE = {"ts", "duration_s", "cost_usd", "totals"}


def comparable(events):
    """Events without what legitimately differs between a recording and its replay: times, and the cost (a
    replay pays nothing)."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in VOLATILE}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    out = []
    for e in events:
        e = strip(e)
        if e["kind"] == "status" and "config" in e["payload"]:
            e["payload"]["config"].pop("model")
        if e["kind"] == "model_message":
            e["payload"].pop("model")
        if e["kind"] == "usage":
            e["payload"].pop("model")
        out.append(e)
    return out


def recorded_run(tmp_path):
    evaluator = ScriptedEvaluator({"v2": ("correct", 1.5), "v3": ("correct", 2.2)})
    reviewer = ScriptedReviewer([Decision("veto", reviewer="r"), Decision("edit", text="Why is it slow?")])
    turns = [
        Reply([text("Reading."), tool_use("shell", {"command": "wc -l kernel.cpp"})]),
        Reply([edit_to("v2")]),
        Reply([evaluate()]),
        Reply([text("I think this is as fast as it can get.")]),
        Reply([edit_to("v3")]),
        Reply([evaluate()]),
    ]
    selections = [Reply([text("QUESTION: limit-evidence\nREASON: a")]), Reply([text("QUESTION: limit-no-stopping")])]
    server = MessagesServer(Script(turns, selections))
    with server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server),
            evaluator=evaluator,
            reviewer=reviewer,
            config=make_config(review_mode="review", budgets=Budgets(steps=20)),
        )
        outcome = agent.run()
        trace.close()
    return outcome, read_trace(tmp_path / "trace.jsonl"), evaluator


def test_a_trace_replays_to_the_same_events(tmp_path):
    outcome, recorded, evaluator = recorded_run(tmp_path / "rec")
    assert outcome.status == "succeeded"
    assert {"question_proposed", "question_decided", "decision_point", "evaluation"} <= {e["kind"] for e in recorded}

    replay_dir = tmp_path / "replay"
    trace = TraceWriter(replay_dir / "trace.jsonl")
    agent = Agent(
        run_id="t1",
        resume_events=None,
        config=make_config(review_mode="review", budgets=Budgets(steps=20)),
        host=unsandboxed(replay_dir / "ws"),
        model=ReplayModel(recorded),
        sinks=[trace],
        evaluator=ScriptedEvaluator({"v2": ("correct", 1.5), "v3": ("correct", 2.2)}),
        oversight=Oversight(reviewer=TraceReviewer(recorded)),
    )
    replay_outcome = agent.run()
    trace.close()
    replayed = read_trace(replay_dir / "trace.jsonl")
    assert replay_outcome.status == "succeeded"
    # The tools ran for real in the replay's own workspace.
    assert (replay_dir / "ws" / "kernel.cpp").read_text().startswith("// v3")
    assert comparable(replayed) == comparable(recorded)


def test_a_replay_that_plays_its_whole_recording_is_stopped_not_failed(tmp_path):
    outcome, recorded, _ = recorded_run(tmp_path / "rec")
    trace = TraceWriter(tmp_path / "replay.jsonl")
    # The harness now says v3 is no faster: the recording has no turn for what follows.
    agent = Agent(
        run_id="t1",
        config=make_config(budgets=Budgets(steps=20)),
        host=unsandboxed(tmp_path / "ws2"),
        model=ReplayModel(recorded),
        sinks=[trace],
        evaluator=ScriptedEvaluator(),
        oversight=Oversight(reviewer=TraceReviewer(recorded)),
    )
    out = agent.run()
    # Every recorded turn was played and the run wants one more: the recording is over, which is no failure.
    assert (out.status, out.reason) == ("stopped", "replay_finished")
    final = read_trace(tmp_path / "replay.jsonl")[-1]
    assert final["kind"] == "status" and final["payload"]["reason"] == "replay_finished"
    assert final["payload"]["detail"] == "the recording has no more turns (the recorded run ended succeeded goal_met)"


def test_a_replay_asked_for_a_call_the_recording_never_made_is_finished_not_failed():
    model = ReplayModel([{"kind": "model_message", "payload": {"purpose": "turn", "content": []}}])
    with pytest.raises(ReplayFinished, match="no select_question call here: this run went another way"):
        model.query("", [], [], "select_question")
    model.query("", [], [], "turn")
    with pytest.raises(ReplayFinished, match="no more turns$"):  # a recording with no final status says only that
        model.query("", [], [], "turn")


def replay_reviewed(tmp_path, recorded, decisions):
    """`recorded` replayed in review mode, its questions decided by `decisions` in turn; the outcome and trace."""
    trace = TraceWriter(tmp_path / "replay.jsonl")
    agent = Agent(
        run_id="t1",
        config=make_config(review_mode="review", budgets=Budgets(steps=20)),
        host=unsandboxed(tmp_path / "ws"),
        model=ReplayModel(recorded),
        sinks=[trace],
        evaluator=ScriptedEvaluator({"v2": ("correct", 1.5), "v3": ("correct", 2.2)}),
        oversight=Oversight(reviewer=ScriptedReviewer(decisions)),
    )
    outcome = agent.run()
    trace.close()
    return outcome, read_trace(tmp_path / "replay.jsonl")


def test_a_replay_whose_recorded_question_is_vetoed_ends_stopped_replay_finished(tmp_path):
    _, recorded, _ = recorded_run(tmp_path / "rec")
    # The recording made two selections (its reviewer vetoed the first); here every proposal is vetoed, so the
    # agent asks for a third selection, which the recording never made.
    vetoes = [Decision("veto", reviewer="rita")] * 3
    outcome, replayed = replay_reviewed(tmp_path, recorded, vetoes)
    assert (outcome.status, outcome.reason) == ("stopped", "replay_finished")
    final = replayed[-1]["payload"]
    assert (final["status"], final["reason"]) == ("stopped", "replay_finished")
    assert final["detail"].startswith("the recording has no select_question call here: this run went another way")
    assert final["detail"].endswith("(the recorded run ended succeeded goal_met)")
    assert [e["payload"]["action"] for e in replayed if e["kind"] == "question_decided"] == ["veto", "veto"]


def test_a_replay_whose_recorded_question_is_edited_plays_on_to_the_recordings_end(tmp_path):
    _, recorded, _ = recorded_run(tmp_path / "rec")
    edits = [Decision("veto", reviewer="rita"), Decision("edit", text="Which loop is the slow one?", reviewer="rita")]
    outcome, replayed = replay_reviewed(tmp_path, recorded, edits)
    assert outcome.status == "succeeded"
    asked = [e["payload"]["text"] for e in replayed if e["kind"] == "question_decided"]
    assert asked == [None, "Which loop is the slow one?"]


def test_a_run_cut_off_mid_step_resumes_from_its_trace(tmp_path):
    evaluator = ScriptedEvaluator({"v2": ("correct", 2.5)})
    turns = [
        Reply([tool_use("shell", {"command": "echo one > one.txt"})]),
        Reply([edit_to("v2")]),
        Reply([edit_to("v2")]),
        Reply([evaluate()]),
    ]

    # First life: crash (an exception the loop does not expect, like a killed process) while the second turn's
    # tool call runs, after its tool_call event was written.
    class Crash(BaseException):
        pass

    def crash_on(event):
        if event["kind"] == "tool_call" and event["payload"]["name"] == "editor" and not resuming:
            raise Crash()

    resuming = False

    server = MessagesServer(Script(turns))
    with server:
        agent, trace = make_agent(tmp_path, anthropic_model(server), evaluator=evaluator, extra_sinks=[crash_on])
        try:
            agent.run()
        except Crash:
            pass
        trace.close()
        first = read_trace(tmp_path / "trace.jsonl")
        assert first[-1]["kind"] == "tool_call" and not any(e["payload"].get("status") == "succeeded" for e in first)
        # A partial line, as a kill mid-write leaves it.
        with open(tmp_path / "trace.jsonl", "a") as f:
            f.write('{"v":1,"run_id":"t1","seq":')

        # Second life: from the trace alone.
        resuming = True
        events = read_trace(tmp_path / "trace.jsonl")
        trace = TraceWriter(tmp_path / "trace.jsonl")
        resumed = Agent(
            run_id="t1",
            resume_events=events,
            host=unsandboxed(tmp_path / "ws"),
            model=anthropic_model(server),
            sinks=[trace],
            evaluator=evaluator,
        )
        outcome = resumed.run()
        trace.close()
    final = read_trace(tmp_path / "trace.jsonl")
    assert outcome.status == "succeeded"
    assert [e["seq"] for e in final] == list(range(len(final)))
    resumed_at = len(first)
    assert final[resumed_at]["payload"] == {"status": "running", "reason": "resumed"}
    interrupted = final[resumed_at + 1]["payload"]
    assert interrupted["interrupted"] and interrupted["is_error"]
    # The model was told, and the conversation it saw continued the first life's.
    third = server.turn_requests[2]
    results = [b for b in third["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert "interrupted by a restart" in json.dumps(results)
    assert third["messages"][0]["content"][0]["text"].startswith("Task: matmul_cpu")


def test_a_replayed_run_resumed_after_a_selection_whose_proposal_was_lost_replays_that_selection(tmp_path):
    outcome, recorded, _ = recorded_run(tmp_path / "rec")
    # The crash came after the first question selection was made and recorded, before its proposal was written.
    cut = 1 + next(
        i
        for i, e in enumerate(recorded)
        if e["kind"] == "model_message" and e["payload"]["purpose"] == "select_question"
    )
    edits = [
        e["payload"]["input"] for e in recorded[:cut] if e["kind"] == "tool_call" and e["payload"]["name"] == "editor"
    ]
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "kernel.cpp").write_text(edits[-1]["file_text"])
    trace = TraceWriter(tmp_path / "trace.jsonl")
    for event in recorded[:cut]:
        trace.write(event)
    reviewer = ScriptedReviewer([Decision("veto", reviewer="r"), Decision("edit", text="Why is it slow?")])
    resumed = Agent(
        run_id="t1",
        resume_events=recorded[:cut],
        host=unsandboxed(tmp_path / "ws"),
        model=ReplayModel(recorded),
        sinks=[trace],
        evaluator=ScriptedEvaluator({"v2": ("correct", 1.5), "v3": ("correct", 2.2)}),
        oversight=Oversight(reviewer=reviewer),
    )
    assert resumed.run().status == "succeeded"
    trace.close()

    def proposals(events):
        return [(e["payload"]["bank_key"], e["payload"]["by"]) for e in events if e["kind"] == "question_proposed"]

    assert proposals(read_trace(tmp_path / "trace.jsonl")) == proposals(recorded)
