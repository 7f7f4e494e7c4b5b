"""Tool inputs a tool cannot take are the model's mistake: each is answered with an error it can read, and the run
goes on (hostile-model audit, findings 5 and 7: each of these once ended the run with internal_error, or hung it).
Played through the real loop and the real `anthropic` client."""

import pytest

from agentloop.config import Budgets
from agentloop.tools.editor import EditorTool
from agentloop.tools.shell import COMMAND_MAX_BYTES
from agentloop.trace import read_trace
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, tool_use

MISTAKES = {
    "a NUL in a shell command": (
        tool_use("shell", {"command": "echo a\0b"}),
        "NUL character",
    ),
    "a shell command over the limit": (
        tool_use("shell", {"command": "true " + "x" * 200_000}),
        f"over the limit of {COMMAND_MAX_BYTES:,} bytes on a shell command",
    ),
    "a NUL in the evaluate tool's kernel name": (
        tool_use("evaluate", {"kernel": "kernel.cpp\0x"}),
        "NUL character",
    ),
    "a NUL in an editor path": (
        tool_use("editor", {"command": "view", "path": "kernel\0.cpp"}),
        "NUL character",
    ),
    "an editor path with a name of 5,000 characters": (
        tool_use("editor", {"command": "create", "path": "a" * 5000, "file_text": "x"}),
        "over the limit of 4,096 bytes (PATH_MAX)",
    ),
    "an editor path with a name over NAME_MAX": (
        tool_use("editor", {"command": "create", "path": "a" * 300, "file_text": "x"}),
        "over the limit of 255 bytes (NAME_MAX)",
    ),
    "an editor path of 3,000 folders": (
        tool_use("editor", {"command": "create", "path": "d/" * 3000 + "f", "file_text": "x"}),
        "(PATH_MAX)",
    ),
    "an editor path through a file": (
        tool_use("editor", {"command": "create", "path": "kernel.cpp/f", "file_text": "x"}),
        "kernel.cpp/f: ",  # the file system's word for it (Not a directory)
    ),
}


def play(tmp_path, calls):
    turns = [Reply([call]) for call in calls] + [Reply([tool_use("shell", {"command": "echo still here"})])]
    with MessagesServer(Script(turns)) as server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server),
            config=make_config(budgets=Budgets(steps=len(turns))),
            evaluator=ScriptedEvaluator(),
        )
        outcome = agent.run()
        trace.close()
    return outcome, read_trace(tmp_path / "trace.jsonl")


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_tool_input_the_tool_cannot_take_is_answered_as_an_error_and_the_run_goes_on(tmp_path, mistake):
    call, says = MISTAKES[mistake]
    outcome, events = play(tmp_path, [call])
    assert outcome.reason == "budget_steps", outcome
    first, last = payloads(events, "tool_result")
    assert first["is_error"] and first["output"].startswith("error: ") and says in first["output"], first["output"]
    assert last["output"] == "[exit code 0]\nstill here\n"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["create", "str_replace", "insert", "view"])
def test_the_editor_never_opens_a_fifo(tmp_path, command):
    """An editor `create` on a FIFO once waited for a reader forever."""
    inputs = {
        "create": {"file_text": "x"},
        "str_replace": {"old_str": "a", "new_str": "b"},
        "insert": {"insert_line": 0, "insert_text": "x"},
        "view": {"view_range": [1, 2]},
    }[command]
    calls = [
        tool_use("shell", {"command": "mkfifo f"}),
        tool_use("editor", {"command": command, "path": "f", **inputs}),
    ]
    outcome, events = play(tmp_path, calls)
    assert outcome.reason == "budget_steps"
    answer = payloads(events, "tool_result")[1]
    assert answer["is_error"] and "f is not a" in answer["output"], answer["output"]


def test_a_shell_command_at_the_limit_runs(tmp_path):
    command = "echo ok #" + "x" * (COMMAND_MAX_BYTES - len("echo ok #"))
    _, events = play(tmp_path, [tool_use("shell", {"command": command})])
    assert payloads(events, "tool_result")[0]["output"] == "[exit code 0]\nok\n"


def test_the_editor_still_writes_and_reads_a_regular_file(tmp_path):
    editor = EditorTool(tmp_path)
    editor({"command": "create", "path": "sub/k.cpp", "file_text": "int a;\n"})
    editor({"command": "str_replace", "path": "sub/k.cpp", "old_str": "int a;", "new_str": "int b;"})
    editor({"command": "insert", "path": "sub/k.cpp", "insert_line": 0, "insert_text": "// top"})
    assert (tmp_path / "sub" / "k.cpp").read_text() == "// top\nint b;\n"
    assert (tmp_path / "sub" / "k.cpp").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
