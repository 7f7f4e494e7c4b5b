"""A model's reply costs time linear in its size, and has a limit (agentloop.models.reply.REPLY_MAX_BYTES): past it
the call ends the run with a model_error that says so (hostile-model audit, finding 9: a streamed reply of 1 MB
in 7-character deltas took 120 s to assemble, 20 MB never finished)."""

import time
from types import SimpleNamespace

import pytest

from agentloop.config import Budgets
from agentloop.errors import ReplyTooLarge
from agentloop.models.anthropic_backend import read_stream
from agentloop.models.openai_backend import OpenAIModel
from agentloop.models.reply import REPLY_MAX_BYTES
from agentloop.trace import read_trace
from tests.agentloop.chat_api import ChatServer, answer
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use


def stream_of(pieces, kind="text"):
    """Raw stream events of one block whose deltas are `pieces` (stand-ins of the SDK's, by their `type`)."""

    def event(type_, **fields):
        return SimpleNamespace(type=type_, **fields)

    block = {"type": "text", "text": ""} if kind == "text" else {"type": "tool_use", "id": "t1", "name": "shell"}
    yield event("message_start", message=SimpleNamespace(to_dict=lambda **_: {"role": "assistant"}))
    yield event("content_block_start", index=0, content_block=SimpleNamespace(to_dict=lambda **_: dict(block)))
    for piece in pieces:
        delta = (
            SimpleNamespace(type="text_delta", text=piece)
            if kind == "text"
            else SimpleNamespace(type="input_json_delta", partial_json=piece)
        )
        yield event("content_block_delta", index=0, delta=delta)
    yield event("message_stop")


@pytest.mark.parametrize("kind", ["text", "tool_use"])
def test_a_long_streamed_reply_is_assembled_in_linear_time(kind):
    size = REPLY_MAX_BYTES - 100  # 7-character deltas: on the quadratic code this took minutes
    if kind == "text":
        pieces = ["abcdefg"] * (size // 7)
    else:
        pieces = ['{"command": "', *(["echo x;"] * ((size - 40) // 8)), '"}']
    started = time.monotonic()
    message = read_stream(stream_of(pieces, kind))
    assert time.monotonic() - started < 10
    [block] = message["content"]
    if kind == "text":
        assert len(block["text"]) == len(pieces) * 7
    else:
        assert block["input"]["command"].startswith("echo x;echo x;") and "raw_input" not in block


def test_a_streamed_reply_over_the_limit_ends_the_call_with_a_model_error():
    with pytest.raises(ReplyTooLarge, match=f"over the limit of {REPLY_MAX_BYTES:,} bytes on a reply"):
        read_stream(stream_of(["x" * 65536] * (REPLY_MAX_BYTES // 65536 + 1)))


@pytest.mark.parametrize("stream", [True, False])
def test_a_reply_over_the_limit_ends_the_run_as_a_model_error_through_the_real_client(tmp_path, stream):
    turns = [
        Reply([tool_use("shell", {"command": "echo first"})]),
        Reply([text("x" * (REPLY_MAX_BYTES + 10))], delta_chars=65536),
    ]
    with MessagesServer(Script(turns)) as server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server, stream=stream),
            config=make_config(budgets=Budgets(steps=5)),
            evaluator=ScriptedEvaluator(),
        )
        outcome = agent.run()
        trace.close()
    assert (outcome.status, outcome.reason) == ("failed", "model_error")
    assert len(server.requests) == 2  # not tried again: the model would send as much again
    events = read_trace(tmp_path / "trace.jsonl")
    [end] = [p for p in payloads(events, "status") if p["status"] == "failed"]
    assert f"over the limit of {REPLY_MAX_BYTES:,} bytes on a reply" in end["detail"]
    # the cut reply was charged, and its usage never read: the second call's usage event says its cost is unknown,
    # so the run's cost is a floor from there
    first, cut = payloads(events, "usage")
    assert first["cost_usd"] is not None and first["totals"]["cost_usd"] is not None
    assert (cut["cost_usd"], cut["totals"]["cost_usd"], cut["totals"]["model_calls"]) == (None, None, 2)


def test_an_openai_compatible_answer_over_the_limit_is_a_model_error():
    with ChatServer([answer("x" * (REPLY_MAX_BYTES + 10))]) as server:
        model = OpenAIModel("qwen3-coder", settings={"base_url": server.url, "backoff_base_s": 0.01})
        with pytest.raises(ReplyTooLarge, match=f"over the limit of {REPLY_MAX_BYTES:,} bytes on a reply"):
            model.query("s", [{"role": "user", "content": [{"type": "text", "text": "go"}]}], [], "turn")
