"""Replies that are valid JSON to Python's reader but that the loop could not send back or record: a lone surrogate
in a text block, NaN in a tool's input, two tool calls under one id. Each is taken as the model's mistake and the
run goes on; the trace stays strict JSON (hostile-model audit, findings 8 and 11). Through the real loop and the
real `anthropic` client, streamed and not."""

import json
import math

import pytest

from agentloop.config import Budgets
from agentloop.errors import ModelFailed
from agentloop.models.anthropic_backend import AnthropicModel
from agentloop.models.openai_backend import OpenAIModel
from agentloop.trace import TraceWriter
from tests.agentloop.chat_api import ChatServer, Failure
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "make it faster"}]}]


def strict_events(path) -> list[dict]:
    """The trace's events, read as strict JSON (NaN, Infinity refused) of UTF-8 (a lone surrogate refused)."""

    def refuse(constant):
        raise ValueError(f"{constant} in the trace")

    raw = path.read_bytes().decode("utf-8")
    return [json.loads(line, parse_constant=refuse) for line in raw.splitlines()]


def play(tmp_path, turns, stream=True, evaluator=None):
    turns = [*turns, Reply([tool_use("shell", {"command": "echo still here"})])]
    with MessagesServer(Script(turns)) as server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server, stream=stream),
            config=make_config(budgets=Budgets(steps=len(turns))),
            evaluator=evaluator or ScriptedEvaluator(),
        )
        outcome = agent.run()
        trace.close()
    assert outcome.reason == "budget_steps", outcome
    assert server.refusals == []  # every request the loop sent, the API would take
    events = strict_events(tmp_path / "trace.jsonl")
    assert payloads(events, "tool_result")[-1]["output"] == "[exit code 0]\nstill here\n"
    return events


@pytest.mark.parametrize("stream", [True, False])
def test_a_lone_surrogate_in_a_reply_is_replaced_and_the_run_goes_on(tmp_path, stream):
    events = play(
        tmp_path,
        [Reply([text("half a pair: \ud800 ends here"), tool_use("shell", {"command": "echo '\udc00'"})])],
        stream=stream,
    )
    first = payloads(events, "model_message")[0]
    assert first["content"][0]["text"] == "half a pair: \ufffd ends here"
    assert payloads(events, "tool_call")[0]["input"] == {"command": "echo '\ufffd'"}


@pytest.mark.parametrize("stream", [True, False])
def test_nan_in_a_tool_input_is_answered_as_invalid_input_and_nothing_runs(tmp_path, stream):
    events = play(
        tmp_path, [Reply([tool_use("shell", {"command": "touch ran", "timeout_s": math.nan})])], stream=stream
    )
    answer = payloads(events, "tool_result")[0]
    assert answer["is_error"] and answer["invalid_input"] and "not valid JSON" in answer["output"]
    assert "NaN" in answer["output"]
    assert not (tmp_path / "ws" / "ran").exists()


def test_two_tool_calls_under_one_id_are_each_answered_once_the_second_with_an_error(tmp_path):
    events = play(
        tmp_path,
        [
            Reply(
                [
                    tool_use("shell", {"command": "echo one"}, ident="toolu_same"),
                    tool_use("shell", {"command": "touch twice"}, ident="toolu_same"),
                ]
            )
        ],
    )
    calls = [b for b in payloads(events, "model_message")[0]["content"] if b["type"] == "tool_use"]
    ids = [b["id"] for b in calls]
    assert ids[0] == "toolu_same" and ids[1] != "toolu_same" and calls[1]["duplicate_of"] == "toolu_same"
    results = payloads(events, "tool_result")[:2]
    assert [r["call_id"] for r in results] == ids
    assert results[0]["output"] == "[exit code 0]\none\n"
    assert results[1]["is_error"] and results[1]["invalid_input"] and "'toolu_same'" in results[1]["output"]
    assert not (tmp_path / "ws" / "twice").exists()


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_name_that_is_not_a_string_is_answered_as_an_unknown_tool_and_the_run_goes_on(tmp_path, stream):
    """(hostile-model audit 2, finding 2: the tool_call event refused it, and the run ended internal_error)"""
    odd = {"type": "tool_use", "id": "toolu_odd", "name": {"shell": 1}, "input": {"command": "touch ran"}}
    events = play(tmp_path, [Reply([odd], stop_reason="tool_use")], stream=stream)
    answer = payloads(events, "tool_result")[0]
    assert answer["name"] == '{"shell": 1}' and answer["is_error"] and "unknown tool" in answer["output"]
    assert not (tmp_path / "ws" / "ran").exists()


def test_a_reply_of_odd_shapes_is_recorded_as_strings_and_the_run_goes_on(tmp_path):
    """A text that is a number, a stop reason that is one, a tool call without an id (a KeyError, then
    internal_error): recorded as the events declare them, the call without an id answered with an error."""
    blocks = [{"type": "text", "text": 5}, {"type": "tool_use", "name": "shell", "input": {"command": "touch ran"}}]
    events = play(tmp_path, [Reply(blocks, stop_reason=7)], stream=False)
    first = payloads(events, "model_message")[0]
    assert first["content"][0] == {"type": "text", "text": "5"} and first["stop_reason"] is None
    answer = payloads(events, "tool_result")[0]
    assert answer["call_id"] == first["content"][1]["id"] and answer["is_error"] and answer["invalid_input"]
    assert not (tmp_path / "ws" / "ran").exists()


def test_a_reply_whose_content_is_not_a_list_of_blocks_fails_the_call_clearly():
    model = AnthropicModel("claude-sonnet-4-6", settings={"api_key": "sk-test"})
    for content in ("GOAL MET", ["GOAL MET"]):
        with pytest.raises(ModelFailed, match="not a list of blocks") as failed:
            model._reply({"content": content, "usage": {"input_tokens": 1, "output_tokens": 1}})
        assert failed.value.charged_unread  # the run's cost becomes a floor


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def nested(levels: int) -> dict:
    value = {"command": "touch ran"}
    for _ in range(levels - 1):
        value = {"x": value}
    return value


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_input_nested_too_deep_is_answered_as_invalid_input_and_every_event_stays_storable(tmp_path, stream):
    """(hostile-model audit 2, finding 3: 60 levels made the model_message and tool_call deeper than the server and the
    trace import take, 64 levels an event; some thousand levels ended the run internal_error, RecursionError)"""
    events = play(
        tmp_path,
        [
            Reply([tool_use("shell", nested(60))]),
            Reply([dict(tool_use("shell", {}), streamed_input='{"x":' * 5000 + "1" + "}" * 5000)]),
        ][: 2 if stream else 1],  # the whole-JSON server writes the input it holds, not a text of 5,000 levels
        stream=stream,
    )
    for answer in payloads(events, "tool_result")[:-1]:
        assert answer["is_error"] and answer["invalid_input"], answer
    assert "deeper than 32 levels" in payloads(events, "tool_result")[0]["output"]
    assert max(depth(event) for event in events) <= 64
    assert not (tmp_path / "ws" / "ran").exists()


def test_an_openai_compatible_answer_nested_past_what_python_reads_fails_the_call_clearly():
    deep = '{"choices": [{"message": {"content": "x", "extra": ' + "[" * 5000 + "]" * 5000 + "}}]}"
    with ChatServer([Failure(200, body=deep)]) as s:
        with pytest.raises(ModelFailed, match="nests too deep") as failed:
            OpenAIModel("qwen", settings={"base_url": s.url, "max_retries": 0}).query("", MESSAGES, [], "turn")
    assert failed.value.charged_unread


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_call_under_an_id_an_earlier_turn_used_or_the_api_refuses_runs_under_an_id_of_its_own(tmp_path, stream):
    """(hostile-model audit 2, finding 5: it went back to the API as it came, which refuses the whole request, "tool_use
    ids must be unique", and the run ended model_error at its next turn)"""
    events = play(
        tmp_path,
        [
            Reply([tool_use("shell", {"command": "echo one"}, ident="toolu_again")]),
            Reply([tool_use("shell", {"command": "echo two"}, ident="toolu_again")]),
            Reply([tool_use("shell", {"command": "echo three"}, ident="toolu with spaces")]),
        ],
        stream=stream,
    )
    results = payloads(events, "tool_result")
    assert [r["output"] for r in results[:3]] == [f"[exit code 0]\n{n}\n" for n in ("one", "two", "three")]
    assert len({r["call_id"] for r in results}) == len(results) and results[0]["call_id"] == "toolu_again"
    renamed = [b for m in payloads(events, "model_message")[1:3] for b in m["content"] if b["type"] == "tool_use"]
    assert [b["renamed_from"] for b in renamed] == ["toolu_again", "toolu with spaces"]
    assert [b["id"] for b in renamed] == [r["call_id"] for r in results[1:3]]


class NonFiniteEvaluator(ScriptedEvaluator):
    def __call__(self, task, kernel_path, scenarios):
        return super().__call__(task, kernel_path, scenarios) | {"wall_s": math.inf, "odd": [math.nan]}


def test_a_verdict_with_non_finite_numbers_is_recorded_as_strict_json(tmp_path):
    events = play(tmp_path, [Reply([tool_use("evaluate", {"scenarios": "quick"})])], evaluator=NonFiniteEvaluator())
    [evaluation] = payloads(events, "evaluation")
    assert evaluation["result"]["wall_s"] is None and evaluation["result"]["odd"] == [None]


def test_the_trace_writer_refuses_a_non_finite_number_rather_than_write_a_line_that_is_not_json(tmp_path):
    trace = TraceWriter(tmp_path / "t.jsonl")
    with pytest.raises(ValueError):
        trace.write({"seq": 0, "kind": "note", "payload": {"x": math.nan}})
    trace.close()
