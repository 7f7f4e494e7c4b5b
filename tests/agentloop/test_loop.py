"""The loop end to end: the real `anthropic` client against a local Messages-API server plays the model's turns;
the evaluator returns scripted verdicts in the harness's own result type (test_cli.py, test_worker.py and
test_harness_env.py run the real harness)."""

import json
import threading
import time

import pytest

from agentloop.config import Budgets
from agentloop.control import Directive
from agentloop.review import Decision, ScriptedReviewer
from agentloop.trace import read_trace
from questionbank.bank import load_bank
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, broken_tool_use, text, tool_use

BANK = {e.key: e for e in load_bank()}
FAST = '// fast version\nextern "C" int kseek_matmul(const float*, const float*, float*, int, int, int) { return 0; }\n'


def edit_to(marker: str) -> dict:
    return tool_use("editor", {"command": "create", "path": "kernel.cpp", "file_text": f"// {marker}\n" + FAST})


def evaluate(scenarios="quick") -> dict:
    return tool_use("evaluate", {"scenarios": scenarios})


def last_user_text(request: dict) -> str:
    last = request["messages"][-1]
    assert last["role"] == "user"
    return "\n".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")


def run(tmp_path, turns, selections=(), evaluator=None, config=None, stream=True, **kwargs):
    server = MessagesServer(Script(turns, selections))
    with server:
        agent, trace = make_agent(
            tmp_path, anthropic_model(server, stream=stream), config=config, evaluator=evaluator, **kwargs
        )
        outcome = agent.run()
        trace.close()
    return outcome, read_trace(tmp_path / "trace.jsonl"), server


def test_agent_edits_the_kernel_and_the_run_succeeds_only_on_the_harness_full_verdict(tmp_path):
    evaluator = ScriptedEvaluator({"v2": ("correct", 2.5)}, default=("correct", 1.0))
    outcome, events, server = run(
        tmp_path,
        [
            Reply([text("Let me see the kernel."), tool_use("shell", {"command": "cat kernel.cpp"})]),
            Reply([edit_to("v2")]),
            Reply([evaluate("quick")]),
        ],
        evaluator=evaluator,
    )
    assert outcome.status == "succeeded" and outcome.reason == "goal_met"
    # The quick verdict met the target; the loop itself then ran the full set, which confirmed it.
    evals = payloads(events, "evaluation")
    assert [(e["purpose"], e["scenario_set"], e["goal_met"]) for e in evals] == [
        ("tool", "quick", False),
        ("goal_check", "full", True),
    ]
    assert evals[-1]["result"]["kernel_source"].startswith("// v2")
    assert (tmp_path / "ws" / "kernel.cpp").read_text().startswith("// v2")
    shell_result = payloads(events, "tool_result")[0]
    assert shell_result["name"] == "shell" and "kseek_matmul" in shell_result["output"]
    assert events[-1]["payload"]["status"] == "succeeded"
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_an_evaluation_event_carries_the_kernel_source_once_inside_its_result(tmp_path):
    big = "// v2\n" + "// padding\n" * 20_000 + FAST
    outcome, events, server = run(
        tmp_path,
        [
            Reply([tool_use("editor", {"command": "create", "path": "kernel.cpp", "file_text": big})]),
            Reply([evaluate("quick")]),
        ],
        config=make_config(budgets=Budgets(steps=2)),
    )
    [event] = [e for e in events if e["kind"] == "evaluation"]
    assert "kernel_source" not in event["payload"]
    assert event["payload"]["result"]["kernel_source"] == big
    assert json.dumps(event).count("// padding") == 20_000


def test_a_streamed_tool_input_that_is_not_json_is_answered_as_a_tool_error_and_the_run_goes_on(tmp_path):
    cut_short = '{"command": "create", "path": "kernel.cpp", "file_text": "// v2\\n'  # the JSON ends mid-string
    broken = broken_tool_use("editor", cut_short)
    outcome, events, server = run(
        tmp_path,
        [Reply([text("Writing it."), broken]), Reply([edit_to("v2")]), Reply([evaluate()])],
        evaluator=ScriptedEvaluator({"v2": ("correct", 2.5)}),
    )
    assert (outcome.status, outcome.reason) == ("succeeded", "goal_met")
    # The trace keeps what the model sent; nothing was run for it; the model was told, and read the error.
    assert payloads(events, "model_message")[0]["content"][1]["raw_input"] == cut_short
    assert payloads(events, "tool_call")[0] == {
        "call_id": broken["id"],
        "name": "editor",
        "input": {},
        "raw_input": cut_short,
    }
    result = payloads(events, "tool_result")[0]
    assert result["is_error"] and result["invalid_input"] and "was not valid JSON" in result["output"]
    assert server.refusals == []
    sent = server.turn_requests[1]["messages"]
    assert sent[-2]["content"][-1] == {"type": "tool_use", "id": broken["id"], "name": "editor", "input": {}}
    assert sent[-1]["content"][0]["tool_use_id"] == broken["id"] and sent[-1]["content"][0]["is_error"]
    assert "was not valid JSON" in sent[-1]["content"][0]["content"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_input_that_is_not_an_object_is_answered_as_a_tool_error_and_never_sent_back(tmp_path, stream):
    call = tool_use("shell", "cat kernel.cpp")
    outcome, events, server = run(
        tmp_path,
        [Reply([call]), Reply([edit_to("v2")]), Reply([evaluate()])],
        evaluator=ScriptedEvaluator({"v2": ("correct", 2.5)}),
        stream=stream,
    )
    assert (outcome.status, outcome.reason) == ("succeeded", "goal_met")
    assert payloads(events, "tool_call")[0]["input"] == "cat kernel.cpp"  # as the model sent it
    result = payloads(events, "tool_result")[0]
    assert (
        result["is_error"] and "must be a JSON object" in result["output"] and "not a JSON string" in result["output"]
    )
    assert server.refusals == []  # the API would have refused the string input sent back (HTTP 400)
    assert server.turn_requests[1]["messages"][-2]["content"][0]["input"] == {}


def test_tool_inputs_that_are_not_objects_end_the_run_after_the_policys_limit_in_a_row(tmp_path):
    def broken(n):
        return [broken_tool_use("shell", '{"command": ') for _ in range(n)]

    # 4 in a row, a good call (the count starts again), then 3 and 2: the fifth in a row ends the run.
    outcome, events, server = run(
        tmp_path,
        [
            Reply(broken(4)),
            Reply([tool_use("shell", {"command": "true"})]),
            Reply(broken(3)),
            Reply(broken(2)),
            Reply([text("never asked")]),
        ],
    )
    assert (outcome.status, outcome.reason) == ("failed", "invalid_tool_input")
    assert "5 tool calls in a row whose input was not a JSON object" in events[-1]["payload"]["detail"]
    assert len(server.turn_requests) == 4
    # Every call was answered, and only the good one ran.
    assert len(payloads(events, "tool_result")) == len(payloads(events, "tool_call")) == 10
    assert [r["is_error"] for r in payloads(events, "tool_result")].count(False) == 1


def test_a_false_i_am_done_is_refused_and_answered_with_a_question(tmp_path):
    evaluator = ScriptedEvaluator({"v2": ("correct", 1.3)})
    outcome, events, server = run(
        tmp_path,
        [
            Reply([edit_to("v2")]),
            Reply([text("I am done: the kernel is finished.")]),
            Reply([text("Still done.")]),
        ],
        selections=[Reply([text("QUESTION: layer-memory-reuse\nREASON: it stopped at 1.3x")])],
        evaluator=evaluator,
        config=make_config(budgets=Budgets(steps=3)),
    )
    # The claim was checked by a fresh full evaluation, which did not confirm the goal.
    assert [(e["purpose"], e["goal_met"]) for e in payloads(events, "evaluation")] == [("goal_check", False)]
    assert payloads(events, "decision_point")[0]["name"] == "stopped-short"
    proposed = payloads(events, "question_proposed")[0]
    assert proposed["bank_key"] == "layer-memory-reuse" and proposed["by"] == "model"
    # The approved question, and nothing else, is what the model hears next.
    assert last_user_text(server.turn_requests[2]) == BANK["layer-memory-reuse"].text
    assert outcome.status == "failed" and outcome.reason == "budget_steps"


def test_a_claimed_limit_is_detected_and_comes_first(tmp_path):
    outcome, events, server = run(
        tmp_path,
        [
            Reply([evaluate()]),
            Reply([text("This is the hardware limit; it cannot go any faster.")]),
            Reply([text("ok")]),
        ],
        selections=[Reply([text("QUESTION: limit-evidence\nREASON: a limit was claimed")])],
        evaluator=ScriptedEvaluator(default=("correct", 1.1)),
        config=make_config(budgets=Budgets(steps=3)),
    )
    fired = payloads(events, "decision_point")
    assert [f["name"] for f in fired][:2] == ["claimed-limit", "stopped-short"]
    assert "hardware limit" in fired[0]["evidence"]["phrase"]
    assert payloads(events, "question_proposed")[0]["decision_point"] == "claimed-limit"


def test_a_plateau_triggers_a_self_asked_question(tmp_path):
    evaluator = ScriptedEvaluator(
        {"v1": ("correct", 1.4), "v2": ("correct", 1.3), "v3": ("correct", 1.35), "v4": ("correct", 1.28)}
    )
    turns = []
    for marker in ("v1", "v2", "v3", "v4"):
        turns += [Reply([edit_to(marker)]), Reply([evaluate()])]
    turns.append(Reply([text("trying something else"), tool_use("shell", {"command": "true"})]))
    outcome, events, server = run(
        tmp_path,
        turns,
        selections=[Reply([text("QUESTION: layer-memory-byte-journey\nREASON: three tries, no gain")])],
        evaluator=evaluator,
        config=make_config(budgets=Budgets(steps=9)),
    )
    fired = payloads(events, "decision_point")
    assert [f["name"] for f in fired] == ["plateau"]
    assert fired[0]["evidence"]["window"] == [1.3, 1.35, 1.28]
    # Asked right after the fourth evaluation, once.
    decided = payloads(events, "question_decided")
    assert len(decided) == 1 and decided[0]["by"] == "auto"
    assert last_user_text(server.turn_requests[8]) == BANK["layer-memory-byte-journey"].text
    # The selection call saw the trajectory and the bank, and no tools.
    selection = [r["body"] for r in server.requests if not r["body"].get("tools")][0]
    prompt = selection["messages"][0]["content"][0]["text"]
    assert "Decision point: plateau" in prompt and "layer-memory-byte-journey" in prompt and "1.4x" in prompt


def test_a_reviewers_edit_is_what_the_model_is_asked(tmp_path):
    reviewer = ScriptedReviewer([Decision("edit", text="What does the cache do here?", reviewer="alice")])
    outcome, events, server = run(
        tmp_path,
        [
            Reply([text("done")]),
            Reply([text("ok")]),
        ],
        selections=[Reply([text("QUESTION: limit-no-stopping\nREASON: stopped")])],
        config=make_config(review_mode="review", budgets=Budgets(steps=2)),
        reviewer=reviewer,
    )
    decided = payloads(events, "question_decided")[0]
    assert decided == {
        "question_ref": "q-t1-0",
        "action": "edit",
        "text": "What does the cache do here?",
        "by": "reviewer",
        "original_text": BANK["limit-no-stopping"].text,
        "reviewer": "alice",
    }
    assert last_user_text(server.turn_requests[1]) == "What does the cache do here?"
    statuses = [p["status"] for p in payloads(events, "status")]
    assert statuses[:3] == ["running", "waiting_review", "running"]


def test_a_veto_leads_to_another_question_never_the_vetoed_one(tmp_path):
    reviewer = ScriptedReviewer([Decision("veto", reviewer="bob"), Decision("approve", reviewer="bob")])
    # The model names the vetoed question again; the loop does not offer it, so the rule picks another.
    outcome, events, server = run(
        tmp_path,
        [Reply([text("done")]), Reply([text("ok")])],
        selections=[
            Reply([text("QUESTION: limit-no-stopping\nREASON: first pick")]),
            Reply([text("QUESTION: limit-no-stopping\nREASON: same again")]),
        ],
        config=make_config(review_mode="review", budgets=Budgets(steps=2)),
        reviewer=reviewer,
    )
    proposed = payloads(events, "question_proposed")
    assert [p["attempt"] for p in proposed][:2] == [0, 1]
    assert proposed[0]["bank_key"] == "limit-no-stopping"
    assert proposed[1]["bank_key"] != "limit-no-stopping" and proposed[1]["by"] == "rule"
    second_prompt = [r["body"] for r in server.requests if not r["body"].get("tools")][1]
    assert "limit-no-stopping" not in second_prompt["messages"][0]["content"][0]["text"]
    assert last_user_text(server.turn_requests[1]) == BANK[proposed[1]["bank_key"]].text
    assert [d["action"] for d in payloads(events, "question_decided")][:2] == ["veto", "approve"]


def test_a_reviewer_can_write_their_own_question(tmp_path):
    reviewer = ScriptedReviewer([Decision("replace", text="Have you tried transposing B first?")])
    outcome, events, server = run(
        tmp_path,
        [Reply([text("done")]), Reply([text("ok")])],
        selections=[Reply([text("QUESTION: limit-no-stopping\nREASON: x")])],
        config=make_config(review_mode="review", budgets=Budgets(steps=2)),
        reviewer=reviewer,
    )
    assert last_user_text(server.turn_requests[1]) == "Have you tried transposing B first?"


def test_an_unanswered_review_is_approved_when_the_timeout_runs_out(tmp_path):
    outcome, events, server = run(
        tmp_path,
        [Reply([text("done")]), Reply([text("ok")])],
        selections=[Reply([text("QUESTION: limit-no-stopping\nREASON: x")])],
        config=make_config(review_mode="review_timeout", review_timeout_s=0.3, budgets=Budgets(steps=2)),
    )
    decided = payloads(events, "question_decided")[0]
    assert decided["action"] == "approve" and decided["by"] == "timeout"


def test_the_budgets_end_the_run(tmp_path):
    outcome, events, _ = run(
        tmp_path / "steps",
        [Reply([evaluate()]) for _ in range(3)],
        config=make_config(budgets=Budgets(steps=3)),
        evaluator=ScriptedEvaluator(),
    )
    assert (outcome.status, outcome.reason, outcome.steps) == ("failed", "budget_steps", 3)

    outcome, events, _ = run(
        tmp_path / "tokens",
        [Reply([evaluate()], input_tokens=600, output_tokens=100) for _ in range(5)],
        config=make_config(budgets=Budgets(tokens=1400)),
    )
    assert (outcome.reason, outcome.steps) == ("budget_tokens", 2)

    outcome, events, _ = run(
        tmp_path / "evals", [Reply([evaluate()]) for _ in range(5)], config=make_config(budgets=Budgets(evaluations=2))
    )
    assert outcome.reason == "budget_evaluations" and len(payloads(events, "evaluation")) == 2

    # claude-sonnet-4-6 at $3/$15 per million: 100k input tokens are $0.30 per turn.
    outcome, events, _ = run(
        tmp_path / "cost",
        [Reply([evaluate()], input_tokens=100_000, output_tokens=0) for _ in range(5)],
        config=make_config(budgets=Budgets(cost_usd=0.5)),
    )
    assert (outcome.reason, outcome.steps) == ("budget_cost", 2)
    assert payloads(events, "usage")[-1]["totals"]["cost_usd"] == 0.6

    outcome, events, _ = run(
        tmp_path / "wall",
        [Reply([tool_use("shell", {"command": "sleep 1.2"})]) for _ in range(5)],
        config=make_config(budgets=Budgets(wall_s=1.0)),
    )
    assert (outcome.reason, outcome.steps) == ("budget_wall", 1)


def test_a_model_server_that_never_answers_ends_the_run_at_its_wall_budget_not_its_own_timeouts(tmp_path):
    """The backend waited up to its timeout (600 s) for each of 8 tries, whatever the run's wall budget: a server
    that never answered held a run with a 2 s budget for more than an hour. Each try now waits only what the
    budget leaves, no try starts past it, and the run ends as the wall budget's."""
    release = threading.Event()

    def never_answers(request):
        release.wait(60)  # held until the test is over (the server's close waits for its handler)
        return Reply([text("too late")])

    server = MessagesServer(never_answers)
    with server:
        agent, trace = make_agent(
            tmp_path, anthropic_model(server), config=make_config(budgets=Budgets(wall_s=2.0)), evaluator=None
        )
        try:
            outcome = agent.run()
        finally:
            release.set()
            trace.close()
    assert outcome.reason == "budget_wall"
    assert agent.state.wall_s() < 30  # it did not wait for the server (60 s, or 600 s a try before)


def test_a_stream_that_trickles_past_the_wall_budget_ends_the_run_at_it(tmp_path):
    """A server that sends an event every 0.3 s never trips a read's timeout: the stream is read only until the
    wall budget runs out (before, this one's 100-odd events took half a minute, on a 2 s budget)."""
    slow = Reply([text("x" * 700)], delta_chars=7, event_gap_s=0.3)
    started = time.monotonic()
    outcome, events, _ = run(tmp_path, [slow] * 3, config=make_config(budgets=Budgets(wall_s=2.0)))
    assert outcome.reason == "budget_wall" and not payloads(events, "model_message")  # no reply was taken
    assert time.monotonic() - started < 20  # it stopped reading at the budget, not after the stream's 30 s


def test_the_cost_budget_ends_the_run_once_the_known_cost_alone_reaches_it_though_a_price_is_unknown(tmp_path):
    """A call of a model with no price makes the run's cost a floor (docs/protocol.md: `cost_usd` null), and the
    budget can no longer be held to the total; but once the calls whose price is known cost the budget alone,
    it is spent whatever the others cost. Before, one unknown price turned the cost budget off for the rest of
    the run: here the run went on to its step budget, $1.20 spent of a $0.50 budget."""
    outcome, events, _ = run(
        tmp_path,
        [Reply([evaluate()], model="my-local-model")]
        + [Reply([evaluate()], input_tokens=100_000, output_tokens=0) for _ in range(5)],  # $0.30 a turn
        config=make_config(budgets=Budgets(cost_usd=0.5, steps=6)),
    )
    assert (outcome.reason, outcome.steps) == ("budget_cost", 3)
    assert [u["cost_usd"] for u in payloads(events, "usage")] == [None, 0.3, 0.3]
    assert any("held to the calls whose price is known" in n["text"] for n in payloads(events, "note"))


def test_no_model_call_starts_once_a_budget_is_spent_not_even_a_question_selection(tmp_path):
    # claude-sonnet-4-6 at $3 per million input tokens: the first turn costs $0.03 of a $0.02 budget, and ends
    # short of the goal, a decision point whose question would take one more call.
    outcome, events, server = run(
        tmp_path,
        [Reply([text("I am done.")], input_tokens=10_000, output_tokens=0)],
        selections=[Reply([text("QUESTION: limit-no-stopping\nREASON: stopped")])],
        config=make_config(budgets=Budgets(cost_usd=0.02)),
    )
    assert (outcome.status, outcome.reason) == ("failed", "budget_cost")
    assert payloads(events, "decision_point")[0]["name"] == "stopped-short"
    assert [bool(r["body"].get("tools")) for r in server.requests] == [True]  # the turn, and no selection
    assert [(u["purpose"], u["totals"]["cost_usd"]) for u in payloads(events, "usage")] == [("turn", 0.03)]
    assert not payloads(events, "question_proposed")


def test_human_messages_pause_and_stop_take_effect_at_turn_boundaries(tmp_path):
    agent_box = {}

    def on_event(event):
        # While the first shell command's result is being recorded, a human writes and pauses; then resumes.
        if event["kind"] == "tool_result" and event["seq"] < 6:
            inbox = agent_box["agent"].inbox
            inbox.put(Directive("human_message", id="d1", text="Try blocking over k.", author="carol"))
            inbox.put(Directive("human_message", id="d1", text="(a duplicate delivery)"))
            inbox.put(Directive("pause", id="d2"))
            inbox.put(Directive("resume", id="d3"))
        if event["kind"] == "tool_result" and event["payload"]["output"].endswith("second\n"):
            agent_box["agent"].inbox.put(Directive("stop", id="d4"))

    server = MessagesServer(
        Script(
            [
                Reply([tool_use("shell", {"command": "echo first"})]),
                Reply([tool_use("shell", {"command": "echo second"})]),
                Reply([text("never asked")]),
            ]
        )
    )
    with server:
        agent, trace = make_agent(tmp_path, anthropic_model(server), extra_sinks=[on_event])
        agent_box["agent"] = agent
        outcome = agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    assert outcome.status == "stopped" and outcome.reason == "stopped_by_human"
    assert payloads(events, "human_message") == [
        {"text": "Try blocking over k.", "author": "carol", "directive_id": "d1"}
    ]
    assert [p["status"] for p in payloads(events, "status")] == ["running", "paused", "running", "stopped"]
    # Delivered with the tool result, before the model's second turn; the stop came before a third turn.
    assert "Try blocking over k." in last_user_text(server.turn_requests[1])
    assert len(server.turn_requests) == 2
