"""The note a run records about its sandbox (agentloop/sandbox.py Sandbox.note): the operator's choices that
leave agent code less than fully isolated are written into the run, in a payload the protocol declares."""

from pathlib import Path

from agentloop.event_types import payload_problem
from agentloop.sandbox import BUBBLEWRAP, NETWORK_VARIABLE, NONE, REFUSED, UNSANDBOXED_FLAG, Sandbox


def test_an_unsandboxed_run_is_warned_that_its_commands_can_read_the_workers_secrets():
    note = Sandbox(NONE).note()
    assert note is not None and note["level"] == "warning" and note["sandbox"] == NONE
    assert UNSANDBOXED_FLAG in note["text"] and "secrets" in note["text"]
    assert payload_problem("note", note) is None


def test_a_refused_sandbox_is_an_error_note_with_the_refusal_and_its_fix():
    sandbox = Sandbox(REFUSED, why="bwrap: setting up uid map: Permission denied")
    note = sandbox.note()
    assert note == {"level": "error", "sandbox": REFUSED, "text": sandbox.refusal}
    assert "Permission denied" in note["text"] and "apt-get install bubblewrap" in note["text"]
    assert payload_problem("note", note) is None


def test_bubblewrap_is_silent_unless_the_operator_opened_the_network():
    closed = Sandbox(BUBBLEWRAP, bwrap="/usr/bin/bwrap")
    assert closed.note() is None
    opened = Sandbox(BUBBLEWRAP, (Path("/state"),), "/usr/bin/bwrap", network=True).note()
    assert opened is not None and opened["network"] is True and opened["level"] == "warning"
    assert NETWORK_VARIABLE in opened["text"]
    assert payload_problem("note", opened) is None
