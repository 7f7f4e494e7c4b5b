"""What a model call returns, in one shape for every backend: the content blocks (Messages-API shape), the stop
reason and the call's usage. Its own module, below the backends and agentloop/interfaces.py, so that each can import
it without importing the package that picks a backend (no import cycle: tests/foundation/test_layering.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from agentloop.json_safe import json_safe, nests_deeper, non_finite
from agentloop.prices import cost_usd

# The most a model's reply may hold, in bytes (the streamed text, thinking and tool inputs in UTF-8, or a whole
# JSON answer): far above a reply of max_tokens (8,192 by default, some 32 KB of text), and half the largest event
# the server stores (agentloop.protocol.EVENT_MAX_BYTES), which its model_message must fit. Past it the call ends
# the run, `model_error` (docs/protocol.md 1.2, `model_message`).
REPLY_MAX_BYTES = 2 * 2**20


# The deepest a tool's input may nest objects and arrays. Far deeper than any tool's parameters (flat), and shallow
# enough that the model_message holding it (the input at its fifth level) stays within the nesting every reader of an
# event holds it to (runs.event_parser.EVENT_MAX_DEPTH, 64): past it the server refused the run's events for good
# and the run's own trace could not be imported (docs/protocol.md 1.3), and some thousand levels raised
# RecursionError, which ended the run internal_error.
TOOL_INPUT_MAX_DEPTH = 32


def json_text(value: object) -> str:
    """`value` as JSON text (NaN written as Python does), or a note where it nests too deep to be written."""
    try:
        return json.dumps(value)
    except RecursionError:
        return "(nested too deep to write out)"


def reply_too_large(size: int, limit: int = REPLY_MAX_BYTES) -> str:
    return (
        f"the model's reply passed {size:,} bytes, over the limit of {limit:,} bytes on a reply "
        "(the model's max_reply_bytes setting, REPLY_MAX_BYTES unless set): the call was ended"
    )


# The most tokens one count of a call's usage may say: the server's integer columns (runs.event_parser.INT_COLUMN_MAX,
# docs/protocol.md 1.1), which refuse a usage event past it for good, so that the call would count on no page.
TOKEN_COUNT_MAX = 2**31 - 1
# The most one call's cost may be, in dollars: below the server's cost column (runs.event_parser.STEP_COST_LIMIT,
# docs/protocol.md 1.1), which refuses a usage event at or past it for good. No call costs that much (a million
# tokens out of the dearest model cost $75); counts that make it so are counted, their cost unknown.
CALL_COST_LIMIT = 10_000.0


def token_count(value: object, required: bool = True) -> int | None:
    """A count of a reply's usage as the server sent it, when it is a whole number from 0 to TOKEN_COUNT_MAX; None
    when it is anything else (negative, past the limit, a fraction, text, NaN, or absent where the API always sends
    it), which the caller counts as unknown. An optional count (a cache's) that is absent is 0."""
    if value is None:
        return None if required else 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= TOKEN_COUNT_MAX:
        return value
    return None


@dataclass
class Usage:
    tokens_in: int = 0  # every input token: uncached + cache reads + cache writes
    tokens_out: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None: the price of this model is not known


@dataclass
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str
    model: str
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text").strip()

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]


def usage_of(model: str, uncached: int | None, out: int | None, read: int | None, written: int | None) -> Usage:
    """A call's usage from its counts (token_count's: None where unreadable). One count unreadable makes the cost
    unknown (None, so the run's cost reads as a floor) and counts that one as 0: a negative count made the cost
    negative, which paid the cost budget back and which the server refuses, and a count the server's columns cannot
    hold was refused with its usage event, so that the call counted on no page. So is a cost the server's column
    cannot hold (CALL_COST_LIMIT): the call's tokens are counted, its cost unknown."""
    uncached_n, out_n, read_n, written_n = (n or 0 for n in (uncached, out, read, written))
    cost = None if None in (uncached, out, read, written) else cost_usd(model, uncached_n, out_n, read_n, written_n)
    tokens_in = uncached_n + read_n + written_n  # three counts within the limit may sum past it
    if cost is None or cost >= CALL_COST_LIMIT or tokens_in > TOKEN_COUNT_MAX:
        cost = None
    return Usage(
        tokens_in=min(tokens_in, TOKEN_COUNT_MAX),  # at least this many: a floor, as the cost is then
        tokens_out=out_n,
        cache_read_tokens=read_n,
        cache_write_tokens=written_n,
        cost_usd=cost,
    )


# What the Messages API takes as a tool_use id ("String should match pattern"): a block under another is refused
# with the whole request, so the run would end model_error at its next turn.
TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")


def received(reply: ModelReply, earlier_ids: Collection[object] = ()) -> ModelReply:
    """The reply as the loop keeps it, records it and sends it back, whatever the model sent: lone surrogates
    replaced (the API and the trace take only UTF-8); a tool input holding NaN or an infinity (not JSON, though
    Python's reader takes it) kept as the `raw_input` of an empty input, which the loop answers as invalid input;
    a tool_use whose id is missing or repeats an earlier one of the reply given an id of its own, its
    `duplicate_of` naming the id it repeated, which the loop answers with an error. So every tool_use is answered
    exactly once, under its own id (hostile-model audit, findings 8 and 11). A tool input nested deeper than
    TOOL_INPUT_MAX_DEPTH is kept as `raw_input` likewise, its `too_deep` naming the limit (audit 2, finding 3). A
    tool name, a text or a stop reason that is not a string (a number, an object) is kept as its JSON text, a stop
    reason as null: the events that record them declare strings (docs/protocol.md 1.2), and one of another type
    ended the run internal_error (audit 2, finding 2). A call whose id an earlier turn of the conversation used
    (`earlier_ids`), or whose id the API refuses (TOOL_USE_ID), is run under an id of its own, its `renamed_from`
    naming the id it had: the API refuses a request whose tool_use ids repeat ("tool_use ids must be unique"),
    which ended the run at its next turn, and some OpenAI-compatible servers give every turn's call one id
    (audit 2, finding 5)."""
    ids = _Ids(reply.content, earlier_ids)
    content = []
    for block in reply.content:
        block = _with_string_fields(dict(block))
        if block.get("type") == "tool_use":
            if nests_deeper(block.get("input"), TOOL_INPUT_MAX_DEPTH):  # first: non_finite recurses without bound
                block["raw_input"], block["input"] = json_text(block["input"]), {}
                block["too_deep"] = TOOL_INPUT_MAX_DEPTH
            elif non_finite(block.get("input")):
                block["raw_input"], block["input"] = json.dumps(block["input"]), {}
            ids.give_own(block)
        content.append(json_safe(block))
    stop = reply.stop_reason if isinstance(reply.stop_reason, str) else None
    return replace(reply, content=content, stop_reason=json_safe(stop), model=json_safe(reply.model))


class _Ids:
    """The tool_use ids of one reply, each made the call's own in the request it goes back in (received)."""

    def __init__(self, content: list[dict[str, Any]], earlier_ids: Collection[object]) -> None:
        self.earlier = {i for i in earlier_ids if isinstance(i, str)}
        ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
        self.taken = self.earlier | {i for i in ids if isinstance(i, str)}
        self.in_reply: set[str] = set()

    def give_own(self, block: dict[str, Any]) -> None:
        ident = block.get("id")
        if not isinstance(ident, str) or not ident or ident in self.in_reply:  # which call it names is unclear
            block["duplicate_of"], block["id"] = json_safe(ident), self._fresh(ident)
        elif ident in self.earlier or not TOOL_USE_ID.fullmatch(ident):  # the call is clear: run under a new id
            block["renamed_from"], block["id"] = ident, self._fresh(ident)
        self.in_reply |= {block["id"], ident} if isinstance(ident, str) else {block["id"]}

    def _fresh(self, ident: object) -> str:
        base = ident if isinstance(ident, str) and TOOL_USE_ID.fullmatch(ident) else "toolu"
        fresh = next(f"{base}_kseek{n}" for n in range(1, len(self.taken) + 2) if f"{base}_kseek{n}" not in self.taken)
        self.taken.add(fresh)
        return fresh


def _with_string_fields(block: dict[str, Any]) -> dict[str, Any]:
    """`block` with a text block's `text` and a tool_use's `name` as strings: their JSON text where the model sent
    another JSON value (a tool name of null stays null: the loop answers it as an unknown tool)."""
    key = {"text": "text", "tool_use": "name"}.get(block.get("type"))  # type: ignore[arg-type]
    value = block.get(key) if key else None
    if key and value is not None and not isinstance(value, str):
        block[key] = json.dumps(value, allow_nan=True)
    return block


def with_charged_attempts(reply: ModelReply, charged: int) -> ModelReply:
    """`reply`, whose cost is unknown (None) where `charged` earlier attempts of its call had begun a reply that
    never came whole: they may have been charged, and their usage was never read."""
    if charged:
        reply.usage.cost_usd = None
    return reply
