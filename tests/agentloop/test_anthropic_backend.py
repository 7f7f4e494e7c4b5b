"""The Anthropic backend with the real `anthropic` client against a local Messages-API server."""

import socket
from types import SimpleNamespace

import pytest

from agentloop.errors import ModelFailed
from agentloop.models.anthropic_backend import AnthropicModel
from tests.agentloop.messages_api import (
    Cut,
    Failure,
    MessagesServer,
    RawStream,
    Reply,
    Script,
    broken_tool_use,
    text,
    tool_use,
)

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "make it faster"}]}]
TOOLS = [{"name": "shell", "description": "run", "input_schema": {"type": "object", "properties": {}}}]


def model(server, notes=None, stream=True, **settings):
    return AnthropicModel(
        "claude-sonnet-4-6",
        notify=(notes.append if notes is not None else None),
        settings={"api_key": "sk-test", "base_url": server.url, "stream": stream, "backoff_base_s": 0.01, **settings},
    )


@pytest.mark.parametrize("stream", [True, False])
def test_tool_use_reply_is_read_whole_streaming_or_not(stream):
    call = tool_use("shell", {"command": "ls -la", "nested": {"a": [1, 2]}})
    with MessagesServer(Script([Reply([text("Looking around first."), call], input_tokens=50, output_tokens=9)])) as s:
        reply = model(s, stream=stream).query("system", MESSAGES, TOOLS, "turn")
    assert reply.text == "Looking around first."
    assert reply.tool_uses == [call]
    assert reply.stop_reason == "tool_use"
    assert (reply.usage.tokens_in, reply.usage.tokens_out) == (50, 9)
    assert s.requests[0]["body"].get("stream", False) is stream


def test_a_streamed_tool_input_that_is_not_json_is_kept_as_sent_and_the_rest_of_the_reply_with_it():
    broken = broken_tool_use("shell", '{"command": "ls" "-la"}')
    good = tool_use("editor", {"command": "view", "path": "kernel.cpp"})
    with MessagesServer(Script([Reply([text("Two things."), broken, good])])) as s:
        reply = model(s).query("system", MESSAGES, TOOLS, "turn")
    assert reply.content == [
        {"type": "text", "text": "Two things."},
        {"type": "tool_use", "id": broken["id"], "name": "shell", "input": {}, "raw_input": '{"command": "ls" "-la"}'},
        good,
    ]
    assert reply.stop_reason == "tool_use"


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_input_that_is_not_an_object_comes_back_as_the_model_sent_it(stream):
    call = tool_use("shell", ["ls", "-la"])
    with MessagesServer(Script([Reply([call])])) as s:
        reply = model(s, stream=stream).query("system", MESSAGES, TOOLS, "turn")
    assert reply.tool_uses == [call]


@pytest.mark.parametrize("status", [429, 529, 500])
def test_rate_limits_and_overload_are_retried_with_a_note(status):
    script = Script([Failure(status, {"retry-after": "0"}), Failure(status), Reply([text("ok")])])
    notes = []
    with MessagesServer(script) as s:
        reply = model(s, notes).query("system", MESSAGES, TOOLS, "turn")
    assert reply.text == "ok"
    assert s.failures_served == [status, status]
    assert len(notes) == 2 and f"HTTP {status}" in notes[0]


def test_retries_give_up_after_the_limit():
    with MessagesServer(Script([Failure(529)] * 5)) as s:
        with pytest.raises(ModelFailed):
            model(s, max_retries=2).query("system", MESSAGES, TOOLS, "turn")
    assert s.failures_served == [529, 529, 529]


BUILD = tool_use("shell", {"command": "make kernel && ./bench --size 4096 --repeat 20"})
# message_start, the text block (its start and 3 deltas) left whole, then the tool call's start and 2 of its
# input's deltas: what a cut there leaves of the reply
CUT_AT = 9


@pytest.mark.parametrize("ending", ["close", "drop", "overloaded"])
def test_a_stream_that_stops_short_is_retried_and_its_tool_call_comes_whole(ending):
    # On 62245a7 a closed connection (no message_stop) ended the turn as end_turn with the call cut to `{}`, and
    # a dropped link or a mid-stream overloaded_error failed the call without a retry.
    whole = Reply([text("Building it first."), BUILD])
    notes = []
    with MessagesServer(Script([Cut(whole, CUT_AT, ending), whole])) as s:
        reply = model(s, notes).query("system", MESSAGES, TOOLS, "turn")
    assert s.cuts_served == [ending] and len(s.requests) == 2
    assert reply.tool_uses == [BUILD] and reply.stop_reason == "tool_use"
    assert reply.text == "Building it first."
    assert len(notes) == 1 and "retry 1 of 8" in notes[0], notes
    # the cut attempt had begun its reply, which may have been charged, and its usage never came: the call's cost
    # is unknown, so the run's becomes a floor
    assert reply.usage.cost_usd is None and reply.usage.tokens_out == whole.output_tokens


START = ("message_start", {"type": "message_start", "message": Reply([]).message("msg_1") | {"stop_reason": None}})
END = [
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
    ("message_stop", {"type": "message_stop"}),
]


def block_start(index, block):
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def delta(index, **fields):
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": fields})


def test_a_stream_that_interleaves_its_blocks_is_put_together_by_their_index():
    """(hostile-model audit 2, finding 4: blocks were kept in the order they began, so each delta went to another
    block's index: the text was lost and the tool ran with no input)"""
    events = [
        START,
        block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}),
        block_start(0, {"type": "text", "text": ""}),
        delta(1, type="input_json_delta", partial_json='{"command": '),
        delta(0, type="text_delta", text="Listing first."),
        delta(1, type="input_json_delta", partial_json='"ls"}'),
        *END,
    ]
    with MessagesServer(Script([RawStream(events)])) as s:
        reply = model(s).query("system", MESSAGES, TOOLS, "turn")
    assert reply.content == [
        text("Listing first."),
        {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}},
    ]


@pytest.mark.parametrize(
    "broken",
    [
        [delta(0, type="text_delta", text="before its start")],
        [block_start(0, {"type": "text", "text": ""}), delta(3, type="text_delta", text="of no block")],
        [("content_block_start", {"type": "content_block_start", "index": 0})],
    ],
)
def test_a_stream_event_that_names_no_block_is_a_broken_stream_tried_again_and_charged(broken):
    """(finding 4: IndexError or AttributeError ended the run internal_error, the call's cost never counted)"""
    whole = Reply([text("whole")])
    with MessagesServer(Script([RawStream([START, *broken, *END]), whole])) as s:
        notes = []
        reply = model(s, notes).query("system", MESSAGES, TOOLS, "turn")
    assert reply.text == "whole" and reply.usage.cost_usd is None  # the broken attempt may have been charged
    assert "stream broke" in notes[0]


def test_a_message_delta_without_usage_keeps_what_message_start_said():
    events = [START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="hi")]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}), END[1]]
    with MessagesServer(Script([RawStream(events)])) as s:
        reply = model(s).query("system", MESSAGES, TOOLS, "turn")
    assert reply.text == "hi" and reply.usage.tokens_in == 100


def test_a_whole_reply_at_the_first_attempt_has_its_cost():
    with MessagesServer(Script([Reply([text("Building it first."), BUILD])])) as s:
        reply = model(s).query("system", MESSAGES, TOOLS, "turn")
    assert reply.usage.cost_usd is not None and reply.usage.cost_usd > 0


def test_a_stream_cut_again_and_again_fails_after_the_retry_limit_saying_why():
    whole = Reply([text("Building it first."), BUILD])
    with MessagesServer(Script([Cut(whole, CUT_AT)] * 3 + [whole])) as s:
        with pytest.raises(ModelFailed, match="without message_stop") as failed:
            model(s, max_retries=2).query("system", MESSAGES, TOOLS, "turn")
    assert s.cuts_served == ["close"] * 3
    assert failed.value.charged_unread  # the agent emits a usage event of unknown cost for it


def test_a_connection_never_made_charged_nothing():
    with socket.socket() as closed:  # a port with nobody listening: every attempt is refused at the connect
        closed.bind(("127.0.0.1", 0))
        nobody = SimpleNamespace(url=f"http://127.0.0.1:{closed.getsockname()[1]}")
        with pytest.raises(ModelFailed, match="APIConnectionError") as failed:
            model(nobody, max_retries=1).query("system", MESSAGES, TOOLS, "turn")
    assert not failed.value.charged_unread


def test_a_bad_request_is_not_retried():
    with MessagesServer(Script([Failure(400), Reply([text("never")])])) as s:
        with pytest.raises(ModelFailed) as failed:
            model(s).query("system", MESSAGES, TOOLS, "turn")
    assert s.failures_served == [400]
    assert not failed.value.charged_unread  # refused before any reply began: nothing was charged


def test_the_stable_prefix_and_the_newest_message_carry_cache_breakpoints():
    messages = MESSAGES + [
        {"role": "assistant", "content": [text("hi")]},
        {"role": "user", "content": [text("first"), text("second")]},
    ]
    with MessagesServer(Script([Reply([text("ok")])])) as s:
        model(s).query("the system prompt", messages, TOOLS, "turn")
    body = s.requests[0]["body"]
    assert body["system"] == [{"type": "text", "text": "the system prompt", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][-1]["content"][0]
    assert "cache_control" not in body["messages"][0]["content"][0]
    assert messages[-1]["content"][-1] == text("second")  # the caller's conversation is not modified


def test_cost_counts_cached_tokens_at_their_price():
    reply = Reply([text("ok")], input_tokens=1000, output_tokens=100, cache_read=10000, cache_write=2000)
    with MessagesServer(Script([reply])) as s:
        usage = model(s).query("system", MESSAGES, TOOLS, "turn").usage
    assert usage.tokens_in == 13000 and usage.cache_read_tokens == 10000 and usage.cache_write_tokens == 2000
    # claude-sonnet-4-6: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens
    assert usage.cost_usd == pytest.approx((1000 * 3 + 100 * 15 + 10000 * 0.30 + 2000 * 3.75) / 1e6)


def test_an_unknown_model_has_an_unknown_cost_not_a_guess():
    with MessagesServer(Script([Reply([text("ok")], model="someone-elses-model")])) as s:
        usage = model(s).query("system", MESSAGES, TOOLS, "turn").usage
    assert usage.cost_usd is None


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    "counts",
    [
        {"input_tokens": -(10**9)},
        {"output_tokens": 10**20},
        {"output_tokens": 2**31 - 1},  # a count, but $32,000 at $15 a million: past the server's cost column
        {"input_tokens": 2**31 - 1, "cache_read": 2**31 - 1},  # counts, but tokens_in past the server's column
        {"input_tokens": "lots"},
        {"output_tokens": 2.5},
    ],
)
def test_usage_counts_that_are_not_counts_make_the_cost_unknown_never_negative_or_a_crash(stream, counts):
    """A negative count made the cost negative (paying the cost budget back), one past the server's columns had its
    usage event refused, and text ended the run internal_error: each is unknown, the cost a floor."""
    reply = Reply([text("ok")], **{"input_tokens": 100, "output_tokens": 20, **counts})
    with MessagesServer(Script([reply])) as s:
        usage = model(s, stream=stream).query("system", MESSAGES, TOOLS, "turn").usage
    assert usage.cost_usd is None
    assert 0 <= usage.tokens_in <= 2**31 - 1 and 0 <= usage.tokens_out <= 2**31 - 1


def test_a_reply_without_usage_has_an_unknown_cost_not_zero():
    reply = AnthropicModel("claude-sonnet-4-6", settings={"api_key": "sk-test"})._reply(
        {"content": [text("ok")], "model": {"not": "a name"}, "usage": "lots"}
    )
    assert reply.usage.cost_usd is None and reply.model == "claude-sonnet-4-6"


def test_the_api_key_comes_from_the_environment_and_a_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelFailed, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-sonnet-4-6")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    with MessagesServer(Script([Reply([text("ok")])])) as s:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", s.url)
        AnthropicModel("claude-sonnet-4-6", settings={"stream": False}).query("s", MESSAGES, TOOLS, "turn")
    headers = {k.lower(): v for k, v in s.requests[0]["headers"].items()}
    # This SDK version may send the key as x-api-key or as a bearer token; either way it is the environment's key.
    assert "sk-from-env" in (headers.get("x-api-key", ""), headers.get("authorization", "").removeprefix("Bearer "))


def test_a_missing_key_for_an_id_that_is_not_claudes_says_how_to_name_other_models(monkeypatch):
    # `gpt-4o` without `openai:` is taken for an Anthropic id: the missing key alone did not say what went wrong
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelFailed) as other:
        AnthropicModel("gpt-4o")
    assert "no Anthropic API key" in str(other.value) and "openai:gpt-4o" in str(other.value)
    with pytest.raises(ModelFailed) as claude:
        AnthropicModel("claude-sonnet-4-6")
    assert "openai:" not in str(claude.value)
