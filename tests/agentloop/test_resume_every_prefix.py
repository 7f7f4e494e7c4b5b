"""A run resumed from any prefix of its trace (a crash after any event, the last line cut short) sends the model a
conversation the Messages API accepts, and asks the question of a decision point the crash left open.

One run is recorded through the real `anthropic` client against the local Messages-API server: tool calls (two in
one turn), evaluations, a goal check, decision points fired together and alone, a veto, reviewed questions, and
the success. Then for every cut point k, the first k events (and the next line cut short) are a trace, the
workspace is as it was when the k-th event was written, and a fresh Agent resumes from them.
"""

import json

from agentloop.agent import Agent, Oversight
from agentloop.config import Budgets
from agentloop.review import Decision, ScriptedReviewer
from agentloop.trace import TraceWriter, read_trace
from questionbank.bank import load_bank
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, unsandboxed
from tests.agentloop.messages_api import Failure, MessagesServer, Reply, Script, api_refusal, text, tool_use
from tests.agentloop.test_loop import edit_to, evaluate

BANK = load_bank()
SPEEDUPS = {
    "v2": ("correct", 1.5),
    "v3": ("correct", 1.4),
    "v4": ("correct", 1.45),
    "v5": ("correct", 1.3),
    "v6": ("correct", 2.2),
}


def record(tmp_path):
    """The recorded run, and the workspace's files as they were when each event was written."""
    turns = [
        Reply(
            [
                text("Reading."),
                tool_use("shell", {"command": "wc -l kernel.cpp"}),
                tool_use("shell", {"command": "head -3 kernel.cpp"}),
            ]
        ),
        Reply([edit_to("v2"), evaluate()]),
        Reply([edit_to("v3"), evaluate()]),
        Reply([text("I think this is as fast as it can get.")]),  # claimed-limit and stopped-short
        Reply([edit_to("v4"), evaluate()]),
        Reply([edit_to("v5"), evaluate()]),  # regression and plateau
        Reply([edit_to("v6"), evaluate()]),
    ]  # meets the target: goal check, success
    selections = [Reply([text("QUESTION: limit-evidence\nREASON: a limit was claimed")])]
    reviewer = ScriptedReviewer([Decision("veto", reviewer="r"), Decision("edit", text="Why is it slow?")])
    snapshots = []
    workspace = tmp_path / "ws"

    def snapshot(event):
        snapshots.append({p.name: p.read_bytes() for p in workspace.iterdir() if p.is_file()})

    with MessagesServer(Script(turns, selections)) as server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server),
            evaluator=ScriptedEvaluator(SPEEDUPS),
            reviewer=reviewer,
            bank=BANK,
            extra_sinks=[snapshot],
            config=make_config(review_mode="review", budgets=Budgets(steps=20)),
        )
        outcome = agent.run()
        trace.close()
    assert outcome.status == "succeeded"
    lines = (tmp_path / "trace.jsonl").read_text().splitlines(keepends=True)
    return lines, snapshots


def assert_valid_messages_api_input(messages):
    """What the Messages API accepts (api_refusal: tool results answer tool uses, first in their message; tool
    inputs are objects; no empty or unknown block), and what the loop promises beyond it: roles alternate, so no
    turn is merged into another, and the conversation ends with the user (the API would continue a last assistant
    message instead of starting the model's next turn)."""
    assert api_refusal({"messages": messages}) is None, api_refusal({"messages": messages})
    roles = [m["role"] for m in messages]
    assert roles[-1] == "user", roles
    assert all(a != b for a, b in zip(roles, roles[1:])), roles


def open_decision_point(events):
    """The decision point a crash after these events left open: the first of those fired after the last turn, with
    no question asked (approved, edited or replaced) after it."""
    last_turn = max(
        (i for i, e in enumerate(events) if e["kind"] == "model_message" and e["payload"]["purpose"] == "turn"),
        default=-1,
    )
    after = events[last_turn + 1 :]
    fired = [e["payload"]["name"] for e in after if e["kind"] == "decision_point"]
    asked = any(e["kind"] == "question_decided" and e["payload"]["action"] != "veto" for e in after)
    return fired[0] if fired and not asked else None


def first_turn_only(request):
    """The resumed runs' model: the rule picks every question; the first turn is all the test looks at, so it is
    answered with an error that ends the run there."""
    if request.get("tools"):
        return Failure(400)
    return Reply([text("QUESTION: none\nREASON: let the rule pick")])


def resume(tmp_path, server, prefix: list[str], cut_line: str, files: dict):
    (tmp_path / "ws").mkdir(parents=True)
    for name, data in files.items():
        (tmp_path / "ws" / name).write_bytes(data)
    (tmp_path / "trace.jsonl").write_text("".join(prefix) + cut_line)
    events = read_trace(tmp_path / "trace.jsonl")
    already = len(server.turn_requests)
    trace = TraceWriter(tmp_path / "trace.jsonl")
    agent = Agent(
        run_id="t1",
        resume_events=events,
        model=anthropic_model(server),
        sinks=[trace],
        host=unsandboxed(tmp_path / "ws"),
        evaluator=ScriptedEvaluator(SPEEDUPS),
        oversight=Oversight(reviewer=ScriptedReviewer([]), bank=BANK),
    )
    outcome = agent.run()
    trace.close()
    return events, outcome, read_trace(tmp_path / "trace.jsonl")[len(events) :], server.turn_requests[already:]


def test_a_run_resumed_from_any_prefix_of_its_trace_sends_valid_input_and_asks_every_open_question(tmp_path):
    lines, snapshots = record(tmp_path / "recorded")
    kinds = [json.loads(line)["kind"] for line in lines]
    assert {"decision_point", "question_proposed", "question_decided", "tool_call", "evaluation"} <= set(kinds)
    checked_open = 0
    results = []
    with MessagesServer(first_turn_only) as server:
        for k in range(1, len(lines)):  # the last event is the finished status: nothing to resume after it
            nxt = lines[k]
            cut_line = nxt[: max(1, (k * 37) % len(nxt.rstrip("\n")))]  # the next event, cut short by the crash
            results.append(resume(tmp_path / f"cut{k}", server, lines[:k], cut_line, snapshots[k - 1]))
    for k, (events, outcome, new, turns) in enumerate(results, start=1):
        where = f"resumed after event {k - 1} ({kinds[k - 1]})"
        assert outcome.reason != "internal_error", (where, [e["payload"] for e in new if e["kind"] == "note"])
        assert new[0]["payload"] == {"status": "running", "reason": "resumed"} or new[0]["payload"] == {
            "status": "paused",
            "reason": "resumed",
        }, where
        if turns:
            try:
                assert_valid_messages_api_input(turns[0]["messages"])
            except AssertionError as exc:
                raise AssertionError(f"{where}: {exc}") from None
        else:
            assert outcome.status == "succeeded", (where, outcome)
        point = open_decision_point(events)
        if point is not None:
            checked_open += 1
            # Asked: a question proposed at that point (before the crash and still waiting, or after) was decided.
            proposals = {
                e["payload"]["question_ref"]: e["payload"] for e in events + new if e["kind"] == "question_proposed"
            }
            asked = [e["payload"] for e in new if e["kind"] == "question_decided" and e["payload"]["action"] != "veto"]
            assert asked and proposals[asked[0]["question_ref"]]["decision_point"] == point, (where, point, asked)
            # The question reached the model, as the last thing it was told.
            last = turns[0]["messages"][-1]["content"]
            assert last[-1]["type"] == "text" and last[-1]["text"] == asked[0]["text"], where
    assert checked_open >= 8  # the recording left decision points open at many cut points
