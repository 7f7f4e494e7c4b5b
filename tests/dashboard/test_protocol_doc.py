"""docs/protocol.md is a contract that outside people write workers from: its sections come in the order of their
numbers, and every limit it names is the one the code holds."""

import re
from pathlib import Path

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def headings() -> list[tuple[int, ...]]:
    """The numbers of the document's `## N.` and `### N.M` headings, in the order they appear."""
    found = re.findall(r"^#{2,3} (\d+(?:\.\d+)*)\.? ", PROTOCOL.read_text(encoding="utf-8"), flags=re.M)
    return [tuple(int(part) for part in number.split(".")) for number in found]


def test_the_sections_come_in_the_order_of_their_numbers_each_under_its_own_chapter():
    numbers = headings()
    assert numbers == sorted(numbers), numbers
    chapter = 0
    for number in numbers:
        if len(number) == 1:
            chapter = number[0]
        else:
            assert number[0] == chapter, f"section {'.'.join(map(str, number))} stands under chapter {chapter}"


def test_the_envelopes_limits_are_the_parsers():
    from runs.event_parser import INT_COLUMN_MAX, STEP_COST_LIMIT

    text = PROTOCOL.read_text(encoding="utf-8")
    envelope = text[text.index("### 1.1 ") : text.index("### 1.2 ")]
    assert f"`seq`, `usage.tokens_in` and `usage.tokens_out` are at most **{INT_COLUMN_MAX}**" in envelope
    assert f"`usage.cost_usd` is at least 0\n  and below **{STEP_COST_LIMIT}**" in envelope


def test_the_hellos_limits_are_the_servers():
    from runs.services.workers import GPU_NAME_MAX_CHARS, GPUS_MAX_COUNT, TARGET_NAME_MAX_CHARS, TARGETS_MAX_COUNT

    text = PROTOCOL.read_text(encoding="utf-8")
    assert f"at most {GPUS_MAX_COUNT} names, each at most {GPU_NAME_MAX_CHARS} characters" in text
    assert f"at most {TARGETS_MAX_COUNT} of them, each at most {TARGET_NAME_MAX_CHARS} characters" in text


def test_the_close_codes_and_the_workers_exit_statuses_are_the_codes():
    from agentloop.worker import client
    from runs import consumers

    text = PROTOCOL.read_text(encoding="utf-8")
    assert consumers.SUPERSEDED == client.SUPERSEDED and consumers.AUTH_REFUSED == client.AUTH_REFUSED
    assert f"closed with code **{consumers.SUPERSEDED}**" in text and f"code **{consumers.AUTH_REFUSED}**" in text
    assert f"the agentloop worker exits with status {client.EXIT_SUPERSEDED}" in text
    assert f"the agentloop worker exits\n  with status {client.EXIT_TOKEN_REFUSED}" in text


def test_the_nesting_limit_is_the_parsers_and_the_imports():
    from runs.event_parser import EVENT_MAX_DEPTH, PAYLOAD_MAX_DEPTH
    from runs.services.trace_import import NESTING_MAX

    text = PROTOCOL.read_text(encoding="utf-8")
    assert NESTING_MAX == EVENT_MAX_DEPTH
    assert f"An event nests objects and arrays at most **{EVENT_MAX_DEPTH}** levels deep" in text
    assert f"its payload at most {PAYLOAD_MAX_DEPTH}" in text
