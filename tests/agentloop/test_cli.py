"""`python -m agentloop run` on the CPU task with the replay model: the whole system offline, real harness."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.trace import read_trace

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"


def agentloop(*args, cwd, env_extra=None, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update({"PYTHONPATH": str(REPO), "KSEEK_AGENT_RUNS": str(cwd / "runs"), **(env_extra or {})})
    return subprocess.run(
        [sys.executable, "-m", "agentloop", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def suspect_timing(events) -> bool:
    """Whether the harness refused a timing of this run as suspect (a burst of load on a shared machine)."""
    return any(
        "suspect timing" in (s.get("reason") or "")
        for e in events
        if e["kind"] == "evaluation"
        for s in e["payload"]["result"].get("scenarios", [])
    )


@pytest.mark.sandbox  # `agentloop run` runs the replay's commands and evaluations under bubblewrap
def test_the_demo_replay_runs_offline_with_the_real_harness(tmp_path):
    recorded = read_trace(DEMO)
    goal = recorded[0]["payload"]["config"]["goal"]
    # The demo is built so that timing noise cannot change its path: its starting kernel is far below the goal
    # and its final kernel far above it (as recorded here).
    recorded_speedups = [e["payload"]["speedup"] for e in recorded if e["kind"] == "evaluation"]
    assert recorded_speedups[0] < goal["speedup"] / 2 and recorded_speedups[-1] > goal["speedup"] * 2
    # Only a harness verdict that refused a timing as suspect (load on a shared machine, not the demo's path) earns
    # a second attempt; every other failure fails the test at once.
    for attempt in range(2):
        trace = tmp_path / f"trace{attempt}.jsonl"
        proc = agentloop(
            "run",
            "--task",
            "matmul_cpu",
            "--model",
            f"replay:{DEMO}",
            "--trace",
            str(trace),
            "--workspace",
            str(tmp_path / f"workspace{attempt}"),
            "--quiet",
            cwd=tmp_path,
        )
        events = read_trace(trace)
        if proc.returncode == 0 or not suspect_timing(events):
            break
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Its first line says the goal it pursues is the recording's, not the task's (new-user audit finding 6: the
    # run ended "GOAL MET" at 1.3x over naive with the task's 2x goal nowhere said to be another).
    assert "; goal 0.5x over naive (the task's is 2x over naive)\n" in proc.stderr.splitlines(keepends=True)[0]
    assert [e["kind"] for e in events] == [e["kind"] for e in recorded]
    evaluations = [e["payload"] for e in events if e["kind"] == "evaluation"]
    # Measured now, by the harness, not copied from the recording.
    assert evaluations[-1]["purpose"] == "goal_check" and evaluations[-1]["goal_met"]
    assert (
        evaluations[-1]["result"]["started_at"]
        != [e["payload"] for e in recorded if e["kind"] == "evaluation"][-1]["result"]["started_at"]
    )
    assert evaluations[0]["speedup"] < goal["speedup"] <= evaluations[-1]["speedup"]
    assert (tmp_path / f"workspace{attempt}" / "kernel.cpp").read_text().startswith("// i-k-j order")
    assert "succeeded (goal_met)" in proc.stderr


def test_bad_arguments_get_a_clear_error_not_a_traceback(tmp_path):
    # --unsandboxed: where no sandbox works the run is refused for that first (exit 4); nothing runs here either way
    proc = agentloop("run", "--unsandboxed", "--task", "no_such_task", "--model", f"replay:{DEMO}", cwd=tmp_path,
                     timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "unknown task 'no_such_task'" in proc.stderr and "Traceback" not in proc.stderr
    proc = agentloop("run", "--unsandboxed", "--model", f"replay:{tmp_path / 'missing.jsonl'}", cwd=tmp_path,
                     timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "cannot read trace" in proc.stderr
    proc = agentloop("run", "--unsandboxed", "--task", "matmul_cpu", "--model", "claude-sonnet-4-6", cwd=tmp_path,
                     timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "ANTHROPIC_API_KEY" in proc.stderr


def test_a_new_run_onto_a_trace_that_holds_a_run_is_refused_and_the_trace_is_kept(tmp_path):
    trace = tmp_path / "trace.jsonl"
    held = DEMO.read_text(encoding="utf-8")
    trace.write_text(held, encoding="utf-8")
    # --unsandboxed: on a host with no working sandbox the run would be refused for that first (exit 4)
    proc = agentloop("run", "--unsandboxed", "--model", f"replay:{DEMO}", "--trace", str(trace), "--quiet",
                     cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "already holds a run" in proc.stderr and f"--resume {trace}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert trace.read_text(encoding="utf-8") == held


@pytest.mark.sandbox
def test_run_hides_the_folders_named_with_hide_from_the_models_commands(tmp_path):
    """`agentloop run --hide DIR`, as the worker has it (hostile-model audit, finding 12: before it, a standalone
    run's shell read the dashboard's data folder, its SQLite database and secret key)."""
    from tests.agentloop.messages_api import MessagesServer, Reply, Script, tool_use

    data = tmp_path / "data"
    data.mkdir()
    (data / "secret_key").write_text("SECRET-KEY-CANARY-12")
    look = f"ls -a {data}; cat {data}/secret_key"
    with MessagesServer(Script([Reply([tool_use("shell", {"command": look})])])) as server:
        done = agentloop(
            "run", "--task", "matmul_cpu", "--model", "claude-sonnet-4-6", "--base-url", server.url,
            "--max-steps", "1", "--quiet", "--hide", str(data), "--trace", str(tmp_path / "trace.jsonl"),
            cwd=tmp_path, env_extra={"ANTHROPIC_API_KEY": "sk-test"},
        )  # fmt: skip
    assert "failed (budget_steps)" in done.stderr, done.stderr  # it ran its one step
    [result] = [e["payload"] for e in read_trace(tmp_path / "trace.jsonl") if e["kind"] == "tool_result"]
    assert "SECRET-KEY-CANARY-12" not in result["output"] and "No such file" in result["output"], result["output"]
    assert (data / "secret_key").read_text() == "SECRET-KEY-CANARY-12"  # hidden, not touched


@pytest.mark.parametrize(
    "held",
    [
        "",
        '{"seq":0,"kind":"note","payload":{}}\n',
        '{"v":1,"run_id":"r","seq":0,"kind":"note","payload":{"text":"x"}}\n',
    ],
    ids=["empty", "no run_id", "no started status"],
)
def test_resuming_a_trace_that_holds_no_run_is_refused_clearly(tmp_path, held):
    """--resume of an empty file (what a run that could not start left) or of a file that is not a run's trace:
    before, an empty one went on to a ValueError (or, without --task, asked for --task) and a foreign one to a
    KeyError, both as tracebacks."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text(held, encoding="utf-8")
    proc = agentloop("run", "--unsandboxed", "--resume", str(trace), "--model", "openai:m",
                     cwd=tmp_path, env_extra={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "holds no run to resume" in proc.stderr and "Traceback" not in proc.stderr
    assert trace.read_text(encoding="utf-8") == held


def test_a_run_whose_model_cannot_be_made_leaves_no_trace_file(tmp_path):
    trace = tmp_path / "runs" / "t.jsonl"
    proc = agentloop("run", "--unsandboxed", "--task", "matmul_cpu", "--model", "claude-sonnet-4-6",
                     "--trace", str(trace), cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "ANTHROPIC_API_KEY" in proc.stderr
    assert not trace.exists()


def _openai_trace_cut_before_its_end(tmp_path, server) -> Path:
    """The trace of an `openai:` run that took one step, as a crash would leave it before its end (no final
    status), with a budget of two steps so that its resumption makes a model call."""
    import json

    trace = tmp_path / "trace.jsonl"
    done = agentloop("run", "--unsandboxed", "--task", "matmul_cpu", "--model", "openai:qwen-local",
                     "--max-steps", "1", "--quiet", "--trace", str(trace), cwd=tmp_path,
                     env_extra={"OPENAI_BASE_URL": server.url})  # fmt: skip
    assert "failed (budget_steps)" in done.stderr, done.stderr[-2000:]
    events = read_trace(trace)[:-1]
    events[0]["payload"]["config"]["budgets"]["steps"] = 2
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return trace


def test_a_resumed_run_goes_on_with_the_model_its_trace_names(tmp_path):
    """Before, --resume without --model took $KSEEK_MODEL or claude-sonnet-4-6: an `openai:` run went on with Claude,
    on the Anthropic key (or stopped for want of one), while its trace still named the OpenAI-compatible model."""
    from tests.agentloop.chat_api import ChatServer, answer, call

    with ChatServer([answer(calls=[call("shell", {"command": "echo hi"})]) for _ in range(2)]) as server:
        trace = _openai_trace_cut_before_its_end(tmp_path, server)
        resumed = agentloop("run", "--unsandboxed", "--resume", str(trace), "--quiet", cwd=tmp_path,
                            env_extra={"OPENAI_BASE_URL": server.url, "KSEEK_MODEL": "claude-sonnet-4-6"})  # fmt: skip
        assert "failed (budget_steps)" in resumed.stderr, resumed.stderr[-2000:]
        assert [r["body"]["model"] for r in server.requests] == ["qwen-local", "qwen-local"]
        refused = agentloop("run", "--unsandboxed", "--resume", str(trace), "--model", "claude-sonnet-4-6",
                            cwd=tmp_path, env_extra={"OPENAI_BASE_URL": server.url})  # fmt: skip
    assert refused.returncode == 2 and "runs on openai:qwen-local" in refused.stderr, refused.stderr[-2000:]
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("flags", [["--max-steps", "5"], ["--task", "matmul_cpu", "--goal-speedup", "3"]])
def test_a_setting_the_trace_records_is_refused_with_resume_not_dropped(tmp_path, flags):
    """With --resume, the trace's task, goal and budgets apply: a --max-steps given too was dropped without a
    word, so a user who meant to extend the run's budget got the old one."""
    done = agentloop("run", "--unsandboxed", "--resume", str(tmp_path / "any.jsonl"), *flags, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    named = [flag for flag in flags if flag.startswith("--")]
    assert f"--resume goes on with the task, goal and budgets its trace records: drop {', '.join(named)}" in done.stderr


def test_the_last_line_says_what_the_model_calls_took_and_an_unknown_price_as_a_floor(tmp_path):
    """Before, the terminal said nothing of the cost (its usage lines are skipped): a run on a model the price
    table does not know must say its cost is unknown, never $0, and a priced one its cost."""
    from tests.agentloop.chat_api import ChatServer, answer, call
    from tests.agentloop.messages_api import MessagesServer, Reply, Script, tool_use

    with ChatServer([answer(calls=[call("shell", {"command": "echo hi"})])]) as server:
        unpriced = agentloop("run", "--unsandboxed", "--task", "matmul_cpu", "--model", "openai:qwen-local",
                             "--max-steps", "1", "--quiet", "--trace", str(tmp_path / "a.jsonl"), cwd=tmp_path,
                             env_extra={"OPENAI_BASE_URL": server.url})  # fmt: skip
    assert "1 model calls (120 tokens in, 30 out), cost unknown: at least $0.0000" in unpriced.stderr, unpriced.stderr
    with MessagesServer(Script([Reply([tool_use("shell", {"command": "echo hi"})], input_tokens=1000)])) as server:
        priced = agentloop("run", "--unsandboxed", "--task", "matmul_cpu", "--base-url", server.url,
                           "--max-steps", "1", "--quiet", "--trace", str(tmp_path / "b.jsonl"), cwd=tmp_path,
                           env_extra={"ANTHROPIC_API_KEY": "sk-test"})  # fmt: skip
    # claude-sonnet-4-6 at $3/$15 per million: 1000 in and 20 out are $0.0033
    assert "1 model calls (1000 tokens in, 20 out), cost $0.0033;" in priced.stderr, priced.stderr


@pytest.mark.parametrize(
    "flag", ["--max-steps", "--max-tokens", "--max-cost", "--max-wall-s", "--max-evaluations", "--goal-speedup"]
)
@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_budget_or_goal_that_is_not_above_zero_is_refused_naming_the_flag(flag, value, capsys):
    """Before, 0 was read as not given (--max-steps 0 ran 50 steps, --max-cost 0 had no limit) and a negative
    budget started a run that ended before its first call."""
    from agentloop.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "--unsandboxed", "--task", "matmul_cpu", flag, value])
    assert exited.value.code == 2
    assert f"argument {flag}: must be above 0, not {value}" in capsys.readouterr().err


def test_a_runs_first_line_names_its_goal_and_the_tasks_only_where_they_differ():
    from agentloop.cli import _goal_words
    from agentloop.config import Goal, RunConfig

    def config(baseline, speedup):
        return RunConfig(
            task="matmul_cpu", goal=Goal(baseline, speedup), model="m", starting_kernel="", kernel_filename="k.cpp"
        )

    assert _goal_words(config("naive", 2.0)) == "goal 2x over naive"
    assert _goal_words(config("numpy", 2.0)) == "goal 2x over numpy (the task's is 2x over naive)"


@pytest.mark.sandbox  # `agentloop run` runs its evaluations under bubblewrap
def test_a_run_whose_best_is_from_the_quick_set_does_not_end_calling_it_verified(tmp_path):
    # Against a local Messages API server (--base-url): one quick evaluation, then the model stops. The run's last
    # line said "best verified speedup 1.02x" while its own decision points said "quick set only, not verified"
    # (new-user audit finding 10).
    from tests.agentloop.messages_api import MessagesServer, Reply

    evaluate = {"type": "tool_use", "id": "t1", "name": "evaluate", "input": {"scenarios": "quick"}}
    replies = iter([Reply([{"type": "text", "text": "Measuring."}, evaluate])])
    done = Reply([{"type": "text", "text": "That is as fast as it goes."}])
    with MessagesServer(lambda request: next(replies, done)) as server:
        proc = agentloop(
            "run", "--task", "matmul_cpu", "--model", "claude-sonnet-4-6", "--base-url", server.url,
            "--max-steps", "2", "--quiet", cwd=tmp_path, env_extra={"ANTHROPIC_API_KEY": "test"},
        )  # fmt: skip
    last = proc.stderr.strip().splitlines()[-1]
    assert "failed (budget_steps)" in last, proc.stderr[-3000:]
    assert "; best quick: " in last and "quick set only, not verified;" in last and "verified speedup" not in last
