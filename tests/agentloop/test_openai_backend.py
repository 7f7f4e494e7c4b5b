"""The OpenAI-compatible backend (`openai:MODEL`) against a local server speaking `/v1/chat/completions`: the
translation both ways, retries, errors, and a whole run of the loop on it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.config import Budgets
from agentloop.errors import ModelFailed
from agentloop.models import make_model
from agentloop.models.openai_backend import OpenAIModel
from agentloop.trace import read_trace
from tests.agentloop.chat_api import ChatServer, Cut, Failure, answer, call
from tests.agentloop.helpers import ScriptedEvaluator, make_agent, make_config, payloads
from tests.agentloop.test_loop import FAST

REPO = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "make it faster"}]}]
TOOLS = [
    {
        "name": "shell",
        "description": "run a command",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]


def model(server, notes=None, **settings):
    return OpenAIModel(
        "qwen3-coder",
        notify=(notes.append if notes is not None else None),
        settings={"base_url": server.url, "backoff_base_s": 0.01, **settings},
    )


def test_a_tool_call_comes_back_as_a_tool_use_block_with_usage():
    with ChatServer(
        [
            answer(
                "Looking first.",
                [call("shell", {"command": "ls -la"}, "call_1")],
                prompt_tokens=500,
                completion_tokens=40,
                cached_tokens=300,
            )
        ]
    ) as s:
        reply = model(s, api_key="sk-local").query("the system", MESSAGES, TOOLS, "turn")
    assert reply.content == [
        {"type": "text", "text": "Looking first."},
        {"type": "tool_use", "id": "call_1", "name": "shell", "input": {"command": "ls -la"}},
    ]
    assert reply.stop_reason == "tool_use" and reply.model == "qwen3-coder"
    assert (reply.usage.tokens_in, reply.usage.tokens_out, reply.usage.cache_read_tokens) == (500, 40, 300)
    assert reply.usage.cost_usd is None  # a model of one's own has no price in the table
    body = s.requests[0]["body"]
    assert body["model"] == "qwen3-coder" and "stream" not in body
    assert body["messages"] == [
        {"role": "system", "content": "the system"},
        {"role": "user", "content": "make it faster"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "shell", "description": "run a command", "parameters": TOOLS[0]["input_schema"]},
        }
    ]
    assert {k.lower(): v for k, v in s.requests[0]["headers"].items()}["authorization"] == "Bearer sk-local"


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -100, "completion_tokens": 5},
        {"prompt_tokens": "lots", "completion_tokens": 5},
        {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 500}},
        "lots",
    ],
)
def test_usage_counts_that_are_not_counts_make_the_cost_unknown_never_negative_or_a_crash(usage):
    """Priced by its name (a proxy of Claude): a negative count made the cost negative, and text ended the run internal_error."""
    whole = answer("ok", model="claude-sonnet-4-6")
    assert OpenAIModel("claude-sonnet-4-6", settings={"base_url": "http://x"})._reply(whole).usage.cost_usd is not None
    reply = OpenAIModel("claude-sonnet-4-6", settings={"base_url": "http://x"})._reply(whole | {"usage": usage})
    assert reply.usage.cost_usd is None and reply.usage.tokens_in >= 0 and reply.usage.tokens_out >= 0


def test_without_a_key_no_authorization_is_sent_and_a_question_selection_sends_no_tools(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer([answer("QUESTION: limit-evidence", finish="stop")]) as s:
        reply = model(s).query("", MESSAGES, [], "select_question")
    assert reply.text == "QUESTION: limit-evidence" and reply.stop_reason == "end_turn"
    assert "authorization" not in {k.lower() for k in s.requests[0]["headers"]}
    assert "tools" not in s.requests[0]["body"] and s.requests[0]["body"]["messages"][0]["role"] == "user"


def test_the_conversation_is_translated_tool_results_first_then_text():
    conversation = MESSAGES + [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Two things."},
                {"type": "tool_use", "id": "call_a", "name": "shell", "input": {"command": "a"}},
                {"type": "tool_use", "id": "call_b", "name": "shell", "input": {"command": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "out a"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "boom", "is_error": True},
                {"type": "text", "text": "A human: try blocking."},
            ],
        },
    ]
    with ChatServer([answer("ok")]) as s:
        model(s).query("sys", conversation, TOOLS, "turn")
    sent = s.requests[0]["body"]["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": "Two things.",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "shell", "arguments": '{"command": "a"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "shell", "arguments": '{"command": "b"}'}},
        ],
    }
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "out a"},
        {"role": "tool", "tool_call_id": "call_b", "content": "[error] boom"},
        {"role": "user", "content": "A human: try blocking."},
    ]


def test_arguments_that_are_not_json_are_kept_as_raw_input_and_a_value_not_an_object_as_it_is():
    with ChatServer([answer(None, [call("shell", "{not json", ""), call("shell", "[1]"), call("shell", "")])]) as s:
        reply = model(s).query("s", MESSAGES, TOOLS, "turn")
    first, second, third = reply.tool_uses
    assert first["input"] == {} and first["raw_input"] == "{not json" and first["id"].startswith("call_kseek_")
    assert second["input"] == [1] and "raw_input" not in second
    assert third["input"] == {} and "raw_input" not in third


def test_tool_calls_of_odd_shapes_are_the_models_mistakes_answered_by_the_loop_and_a_broken_answer_fails_clearly():
    """(hostile-model audit 2, finding 2: each of these raised TypeError or AttributeError, and the run ended
    internal_error; arguments of 0, false or [] ran the tool with no input at all)"""
    odd = answer(None, [call("shell", "{}", "c1"), call("shell", "{}", "c2"), call("shell", "{}", "c3")])
    calls = odd["choices"][0]["message"]["tool_calls"]
    calls[0]["function"]["arguments"], calls[1]["function"]["arguments"], calls[2]["function"] = 0, ["ls"], "shell"
    odd["choices"][0]["finish_reason"] = {"why": "no"}
    reply = OpenAIModel("qwen", settings={"base_url": "http://x"})._reply(odd)
    assert [b["input"] for b in reply.tool_uses] == [0, ["ls"], {}] and reply.tool_uses[2]["name"] == ""
    assert reply.stop_reason == "tool_use"
    parts = answer(None)
    parts["choices"][0]["message"]["content"] = [{"type": "text", "text": "kept"}, {"text": 5}, "GOAL MET"]
    assert OpenAIModel("qwen", settings={"base_url": "http://x"})._reply(parts).text == "kept"
    broken = [answer("x") | {"choices": [{"message": "GOAL MET"}]}, answer("x")]
    broken[1]["choices"][0]["message"]["tool_calls"] = {"id": "c1"}
    for each in broken:
        with pytest.raises(ModelFailed):
            OpenAIModel("qwen", settings={"base_url": "http://x"})._reply(each)


def test_a_model_that_keeps_sending_arguments_that_are_not_json_ends_the_run_as_invalid_tool_input(tmp_path):
    """As on the Anthropic backend (docs/protocol.md 1.2): each such call is answered as input that is not valid
    JSON, and max_invalid_inputs of them in a row end the run. Before, the arguments reached the tool as
    `{"_raw_arguments": ...}`, which it answered "missing parameter `command`", and the run went on until a budget
    ended it."""
    script = [answer(None, [call("shell", '{"command": "ls')]) for _ in range(8)]
    with ChatServer(script) as s:
        agent, trace = make_agent(
            tmp_path,
            make_model("openai:qwen3-coder", {"base_url": s.url}),
            config=make_config(model="openai:qwen3-coder", budgets=Budgets(steps=8)),
            evaluator=ScriptedEvaluator({}),
        )
        outcome = agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    assert (outcome.status, outcome.reason) == ("failed", "invalid_tool_input")
    results = payloads(events, "tool_result")
    assert len(results) == 5 and all(r["invalid_input"] and "not valid JSON" in r["output"] for r in results)
    assert payloads(events, "tool_call")[0]["raw_input"] == '{"command": "ls'
    # what went back to the model is its call with an empty object, as the API takes it
    assert s.turn_requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize(
    "failure",
    [Failure(429, {"retry-after": "0"}), Failure(503), Failure(529), Failure(200, body="<html>bad gateway</html>")],
)
def test_passing_failures_are_retried_with_a_note(failure):
    notes = []
    with ChatServer([failure, failure, answer("ok")]) as s:
        reply = model(s, notes).query("s", MESSAGES, TOOLS, "turn")
    assert reply.text == "ok" and s.failures_served == [failure.status] * 2
    assert len(notes) == 2 and "retry 1 of" in notes[0]


@pytest.mark.parametrize("ending", ["drop", "close"])
def test_an_answer_cut_short_is_retried_and_its_tool_call_comes_whole(ending):
    # On 62245a7 a body short of its announced length raised http.client.IncompleteRead out of the backend: not
    # retried, and not even a ModelFailed.
    whole = answer("Building first.", [call("shell", {"command": "make kernel && ./bench --size 4096"})])
    notes = []
    with ChatServer([Cut(whole, keep=120, ending=ending), whole]) as s:
        reply = model(s, notes).query("s", MESSAGES, TOOLS, "turn")
    assert s.cuts_served == [ending] and len(s.requests) == 2
    assert [b["input"] for b in reply.tool_uses] == [{"command": "make kernel && ./bench --size 4096"}]
    assert reply.stop_reason == "tool_use" and len(notes) == 1 and "retry 1 of 8" in notes[0]
    with ChatServer([Cut(whole, keep=120, ending=ending)] * 2) as s:
        with pytest.raises(ModelFailed, match="the model call failed") as failed:
            model(s, max_retries=1).query("s", MESSAGES, TOOLS, "turn")
    assert s.cuts_served == [ending] * 2
    assert failed.value.charged_unread  # bodies that began and stopped may have been charged: the cost is a floor


def test_retries_give_up_after_the_limit_and_a_bad_request_is_not_retried():
    with ChatServer([Failure(503)] * 4) as s:
        with pytest.raises(ModelFailed, match="HTTP 503"):
            model(s, max_retries=2).query("s", MESSAGES, TOOLS, "turn")
    assert s.failures_served == [503, 503, 503]
    with ChatServer([Failure(400, body='{"error": {"message": "tools not supported"}}'), answer("never")]) as s:
        with pytest.raises(ModelFailed, match="tools not supported"):
            model(s).query("s", MESSAGES, TOOLS, "turn")
    assert s.failures_served == [400]
    with ChatServer([{"object": "error", "message": "no choices"}]) as s:
        with pytest.raises(ModelFailed, match="no choices"):
            model(s).query("s", MESSAGES, TOOLS, "turn")


def test_an_unreachable_server_is_retried_then_a_clear_failure():
    notes = []
    with ChatServer([]) as s:
        url = s.url
    with pytest.raises(ModelFailed, match="the model call failed"):
        OpenAIModel(
            "m", notify=notes.append, settings={"base_url": url, "max_retries": 1, "backoff_base_s": 0.01}
        ).query("s", MESSAGES, TOOLS, "turn")
    assert len(notes) == 1


def test_the_base_url_and_key_come_from_the_environment_and_a_missing_url_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelFailed, match="OPENAI_BASE_URL"):
        make_model("openai:qwen3-coder")
    with ChatServer([answer("ok")]) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        make_model("openai:qwen3-coder").query("s", MESSAGES, TOOLS, "turn")
    assert {k.lower(): v for k, v in s.requests[0]["headers"].items()}["authorization"] == "Bearer sk-env"


def test_a_run_of_the_loop_on_an_openai_compatible_model(tmp_path):
    evaluator = ScriptedEvaluator({"fast version": ("correct", 2.5)})
    script = [
        Failure(429, {"retry-after": "0"}),
        answer("Reading the kernel.", [call("shell", {"command": "head -3 kernel.cpp"}, "call_r")]),
        answer(None, [call("editor", {"command": "create", "path": "kernel.cpp", "file_text": FAST}, "call_e")]),
        Failure(503),
        answer(None, [call("evaluate", {"scenarios": "quick"}, "call_v")]),
    ]
    with ChatServer(script) as s:
        agent, trace = make_agent(
            tmp_path,
            make_model("openai:qwen3-coder", {"base_url": s.url, "backoff_base_s": 0.01}),
            config=make_config(model="openai:qwen3-coder", budgets=Budgets(steps=10)),
            evaluator=evaluator,
        )
        outcome = agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    assert (outcome.status, outcome.reason) == ("succeeded", "goal_met")
    assert [(e["purpose"], e["goal_met"]) for e in payloads(events, "evaluation")] == [
        ("tool", False),
        ("goal_check", True),
    ]
    assert (tmp_path / "ws" / "kernel.cpp").read_text() == FAST
    # Each retry is a note in the trace; usage is counted with an unknown cost.
    assert [n["text"].split(";")[0] for n in payloads(events, "note") if "retry" in n["text"]] == [
        "model call failed (HTTP 429)",
        "model call failed (HTTP 503)",
    ]
    assert payloads(events, "usage")[-1]["totals"] == {
        "tokens_in": 360,
        "tokens_out": 90,
        "cost_usd": None,
        "model_calls": 3,
    }
    # The second turn's request carried the shell's output as the answer to its call.
    second = s.turn_requests[2]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_r"
    assert "// matmul_cpu starting kernel" in second[-1]["content"]
    assert second[-2]["tool_calls"][0]["id"] == "call_r"


def test_the_cli_refuses_openai_without_a_base_url_clearly(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_", "OPENAI_"))}
    env.update({"PYTHONPATH": str(REPO), "KSEEK_AGENT_RUNS": str(tmp_path / "runs")})
    for spec, message in (("openai:qwen3-coder", "OPENAI_BASE_URL"), ("openai:", "needs the model's name")):
        proc = subprocess.run(
            # --unsandboxed: where no sandbox works the run is refused for that first; nothing runs here
            [sys.executable, "-m", "agentloop", "run", "--unsandboxed", "--task", "matmul_cpu", "--model", spec],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
