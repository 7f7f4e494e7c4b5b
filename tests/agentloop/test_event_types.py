"""Each event kind's payload is declared once (agentloop/event_types.py), docs/protocol.md 1.2's table is that
declaration, and both halves hold events to it: the loop before writing one, the server's parser before storing."""

import json
import re
from pathlib import Path

import pytest

from agentloop import event_types
from agentloop.event_types import ANY, NULL, PAYLOADS, payload_problem
from agentloop.events import make_event
from agentloop.protocol import KINDS, PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"


def _docs_table() -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """docs/protocol.md 1.2's table: kind -> (required field -> types, optional field -> types)."""
    section = (ROOT / "docs" / "protocol.md").read_text().split("### 1.2 Kinds and payloads", 1)[1]
    table = {}
    for line in section.split("### 1.3", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`\w+`", cells[0]):
            table[cells[0].strip("`")] = tuple(
                dict(re.findall(r"`(\w+)` ([a-z ]+?)(?:,|$)", cell)) for cell in cells[1:]
            )
    return table


def _words(field) -> str:
    if set(field.types) >= set(ANY):
        return "any"
    types = field.types if field.required else tuple(t for t in field.types if t != NULL)
    return " or ".join(types)


def test_the_protocol_docs_table_is_the_declaration():
    table = _docs_table()
    assert list(table) == list(PAYLOADS)
    for kind, fields in PAYLOADS.items():
        required = {n: _words(f) for n, f in fields.items() if f.required}
        optional = {n: _words(f) for n, f in fields.items() if not f.required}
        assert table[kind] == (required, optional), kind


def test_every_kind_is_declared():
    assert set(PAYLOADS) == set(KINDS)


def test_the_demo_recording_fits_the_declaration():
    lines = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    events = [e for e in lines if "kind" in e]
    assert events
    for event in events:
        assert payload_problem(event["kind"], event["payload"]) is None, event["seq"]


@pytest.mark.parametrize(
    "kind, payload, problem",
    [
        ("note", {"text": "hi", "level": "info", "colour": "red"}, "field 'colour' is not one of its fields"),
        ("note", {"level": "info"}, "note payload: text is missing"),
        ("note", {"text": 3, "level": "info"}, "text must be string, not integer"),
        (
            "tool_result",
            {"call_id": "c", "name": "shell", "output": "", "is_error": 0, "truncated_chars": 0, "duration_s": 0},
            "is_error must be boolean, not integer",
        ),
        (
            "usage",
            {"purpose": "turn", "model": "m", "tokens_in": True, "tokens_out": 0, "cost_usd": None},
            "tokens_in must be integer, not boolean",
        ),
        ("evaluation", {"purpose": "tool", "result": "not an object"}, "result must be object, not string"),
        ("status", {"status": "running", "reason": "started", "config": []}, "config must be object or null"),
        ("telepathy", {}, "unknown event kind 'telepathy'"),
    ],
)
def test_a_payload_that_does_not_fit_is_named_by_its_field(kind, payload, problem):
    assert problem in payload_problem(kind, payload)


def test_fitting_payloads_pass_with_optional_fields_absent_or_null():
    assert payload_problem("note", {"text": "hi", "level": "info"}) is None
    assert payload_problem("note", {"text": "hi", "level": "info", "to_model": None}) is None
    assert (
        payload_problem("usage", {"purpose": "turn", "model": None, "tokens_in": 1, "tokens_out": 2, "cost_usd": 0})
        is None
    )  # an integer is a number
    assert payload_problem("tool_call", {"call_id": "c", "name": None, "input": "not an object"}) is None


def test_the_loop_does_not_write_an_event_that_does_not_fit():
    with pytest.raises(ValueError, match="field 'colour'"):
        make_event(1, 0, "note", {"text": "hi", "level": "info", "colour": "red"})
    event = make_event(1, 0, "note", {"text": "hi", "level": "info"})
    assert event["v"] == PROTOCOL_VERSION


def test_a_value_of_no_json_type_fits_no_field():
    assert event_types.json_type(object()) == "other"
    assert "not other" in payload_problem("note", {"text": object(), "level": "info"})


def test_the_tests_minimal_payloads_fit_every_kind():
    from tests.payloads import MINIMAL

    assert set(MINIMAL) == set(PAYLOADS)
    for kind, payload in MINIMAL.items():
        assert payload_problem(kind, payload) is None, kind


def _documented_reasons() -> set[str]:
    """The `reason` list of docs/protocol.md 1.2's `status` kind."""
    section = (ROOT / "docs" / "protocol.md").read_text().split("- `reason`:", 1)[1].split("Readers show", 1)[0]
    return set(re.findall(r"`(\w+)`", section))


def test_every_way_a_run_ends_has_its_reason_in_the_protocol_docs():
    from agentloop import errors

    endings = [errors.RunEnded, *_subclasses(errors.RunEnded)]
    fixed = {cls.reason for cls in endings if isinstance(cls.__dict__.get("reason"), str)}
    budgets = {f"budget_{name}" for name in ("steps", "tokens", "cost", "wall", "evaluations")}
    assert {"goal_unreachable", "goal_met", "internal_error"} <= fixed
    assert fixed | budgets <= _documented_reasons()


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]
