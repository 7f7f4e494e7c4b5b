"""Well-formed event payloads for tests whose point is something else (storage, order, announcements): each kind's
required fields (agentloop/event_types.py) with plain values, and any fields a test sets itself."""

# A value for every required field of each kind; tests/agentloop/test_event_types.py checks that each fits.
MINIMAL = {
    "status": {"status": "running", "reason": "started"},
    "model_message": {"purpose": "turn", "model": "test-model", "stop_reason": "end_turn", "content": []},
    "tool_call": {"call_id": "call-0", "name": "shell", "input": {}},
    "tool_result": {
        "call_id": "call-0",
        "name": "shell",
        "output": "",
        "is_error": False,
        "truncated_chars": 0,
        "duration_s": 0.0,
    },
    "evaluation": {"purpose": "tool", "result": {}},
    "decision_point": {"name": "plateau", "detail": ""},
    "question_proposed": {"question_ref": "q-0", "text": "?", "by": "model"},
    "question_decided": {"question_ref": "q-0", "action": "approve", "by": "auto"},
    "human_message": {"text": ""},
    "usage": {"purpose": "turn", "model": "test-model", "tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
    "note": {"text": ""},
}


def payload(kind: str, **fields) -> dict:
    """A payload of `kind` that the server stores: MINIMAL's fields, then `fields` over them."""
    return {**MINIMAL[kind], **fields}
