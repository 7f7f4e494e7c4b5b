"""The kernel file is the model's, and its shell can make it anything: a symbolic link to the agent's own
environment or to a file of a folder the sandbox hides, a FIFO, a sparse file of 64 GiB. Every reader of it for the
harness (the evaluate tool, the end-of-turn goal check, the goal check after a quick verdict) goes through
agentloop/kernel_file.py, which refuses all of them with a message and never blocks (hostile-model audit, findings
1, 4 and 6). Each attack is played through the real loop: the real `anthropic` client, the model's own shell
commands, the model ending its turn."""

import json
import os
from pathlib import Path

import pytest

from agentloop.config import Budgets
from agentloop.kernel_file import KernelFileError, read_kernel, read_regular_file
from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES
from agentloop.tools.editor import EditorTool
from agentloop.trace import read_trace
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use

API_KEY = "sk-ant-CANARY-APIKEY-0123456789"
TOKEN = "WORKERTOKEN-CANARY-42"
HIDDEN = "HIDDEN-FILE-CANARY-7"


@pytest.fixture
def secrets(monkeypatch):
    """The agent's process holds the secrets a worker holds, in its environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("KSEEK_WORKER_TOKEN", TOKEN)


def play(tmp_path, turns, steps=None, evaluator=None):
    evaluator = evaluator or ScriptedEvaluator()
    with MessagesServer(Script(turns)) as server:
        agent, trace = make_agent(
            tmp_path,
            anthropic_model(server),
            config=make_config(budgets=Budgets(steps=steps or len(turns))),
            evaluator=evaluator,
        )
        outcome = agent.run()
        trace.close()
    trace_text = (tmp_path / "trace.jsonl").read_text()
    return outcome, read_trace(tmp_path / "trace.jsonl"), trace_text, evaluator


def shell(command: str) -> Reply:
    return Reply([tool_use("shell", {"command": command})])


def notes(events) -> list[str]:
    return [p["text"] for p in payloads(events, "note")]


def test_a_kernel_file_linked_to_the_agents_environment_never_reaches_the_trace_at_the_end_of_a_turn(tmp_path, secrets):
    outcome, events, trace_text, evaluator = play(
        tmp_path, [shell("ln -sf /proc/self/environ kernel.cpp"), Reply([text("I am done.")])]
    )
    assert API_KEY not in trace_text and TOKEN not in trace_text
    assert evaluator.calls == [] and payloads(events, "evaluation") == []
    assert "the goal check could not run: kernel.cpp is outside the workspace" in notes(events)
    assert outcome.reason == "budget_steps"  # the run went on to its budget, no internal error


def test_a_kernel_file_linked_to_a_file_outside_the_workspace_is_refused_by_every_reader(tmp_path, secrets):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "secret.txt").write_text(HIDDEN)
    turns = [
        shell(f"ln -sf {hidden}/secret.txt kernel.cpp"),
        Reply([tool_use("evaluate", {"scenarios": "quick"})]),
        Reply([text("I am done.")]),
    ]
    outcome, events, trace_text, evaluator = play(tmp_path, turns)
    assert HIDDEN not in trace_text and evaluator.calls == []
    [answer] = [p for p in payloads(events, "tool_result") if p["name"] == "evaluate"]
    assert answer["is_error"] and "outside the workspace" in answer["output"]
    assert any(n.startswith("the goal check could not run:") for n in notes(events))


def test_a_kernel_file_linked_to_another_file_of_the_workspace_is_refused_too(tmp_path):
    turns = [
        shell("cp kernel.cpp real.cpp && ln -sf real.cpp kernel.cpp"),
        Reply([tool_use("evaluate", {"scenarios": "quick"})]),
        Reply([text("I am done.")]),
    ]
    _, events, _, evaluator = play(tmp_path, turns)
    assert evaluator.calls == []
    [answer] = [p for p in payloads(events, "tool_result") if p["name"] == "evaluate"]
    assert answer["is_error"] and "kernel.cpp is a symbolic link" in answer["output"]


@pytest.mark.timeout(60)
def test_a_fifo_as_the_kernel_file_is_refused_at_once_by_the_evaluate_tool_and_the_end_of_turn_check(tmp_path):
    turns = [
        shell("rm kernel.cpp && mkfifo kernel.cpp"),
        Reply([tool_use("evaluate", {"scenarios": "quick"})]),
        Reply([text("I am done.")]),
    ]
    outcome, events, _, evaluator = play(tmp_path, turns)
    assert evaluator.calls == []
    [answer] = [p for p in payloads(events, "tool_result") if p["name"] == "evaluate"]
    assert answer["is_error"] and "kernel.cpp is not a regular file" in answer["output"]
    assert "the goal check could not run: kernel.cpp is not a regular file" in " ".join(notes(events))
    assert outcome.reason == "budget_steps"


def test_a_sparse_64_gib_kernel_file_gets_the_size_message_without_being_read(tmp_path):
    """Before the fix the end-of-turn check read the whole file first: under `ulimit -v 3000000` a MemoryError
    ended the run (internal_error)."""
    turns = [
        shell("truncate -s 64G kernel.cpp"),
        Reply([tool_use("evaluate", {"scenarios": "quick"})]),
        Reply([text("I am done.")]),
    ]
    outcome, events, _, evaluator = play(tmp_path, turns)
    assert evaluator.calls == [] and outcome.reason == "budget_steps"
    size = f"{64 * 2**30:,} bytes is over the limit of {KERNEL_SOURCE_MAX_BYTES:,} bytes"
    [answer] = [p for p in payloads(events, "tool_result") if p["name"] == "evaluate"]
    assert answer["is_error"] and size in answer["output"] and "make the file smaller" in answer["output"]
    assert any(
        n.startswith("the goal check could not run: kernel.cpp is not evaluated") and size in n for n in notes(events)
    )


class NamingEvaluator(ScriptedEvaluator):
    """Names the file it was given in its verdict, as the harness does; and notes where that file was."""

    def __call__(self, task, kernel_path, scenarios):
        self.given = Path(kernel_path)
        return super().__call__(task, kernel_path, scenarios) | {"kernel_path": str(kernel_path)}


def test_the_harness_judges_a_snapshot_of_the_bytes_read_and_the_verdict_names_the_workspace_file(tmp_path):
    evaluator = NamingEvaluator()
    _, events, _, _ = play(tmp_path, [Reply([tool_use("evaluate", {"scenarios": "quick"})])], evaluator=evaluator)
    [evaluation] = payloads(events, "evaluation")
    assert evaluator.calls == [("kernel.cpp", "quick")]
    assert evaluator.given.parent != (tmp_path / "ws").resolve() and not evaluator.given.exists()  # a snapshot, gone
    assert evaluation["result"]["kernel_path"] == str((tmp_path / "ws" / "kernel.cpp").resolve())
    assert evaluation["result"]["kernel_source"] == (tmp_path / "ws" / "kernel.cpp").read_text()
    json.dumps(evaluation)


def test_the_reader_never_follows_a_link_swapped_in_at_the_last_component(tmp_path):
    """What O_NOFOLLOW is for: a name that passed the resolving is a link by the time it is opened."""
    (tmp_path / "k.cpp").symlink_to("/proc/self/environ")
    with pytest.raises(KernelFileError, match="symbolic link"):
        read_regular_file(tmp_path / "k.cpp", "k.cpp")


def test_the_reader_refuses_a_file_that_grew_past_the_limit_after_its_size_was_read(tmp_path, monkeypatch):
    path = tmp_path / "k.cpp"
    path.write_bytes(b"x" * (KERNEL_SOURCE_MAX_BYTES + 5))
    over = f"{KERNEL_SOURCE_MAX_BYTES + 5:,} bytes is over the limit"
    with pytest.raises(KernelFileError, match=over):
        read_regular_file(path, "k.cpp")
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:6], 10, *real_fstat(fd)[7:])))
    with pytest.raises(KernelFileError, match=f"{KERNEL_SOURCE_MAX_BYTES + 1:,} bytes is over"):  # read: limit + 1
        read_regular_file(path, "k.cpp")


def test_a_kernel_name_through_a_linked_folder_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "k.cpp").write_text("int x;")
    (tmp_path / "link").symlink_to("real")
    editor = EditorTool(tmp_path)
    assert read_kernel(editor.resolve, editor.workspace, "real/k.cpp").data == b"int x;"
    with pytest.raises(KernelFileError, match="symbolic link"):
        read_kernel(editor.resolve, editor.workspace, "link/k.cpp")
