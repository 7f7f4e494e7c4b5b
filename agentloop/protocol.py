"""The protocol's words (docs/protocol.md), in one place for both halves: the event kinds, the run statuses, the
socket's size limits and the one line an event is shown as.

The agent loop writes events with these kinds and statuses; the server (`runs`) derives its model choices, its
parser's checks and its feed's lines from this module. It imports only `gpu_harness.figures` (no Django, no
torch: the one rule for how a figure is written), so that a GPU host and the dashboard can both import it. A new event kind is one line in EVENT_KINDS (docs/architecture.md, "How
to add an event kind").
"""

from __future__ import annotations

import json
from typing import Any

from gpu_harness import figures

# The wire protocol's version (docs/protocol.md 2): every worker message, server message, event and trace line
# carries it as `v`; a message of another version is answered with an error and not read.
PROTOCOL_VERSION = 1


def speaks_version(value: object) -> bool:
    """Whether a message's `v` is this protocol's version: the JSON integer 1, not `true` or `1.0`, which Python
    holds equal to 1 (docs/protocol.md 2.1). Both halves read `v` with this."""
    return type(value) is int and value == PROTOCOL_VERSION


# Every event kind (docs/protocol.md 1.2), with the label the dashboard shows for it.
EVENT_KINDS: dict[str, str] = {
    "model_message": "Model message",
    "tool_call": "Tool call",
    "tool_result": "Tool result",
    "evaluation": "Evaluation",
    "decision_point": "Decision point",
    "question_proposed": "Question proposed",
    "question_decided": "Question decided",
    "human_message": "Human message",
    "status": "Status change",
    "usage": "Usage",
    "note": "Note",
}
KINDS = tuple(EVENT_KINDS)

# A run's statuses (a `status` event's `status`, the server's Run.status), with their labels.
RUN_STATUSES: dict[str, str] = {
    "queued": "Queued",
    "running": "Running",
    "waiting_review": "Waiting for review",
    "paused": "Paused",
    "succeeded": "Succeeded",
    "failed": "Failed",
    "stopped": "Stopped",
}
# A run in one of these has ended: its finished status is its last event.
FINISHED_STATUSES = ("succeeded", "failed", "stopped")

# The built-in model of a "verify here" run (docs/protocol.md 2.12): no agent, one full evaluation of the run's
# starting kernel by the worker's harness, then the run stops (agentloop/verify.py).
VERIFY_MODEL = "verify"

# The model of a run that names none: the worker's CLI runs it, and the dashboard's start form offers it.
DEFAULT_MODEL = "claude-sonnet-4-6"

# The worker socket's limits (docs/protocol.md 2.1, announced in `welcome`): the largest message (and frame: a
# worker sends each message as one frame) the server reads, and the largest event it stores, as its `event`
# message in UTF-8. An event between the two is read and refused with a reason; a worker never sends a message
# over MESSAGE_MAX_BYTES. kseek_site/serving.py starts daphne with these.
MESSAGE_MAX_BYTES = 8 * 2**20
EVENT_MAX_BYTES = 4 * 2**20


def event_message_bytes(event: dict[str, Any]) -> int:
    """The size an event counts against EVENT_MAX_BYTES, the one rule for an event alone (an `event` message) and
    inside an `events` message: its `event` message written as compact JSON (no spaces) with every character
    other than those JSON must escape as itself in UTF-8, whatever spelling the sender chose (docs/protocol.md
    2.1). `event` is the message or the envelope (its own `type` and `v`, if any, are the message's)."""
    fields = {key: value for key, value in event.items() if key not in ("type", "v")}
    message = {"type": "event", "v": PROTOCOL_VERSION, **fields}
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8", "surrogatepass"))


# The largest kernel source an evaluation may carry (`result.kernel_source`, in UTF-8), end to end: the agent does
# not evaluate a larger file (agentloop/kernel_file.py), and the server refuses an evaluation event that carries one,
# from a worker or a trace import (runs/event_parser.py). Nine times the largest kernel written here (the released
# attention kernel, 115 KB), a quarter of EVENT_MAX_BYTES, and small enough that a kernel's page and its diff stay
# quick to make (docs/protocol.md 1.2).
KERNEL_SOURCE_MAX_BYTES = 2**20

# The deepest an event may nest objects and arrays, its envelope being level 1 (so its payload nests at most one
# level less): every reader alike, a worker's event and a trace's line (runs/event_parser.py,
# runs/services/trace_import.py), and a worker sends no deeper one (agentloop/worker/window.py: the server could
# only refuse it). Far deeper than any event the agent loop writes (about 10 levels: a fork's conversation in a
# status's config), and shallow enough that storing, exporting and showing a payload never meets Python's recursion
# limit: a payload nested a few hundred levels made the NUL escape recurse too far, and the event was nacked for
# retry ("server error") forever.
EVENT_MAX_DEPTH = 64

SUMMARY_MAX = 240  # characters of an event's one line


def kernel_source_refusal(size_bytes: int) -> str | None:
    """Why a kernel source of `size_bytes` (UTF-8) is refused, naming the limit; None when it is within it."""
    if size_bytes <= KERNEL_SOURCE_MAX_BYTES:
        return None
    return (
        f"a kernel source of {size_bytes:,} bytes is over the limit of {KERNEL_SOURCE_MAX_BYTES:,} bytes "
        "(KERNEL_SOURCE_MAX_BYTES, docs/protocol.md 1.2)"
    )


def _clip(text: object, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: object, limit: int = SUMMARY_MAX) -> str:
    """`text` as one line of at most `limit` characters (an event's summary)."""
    return _clip(text, limit)


def _first_text(content: object) -> str:
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                return str(block["text"])
    return ""


def _tool_input_line(payload: dict[str, Any]) -> str:
    tool_input = payload.get("input") or {}
    if isinstance(tool_input, dict):
        for key in ("command", "path", "kernel", "scenarios"):
            if tool_input.get(key):
                return f"{tool_input.get('action', '')} {tool_input[key]}".strip()
    return json.dumps(tool_input, default=str)[:SUMMARY_MAX]


def _speedup_text(value: object) -> str:
    return f"{value:.3f}×" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _money(value: object) -> str:
    return f"${value:.4f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "cost unknown"


def evaluation_line(payload: dict[str, Any], *, baseline: str = "", scenario_set: str = "", figure: str = "") -> str:
    """An evaluation event's one line: its status, its geometric-mean speed-up over its goal's baseline as every
    page writes it (`figures.verdict_speedup_text`: with its interval, "no difference" where that holds 1.0), the
    purpose and the scenario set. `baseline` and `scenario_set`: what the reader knows where the payload does not
    say (a harness trace's line, imported, carries the verdict alone: the server passes the run's goal and the set
    it covered); the payload's own, where it has them, come first. `figure`: the speed-up as the reader writes it
    from its stored row (the server's Evaluations table: `runs.selectors.evaluation_speedup_text`)."""
    result = r if isinstance(r := payload.get("result"), dict) else {}
    goal = g if isinstance(g := payload.get("goal"), dict) else {}
    baseline = str(goal.get("baseline") or baseline or "")
    text = figure or (figures.verdict_speedup_text(result, baseline) if baseline else "—")
    if text == "—":  # no verdict figure over it: the sender's own point figure, where it gave one
        text = _speedup_text(payload.get("speedup"))
    figure = text if text.startswith("no difference") else f"speedup {text}"
    over = f" over {baseline}" if baseline else ""
    reason = f": {result['reason']}" if result.get("reason") else ""
    met = " GOAL MET" if payload.get("goal_met") is True else ""
    scenarios = payload.get("scenario_set") or scenario_set
    return f"{result.get('status', '?')}, {figure}{over}{met} ({payload.get('purpose', 'tool')}, {scenarios}){reason}"


def event_summary(kind: str, payload: object, limit: int = SUMMARY_MAX) -> str:
    """The one line an event is shown as: in the dashboard's feed and on the agent's terminal.

    Written for any payload a sender may put under a kind (the server shows what a worker sent): a field that is
    missing or of the wrong type is shown as `?` or left out, never raised on."""
    p = payload if isinstance(payload, dict) else {}
    if kind == "model_message":
        content = c if isinstance(c := p.get("content"), list) else []
        tools = [b.get("name") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        text = _first_text(content)
        tail = f" → {', '.join(str(t) for t in tools if t)}" if tools else ""
        return _clip((text or f"({p.get('stop_reason', 'no text')})") + tail, limit)
    if kind == "tool_call":
        return _clip(f"{p.get('name') or 'tool'}: {_tool_input_line(p)}", limit)
    if kind == "tool_result":
        output = str(p.get("output") or "")
        flags = " error" if p.get("is_error") else ""
        exit_code = f" exit {p['exit_code']}" if p.get("exit_code") is not None else ""
        return _clip(f"{p.get('name') or 'tool'}{exit_code}{flags}, {len(output)} chars: {output.strip()[:200]}", limit)
    if kind == "evaluation":
        return _clip(evaluation_line(p), limit)
    if kind == "decision_point":
        return _clip(f"{p.get('name', '?')}: {p.get('detail', '')}", limit)
    if kind == "question_proposed":
        return _clip(f"[{p.get('category') or '?'}] {p.get('text', '')}", limit)
    if kind == "question_decided":
        text = f": {p['text']}" if p.get("text") else ""
        return _clip(f"{p.get('action', '?')} by {p.get('reviewer') or p.get('by') or '?'}{text}", limit)
    if kind == "human_message":
        return _clip(f"{p.get('author') or 'human'}: {p.get('text', '')}", limit)
    if kind == "status":
        detail = f": {p['detail']}" if p.get("detail") else ""
        return _clip(f"{p.get('status', '?')} ({p.get('reason', '')}){detail}", limit)
    if kind == "usage":
        return _clip(
            f"{p.get('tokens_in', 0)} in, {p.get('tokens_out', 0)} out, {_money(p.get('cost_usd'))} "
            f"({p.get('model', '')})",
            limit,
        )
    # note, and a kind this reader does not know: its text, or its payload as JSON
    if "text" in p:
        return _clip(f"[{p.get('level', 'info')}] {p.get('text', '')}", limit)
    return _clip(json.dumps(payload, default=str), limit)
