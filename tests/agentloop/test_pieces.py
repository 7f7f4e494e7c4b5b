"""The small named pieces, each on its own: tools, sandbox, trace, detectors, goal check, prices."""

import time

import pytest

from agentloop.config import Goal
from agentloop.detectors import Turn, claimed_limit, failure_streak, plateau, regression, stopped_short
from agentloop.events import make_event
from agentloop.goal import goal_met, meets_target
from agentloop.policy import default_policy
from agentloop.prices import cost_usd
from agentloop.sandbox import bwrap_argv, scrubbed_env
from agentloop.state import RunState
from agentloop.tools import ToolInputError
from agentloop.tools.editor import EditorTool
from agentloop.tools.shell import ShellTool
from agentloop.trace import TraceError, TraceWriter, read_trace
from tests.agentloop.helpers import FULL_IDS, verdict

SETTINGS = default_policy().detectors
PATTERNS = default_policy().limit_patterns


# ---- shell
def test_the_shell_runs_in_the_workspace_without_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("KSEEK_WORKER_TOKEN", "kst_secret")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "also-secret")
    result = ShellTool(tmp_path, use_bwrap=False)({"command": "pwd; env"})
    assert result.output.splitlines()[1] == str(tmp_path)
    assert "secret" not in result.output and "ANTHROPIC" not in result.output and "KSEEK" not in result.output
    assert result.extra["exit_code"] == 0 and not result.is_error


def test_a_shell_command_over_its_time_limit_is_killed_with_its_children(tmp_path):
    started = time.monotonic()
    result = ShellTool(tmp_path, use_bwrap=False)({"command": "sleep 30 & sleep 30; echo never", "timeout_s": 0.5})
    assert time.monotonic() - started < 10
    assert result.extra["timed_out"] and result.is_error and "timed out after 0.5 s" in result.output


def test_long_output_is_cut_in_the_middle_with_the_count_stated(tmp_path):
    result = ShellTool(tmp_path, use_bwrap=False, output_limit=1000)({"command": "seq 1 10000"})
    total = len("".join(f"{i}\n" for i in range(1, 10001)))
    assert result.truncated_chars == total - 1000
    assert f"[... {total - 1000} characters cut" in result.output
    assert result.output.rstrip().endswith("10000") and "\n1\n2\n" in result.output


def test_the_bubblewrap_command_hides_state_and_keeps_the_workspace_writable(tmp_path):
    ws, state = tmp_path / "state" / "runs" / "1" / "ws", tmp_path / "state"
    argv = bwrap_argv("/usr/bin/bwrap", ws, [state], scrubbed_env(ws, {}), ["bash", "-c", "ls"])
    joined = " ".join(argv)
    assert "--ro-bind / /" in joined and "--unshare-pid" in joined and "--clearenv" in joined
    # The hidden state directory is mounted over before the workspace inside it is bound back.
    assert argv.index("--tmpfs", argv.index("/tmp") + 1) < argv.index("--bind")
    assert argv[argv.index("--bind") + 1] == str(ws.resolve())
    assert argv[-3:] == ["bash", "-c", "ls"]


@pytest.mark.sandbox
def test_under_bubblewrap_the_shell_cannot_see_hidden_directories(tmp_path):
    hidden = tmp_path / "state"
    (hidden / "secret.txt").parent.mkdir()
    (hidden / "secret.txt").write_text("s3cret")
    ws = tmp_path / "ws"
    ws.mkdir()
    result = ShellTool(ws, hidden=[hidden], use_bwrap=True)({"command": f"cat {hidden}/secret.txt; touch ok"})
    assert "s3cret" not in result.output and (ws / "ok").exists()


# ---- editor
def test_the_editor_views_creates_replaces_and_inserts(tmp_path):
    ed = EditorTool(tmp_path)
    ed({"command": "create", "path": "k.cpp", "file_text": "a\nb\nc"})
    assert (
        "Replaced 1 occurrence in k.cpp at line 2"
        in ed({"command": "str_replace", "path": "k.cpp", "old_str": "b", "new_str": "B"}).output
    )
    ed({"command": "insert", "path": "k.cpp", "insert_line": 0, "insert_text": "top"})
    assert (tmp_path / "k.cpp").read_text() == "top\na\nB\nc"
    assert ed({"command": "view", "path": "k.cpp", "view_range": [2, 3]}).output == "     2\ta\n     3\tB"


def test_the_editor_refuses_ambiguous_replacements_and_paths_outside_the_workspace(tmp_path):
    ed = EditorTool(tmp_path / "ws")
    (tmp_path / "ws").mkdir()
    ed({"command": "create", "path": "k.cpp", "file_text": "x x"})
    with pytest.raises(ToolInputError, match="occurs 2 times"):
        ed({"command": "str_replace", "path": "k.cpp", "old_str": "x", "new_str": "y"})
    with pytest.raises(ToolInputError, match="outside the workspace"):
        ed({"command": "view", "path": "../secret"})
    (tmp_path / "ws" / "link").symlink_to(tmp_path)
    with pytest.raises(ToolInputError, match="outside the workspace"):
        ed({"command": "create", "path": "link/escape.txt", "file_text": "no"})


# ---- trace
def test_the_trace_survives_a_crash_mid_line_and_refuses_gaps(tmp_path):
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path)
    for seq in range(3):
        w.write(make_event("r", seq, "note", {"text": str(seq)}))
    w.close()
    with open(path, "a") as f:
        f.write('{"v": 1, "seq": 3, "ki')
    assert [e["seq"] for e in read_trace(path)] == [0, 1, 2]
    w = TraceWriter(path)  # appending after the cut line does not glue two events
    w.write(make_event("r", 3, "note", {"text": "3"}))
    w.close()
    assert [e["seq"] for e in read_trace(path)] == [0, 1, 2, 3]
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    with pytest.raises(TraceError, match="gap"):
        read_trace(path)


# ---- detectors
def state_with(speedups, statuses=None):
    state = RunState()
    for i, speedup in enumerate(speedups):
        status = (statuses or ["correct"] * len(speedups))[i]
        result = {"status": status, "scenarios": [{"id": "a", "correct": status == "correct"}]}
        state.apply(make_event("r", i, "evaluation", {"purpose": "tool", "result": result, "speedup": speedup}))
    return state


def test_plateau_fires_once_per_window_without_a_gain():
    turn = Turn("", ended=False, new_evaluations=1)
    assert plateau(state_with([1.5, 1.4, 1.3]), turn, SETTINGS) is None  # the first one was a gain
    state = state_with([1.5, 1.4, 1.3, 1.45])
    assert plateau(state, turn, SETTINGS).evidence["window"] == [1.4, 1.3, 1.45]
    state.apply(make_event("r", 9, "decision_point", {"name": "plateau", "detail": ""}))
    assert plateau(state, turn, SETTINGS) is None  # asked already
    assert plateau(state_with([1.5, 1.4, 1.3, 1.6]), turn, SETTINGS) is None  # a gain resets it
    assert plateau(state_with([1.5, 1.4, 1.3, 1.45]), Turn("", False, 0), SETTINGS) is None


def test_failure_streak_counts_only_failures_in_a_row():
    turn = Turn("", ended=False, new_evaluations=1)
    assert (
        failure_streak(state_with([None] * 3, ["error", "incorrect", "error"]), turn, SETTINGS).name == "failure-streak"
    )
    assert failure_streak(state_with([None, 1.0, None], ["error", "correct", "error"]), turn, SETTINGS) is None


def test_regression_fires_when_a_correct_kernel_falls_below_the_best():
    turn = Turn("", ended=False, new_evaluations=1)
    assert regression(state_with([2.0, 1.5]), turn, SETTINGS).evidence == {"speedup": 1.5, "best_speedup": 2.0}
    assert regression(state_with([2.0, 1.95]), turn, SETTINGS) is None  # within 10%
    assert regression(state_with([2.0, 1.5, 1.4]), turn, SETTINGS) is None  # the same regression


@pytest.mark.parametrize(
    "text",
    [
        "This is the hardware limit.",
        "It cannot go any faster.",
        "We are at the roofline already.",
        "There is no further room for improvement.",
    ],
)
def test_claimed_limits_are_recognised(text):
    assert claimed_limit(RunState(), Turn(text, True, 0), SETTINGS, patterns=PATTERNS).name == "claimed-limit"


def test_ordinary_progress_talk_is_not_a_claimed_limit():
    text = "The kernel got faster; next I will block over k to reuse B from cache."
    assert claimed_limit(RunState(), Turn(text, False, 0), SETTINGS, patterns=PATTERNS) is None


def test_stopping_short_is_only_when_the_model_ends_its_turn_before_the_goal():
    assert stopped_short(RunState(), Turn("done", True, 0), SETTINGS).name == "stopped-short"
    assert stopped_short(RunState(), Turn("working", False, 0), SETTINGS) is None
    met = RunState()
    met.goal_met = True
    assert stopped_short(met, Turn("done", True, 0), SETTINGS) is None


# ---- goal
def test_the_goal_needs_the_full_set_every_scenario_correct_and_the_target(tmp_path):
    kernel = tmp_path / "k.cpp"
    kernel.write_text("x")
    goal = Goal("naive", 2.0)
    assert goal_met(verdict(kernel, "full", 2.1), goal, FULL_IDS, [])
    assert not goal_met(verdict(kernel, "quick", 2.1), goal, FULL_IDS, []) and meets_target(
        verdict(kernel, "quick", 2.1), goal
    )
    assert not goal_met(verdict(kernel, "full", 1.9), goal, FULL_IDS, [])
    wrong = verdict(kernel, "full", 2.1)
    wrong["scenarios"][3]["correct"] = False
    assert not goal_met(wrong, goal, FULL_IDS, [])
    assert not goal_met(verdict(kernel, "full", None, status="error"), goal, FULL_IDS, [])


# ---- prices
def test_costs_come_from_the_table_and_unknown_models_cost_unknown():
    assert cost_usd("claude-sonnet-4-5-20250929", 1_000_000, 0) == 3.0
    assert cost_usd("claude-opus-4-1", 0, 1_000_000) == 75.0
    assert cost_usd("claude-sonnet-4-6", 0, 1_000_000) == 15.0
    assert cost_usd("claude-sonnet-4-50", 1, 1) is None and cost_usd("claude-sonnet-4-7", 1, 1) is None
    assert cost_usd("some-local-model", 1000, 1000) is None
