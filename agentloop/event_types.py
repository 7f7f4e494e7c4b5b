"""Each event kind's payload, declared once (docs/protocol.md 1.2): its fields, their JSON types, which are required.

Both halves hold events to it: the agent loop before it writes one (`agentloop.events.make_event`: an event that
does not fit is a bug of ours, raised at once) and the server before it stores one (`runs.event_parser`: from a
worker, a trace import or a service, refused with the field and what was wrong). A field not declared for its kind
is refused, so a sender cannot park data in events that no reader knows; a new field is one line here and its
sentence in docs/protocol.md (tests/agentloop/test_event_types.py holds the two to each other).

Only the payload's own fields are declared: what they hold inside (an evaluation's `result`, a status's `config`,
a message's `content`) is read by the readers of those values, each failing closed on what it cannot read. Like
agentloop/protocol.py it imports nothing of the project, so that a GPU host and the dashboard can both import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# JSON's types, as JSON names them. An integer is a whole number that is not a boolean; a number is an integer or a
# finite float (the parser has already refused NaN and Infinity).
STRING, INTEGER, NUMBER, BOOLEAN, OBJECT, ARRAY, NULL = (
    "string",
    "integer",
    "number",
    "boolean",
    "object",
    "array",
    "null",
)
ANY = (STRING, NUMBER, BOOLEAN, OBJECT, ARRAY, NULL)


@dataclass(frozen=True)
class Field:
    types: tuple[str, ...]
    required: bool = False


def required(*types: str) -> Field:
    return Field(types, required=True)


def optional(*types: str) -> Field:
    # docs/protocol.md 1.2: a field marked `?` may be absent or null
    return Field(types if NULL in types else (*types, NULL))


TEXT_OR_NULL = (STRING, NULL)
COUNT = (INTEGER,)
NUMBER_OR_NULL = (NUMBER, NULL)
DIRECTIVE_ID = optional(STRING)  # the id of the server's directive that caused the event ("d-12", 2.3)

PAYLOADS: dict[str, dict[str, Field]] = {
    "status": {
        "status": required(STRING),
        "reason": required(STRING),
        "detail": optional(*TEXT_OR_NULL),
        "config": optional(OBJECT),  # the `started` event's: everything a resume needs
        "best_speedup": optional(*NUMBER_OR_NULL),
        "goal_met": optional(BOOLEAN, NULL),
        "directive_id": DIRECTIVE_ID,
    },
    "model_message": {
        "purpose": required(STRING),
        "model": required(*TEXT_OR_NULL),
        "stop_reason": required(*TEXT_OR_NULL),
        "content": required(ARRAY),
        "usage": optional(OBJECT),  # this call's usage (traces before it have none)
    },
    "tool_call": {
        "call_id": required(STRING),
        "name": required(*TEXT_OR_NULL),
        "input": required(*ANY),  # the model's, as sent: normally an object, recorded whatever it is
        "raw_input": optional(STRING),  # the text of an input that was not JSON
    },
    "tool_result": {
        "call_id": required(STRING),
        "name": required(*TEXT_OR_NULL),
        "output": required(STRING),
        "is_error": required(BOOLEAN),
        "truncated_chars": required(*COUNT),
        "duration_s": required(NUMBER),
        "exit_code": optional(INTEGER, NULL),
        "timed_out": optional(BOOLEAN),
        "invalid_input": optional(BOOLEAN),
        "interrupted": optional(BOOLEAN),
        "budget_spent": optional(STRING),
    },
    "evaluation": {
        "purpose": required(STRING),
        "result": required(OBJECT),  # gpu_harness.EvalResult.to_dict(), unchanged
        "call_id": optional(*TEXT_OR_NULL),
        "scenario_set": optional(STRING, ARRAY),
        "kernel_path": optional(STRING),
        "kernel_sha256": optional(STRING),
        "kernel_source": optional(STRING),  # older traces' copy of result.kernel_source
        "goal": optional(OBJECT),
        "speedup": optional(*NUMBER_OR_NULL),
        "full": optional(BOOLEAN),
        "goal_met": optional(BOOLEAN),
        "best_speedup": optional(*NUMBER_OR_NULL),
        "evaluations_used": optional(*COUNT),
        "environment": optional(OBJECT),  # a verify run's Python and library versions (2.12)
        "note": optional(STRING),  # a harness `--trace` line's --note, on an imported development run
    },
    "decision_point": {
        "name": required(STRING),
        "detail": required(STRING),
        "evidence": optional(*ANY),
    },
    "question_proposed": {
        "question_ref": required(STRING),
        "text": required(STRING),
        "by": required(STRING),
        "bank_key": optional(*TEXT_OR_NULL),
        "category": optional(*TEXT_OR_NULL),
        "reason": optional(*TEXT_OR_NULL),
        "decision_point": optional(*TEXT_OR_NULL),
        "attempt": optional(*COUNT),
    },
    "question_decided": {
        "question_ref": required(STRING),
        "action": required(STRING),
        "by": required(STRING),
        "text": optional(*TEXT_OR_NULL),
        "original_text": optional(*TEXT_OR_NULL),
        "reviewer": optional(*TEXT_OR_NULL),
        "fork_decision": optional(BOOLEAN),
        "directive_id": DIRECTIVE_ID,
    },
    "human_message": {
        "text": required(STRING),
        "author": optional(*TEXT_OR_NULL),
        "directive_id": DIRECTIVE_ID,
    },
    "usage": {
        "purpose": required(STRING),
        "model": required(*TEXT_OR_NULL),
        "tokens_in": required(*COUNT),
        "tokens_out": required(*COUNT),
        "cost_usd": required(*NUMBER_OR_NULL),
        "cache_read_tokens": optional(*COUNT),
        "cache_write_tokens": optional(*COUNT),
        "totals": optional(OBJECT),
    },
    "note": {
        "text": required(STRING),
        "level": optional(STRING),  # info, warning or error; info when absent
        "to_model": optional(BOOLEAN),
        "refused_seq": optional(*COUNT),
        "decision_point": optional(STRING),
        "fork_decision": optional(BOOLEAN),
        "sandbox": optional(STRING),
        "network": optional(BOOLEAN),
    },
}


def json_type(value: object) -> str:
    """The JSON type of a decoded value; "integer" for whole numbers (a number too), "other" for anything else."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, dict):
        return OBJECT
    if isinstance(value, (list, tuple)):
        return ARRAY
    return "other"


def _fits(value: object, types: tuple[str, ...]) -> bool:
    kind = json_type(value)
    return kind in types or (kind == INTEGER and NUMBER in types)


def _type_words(types: tuple[str, ...]) -> str:
    return " or ".join(types)


def payload_problem(kind: str, payload: dict[str, Any]) -> str | None:
    """What in `payload` does not fit its kind's declaration (the first such field), or None when it fits.
    An unknown kind is the caller's to refuse (agentloop.protocol.KINDS)."""
    fields = PAYLOADS.get(kind)
    if fields is None:
        return f"unknown event kind {kind!r}"
    for name in payload:
        if name not in fields:
            known = ", ".join(fields)
            return f"{kind} payload: field {str(name)[:60]!r} is not one of its fields ({known}; docs/protocol.md 1.2)"
    for name, field in fields.items():
        if name not in payload:
            if field.required:
                return f"{kind} payload: {name} is missing (docs/protocol.md 1.2)"
            continue
        if not _fits(payload[name], field.types):
            found = json_type(payload[name])
            return f"{kind} payload: {name} must be {_type_words(field.types)}, not {found}"
    return None
