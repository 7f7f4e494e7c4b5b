"""The bank learns which questions help: the figures of earlier runs reach the prompt with which the agent picks
its own question (through the real `anthropic` client and a local Messages-API server), whether the run is
standalone (the bank file, figures from a file) or a dashboard's (bank and figures in the `assign` message,
reviewers' own questions included)."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentloop.bank_source import bank_from_wire, load_stats_file, stats_from_wire
from agentloop.config import Budgets
from agentloop.errors import ConfigError
from agentloop.trace import read_trace
from agentloop.worker.client import Worker
from questionbank.bank import BankEntry, load_bank
from tests.agentloop.fake_server import FakeServer
from tests.agentloop.helpers import NAIVE, ScriptedEvaluator, anthropic_model, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use
from tests.agentloop.test_loop import run

REPO = Path(__file__).resolve().parents[2]
BANK = {e.key: e for e in load_bank()}
LIMIT = "This is the hardware limit; it cannot go any faster."
REVIEWER_ENTRY = {
    "key": "reviewer-what-does-b-cost",
    "text": "What does each element of B cost you, and how often?",
    "category": "layer",
    "triggers": ["claimed-limit", "plateau"],
    "active": True,
}


def two_turns() -> list[Reply]:
    """A limit claimed in the first turn; the question asked there reaches the model in the second (no model call,
    a question selection included, starts once the steps budget is spent)."""
    return [
        Reply([text(LIMIT), tool_use("shell", {"command": "true"})]),
        Reply([tool_use("shell", {"command": "true"})]),
    ]


def selection_prompts(server) -> list[str]:
    return [r["body"]["messages"][0]["content"][0]["text"] for r in server.requests if not r["body"].get("tools")]


def entry_line(prompt: str, key: str) -> str:
    return next(line for line in prompt.splitlines() if line.startswith(f"- {key} "))


def test_the_selection_prompt_the_model_receives_shows_each_questions_figures(tmp_path):
    stats = {
        "limit-measured-against-bound": {"asked": 7, "mean_gain": 1.4321, "large_gain_rate": 3 / 7},
        "limit-no-stopping": {"asked": 2, "mean_gain": None, "large_gain_rate": None},
    }
    outcome, events, server = run(
        tmp_path,
        two_turns(),
        selections=[Reply([text("QUESTION: limit-measured-against-bound\nREASON: x")])],
        config=make_config(budgets=Budgets(steps=2)),
        question_stats=stats,
    )
    prompt = selection_prompts(server)[0]
    assert "Decision point: claimed-limit" in prompt
    assert entry_line(prompt, "limit-measured-against-bound") == (
        "- limit-measured-against-bound [limit] (asked 7 times; mean gain x1.43; large gain after 43%)"
    )
    assert entry_line(prompt, "limit-no-stopping") == (
        "- limit-no-stopping [limit] (asked 2 times; mean gain unknown; large-gain rate unknown)"
    )
    assert entry_line(prompt, "limit-someone-passed-it").endswith("(not asked in earlier runs)")
    assert payloads(events, "question_proposed")[0]["bank_key"] == "limit-measured-against-bound"


def test_without_figures_every_question_is_shown_as_not_asked_before(tmp_path):
    _, _, server = run(
        tmp_path,
        two_turns(),
        selections=[Reply([text("QUESTION: limit-no-stopping")])],
        config=make_config(budgets=Budgets(steps=2)),
    )
    prompt = selection_prompts(server)[0]
    assert "asked 7 times" not in prompt
    assert entry_line(prompt, "limit-measured-against-bound").endswith("(not asked in earlier runs)")


def test_when_the_model_names_no_question_the_rule_uses_the_figures_too(tmp_path):
    # Without figures the rule takes the first limit question of the bank that suits a claimed limit; with
    # figures saying that one was tried often and helped little, it tries an under-tried one first.
    first, second = [e.key for e in load_bank() if e.category == "limit" and e.suits("claimed-limit")][:2]
    picks = []
    for name, stats in (("plain", None), ("figures", {first: {"asked": 9, "mean_gain": 1.01, "large_gain_rate": 0.0}})):
        _, events, _ = run(
            tmp_path / name,
            two_turns(),
            selections=[Reply([text("no idea")])],
            config=make_config(budgets=Budgets(steps=2)),
            question_stats=stats,
        )
        proposed = payloads(events, "question_proposed")[0]
        assert proposed["by"] == "rule"
        picks.append(proposed["bank_key"])
    assert picks == [first, second]


# ---- where the bank and the figures come from


def test_a_servers_bank_keeps_reviewers_entries_and_leaves_out_bad_ones_with_reasons():
    entries, problems = bank_from_wire(
        [
            REVIEWER_ENTRY,
            {"key": "Bad Key", "text": "x?", "category": "layer", "triggers": ["plateau"]},
            {"key": "no-trigger", "text": "Why?", "category": "layer", "triggers": ["teatime"]},
            {**REVIEWER_ENTRY, "text": "the same key again?"},
            "not an entry",
        ]
    )
    assert entries == [BankEntry(REVIEWER_ENTRY["key"], REVIEWER_ENTRY["text"], "layer", ("claimed-limit", "plateau"))]
    assert len(problems) == 4
    assert any("Bad Key" in p for p in problems) and any("teatime" in p for p in problems)
    assert any("duplicate key" in p for p in problems) and any("not an object" in p for p in problems)
    assert bank_from_wire({"key": "x"}) == ([], ["bank must be a list of entries, not dict"])


def test_figures_are_read_from_an_export_or_a_plain_mapping_and_bad_rows_are_named():
    export = {
        "generated_at": "…",
        "large_gain_ratio": 1.2,
        "questions": [
            {
                "key": "layer-memory-reuse",
                "text": "…",
                "category": "layer",
                "active": True,
                "added_by": "",
                "asked": 4,
                "attributed": 3,
                "mean_gain": 1.25,
                "large_gains": 1,
                "large_gain_rate": 0.3333,
                "runs": 2,
                "vetoed": 1,
            },
            {"key": "limit-no-stopping", "asked": 0, "mean_gain": None, "large_gain_rate": None},
        ],
    }
    stats, problems = stats_from_wire(export)
    assert problems == []
    assert stats == {
        "layer-memory-reuse": {"asked": 4, "mean_gain": 1.25, "large_gain_rate": 0.3333},
        "limit-no-stopping": {"asked": 0, "mean_gain": None, "large_gain_rate": None},
    }
    stats, problems = stats_from_wire(
        {
            "a": {"asked": 2, "mean_gain": 1.1, "large_gain_rate": 0.5},
            "b": {"asked": -1},
            "c": {"asked": 1, "mean_gain": "big"},
            "d": {"asked": 1, "large_gain_rate": 1.5},
            "e": [1],
        }
    )
    assert list(stats) == ["a"]
    assert [p.split(":")[0] for p in problems] == [f"question stats for {k}" for k in "bcde"]


def test_a_bad_stats_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_stats_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        load_stats_file(tmp_path / "bad.json")
    (tmp_path / "wrong.json").write_text(json.dumps({"k": {"asked": "many"}}))
    with pytest.raises(ConfigError, match="question stats for k: asked must be"):
        load_stats_file(tmp_path / "wrong.json")


# ---- a dashboard's run: the worker passes the assignment's bank and figures to the loop


def test_a_worker_offers_the_servers_bank_with_its_figures_including_a_reviewers_question(tmp_path):
    bank = [
        REVIEWER_ENTRY,
        {
            "key": "limit-no-stopping",
            "text": BANK["limit-no-stopping"].text,
            "category": "limit",
            "triggers": ["claimed-limit", "stopped-short"],
            "active": True,
        },
    ]
    assignment = {
        "id": 11,
        "task": "matmul_cpu",
        "model": "claude-sonnet-4-6",
        "starting_kernel": NAIVE,
        "starting_kernel_name": "kernel.cpp",
        "goal": {"baseline": "naive", "speedup": 2.0},
        "budgets": {"steps": 2, "tokens": None, "cost_usd": None, "wall_s": None, "evaluations": None},
        "review_mode": "auto",
        "review_timeout_s": None,
        "bank": bank,
        "question_stats": {
            REVIEWER_ENTRY["key"]: {"asked": 3, "mean_gain": 1.8, "large_gain_rate": 1.0},
            "limit-no-stopping": {"asked": 12, "mean_gain": 1.02, "large_gain_rate": 0.0},
        },
    }
    messages = MessagesServer(
        Script(two_turns(), [Reply([text(f"QUESTION: {REVIEWER_ENTRY['key']}\nREASON: it helped")])])
    )
    with messages, FakeServer("tok", [assignment]) as server:
        worker = Worker(
            server=server.url,
            token="tok",
            gpus=[0],
            state_dir=tmp_path / "state",
            use_bwrap=False,
            model_factory=lambda spec, settings: anthropic_model(messages),
            agent_kwargs={"evaluator": ScriptedEvaluator()},
        )
        thread = threading.Thread(target=worker.serve, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 60
            while not server.finished(11) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            worker.stop.set()
            thread.join(10)
    assert server.finished(11)
    prompt = selection_prompts(messages)[0]
    # Only the server's bank is offered (the file's other limit questions are not), with the server's figures.
    assert [line.split()[1] for line in prompt.splitlines() if line.startswith("- ")] == [
        REVIEWER_ENTRY["key"],
        "limit-no-stopping",
    ]
    assert entry_line(prompt, REVIEWER_ENTRY["key"]).endswith("(asked 3 times; mean gain x1.80; large gain after 100%)")
    assert REVIEWER_ENTRY["text"] in prompt
    events = server.events(11)
    proposed = payloads(events, "question_proposed")[0]
    assert (proposed["bank_key"], proposed["category"], proposed["by"]) == (REVIEWER_ENTRY["key"], "layer", "model")
    assert payloads(events, "question_decided")[0]["text"] == REVIEWER_ENTRY["text"]
    # The worker kept the bank next to the trace, so that a resumed run asks from the same one.
    saved = json.loads((tmp_path / "state" / "runs" / "11" / "questions.json").read_text())
    assert saved["bank"] == bank and saved["question_stats"] == assignment["question_stats"]
    assert read_trace(tmp_path / "state" / "runs" / "11" / "trace.jsonl")[-1]["payload"]["reason"] == "budget_steps"


def test_an_assignment_without_a_bank_uses_the_bank_file(tmp_path):
    worker = Worker(server="ws://127.0.0.1:1", token="tok", gpus=[0], state_dir=tmp_path / "state")
    worker._save_questions(5, {"id": 5})
    assert worker._question_kwargs(5) == {}
    worker._save_questions(6, {"id": 6, "bank": [{"key": "Bad Key"}], "question_stats": {}})
    assert worker._question_kwargs(6) == {"question_stats": {}}  # no usable entry: the file's bank


# ---- a standalone run: figures from a file


def test_a_standalone_run_shows_figures_from_an_exported_file(tmp_path):
    stats_file = tmp_path / "effectiveness.json"
    stats_file.write_text(
        json.dumps(
            {"questions": [{"key": "limit-someone-passed-it", "asked": 5, "mean_gain": 2.5, "large_gain_rate": 0.8}]}
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_", "OPENAI_"))}
    with MessagesServer(
        Script(two_turns(), [Reply([text("QUESTION: limit-someone-passed-it\nREASON: it worked before")])])
    ) as s:
        env.update({"PYTHONPATH": str(REPO), "KSEEK_AGENT_RUNS": str(tmp_path / "runs"), "ANTHROPIC_API_KEY": "sk-t"})
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentloop",
                "run",
                "--task",
                "matmul_cpu",
                "--model",
                "claude-sonnet-4-6",
                "--base-url",
                s.url,
                "--max-steps",
                "2",
                "--question-stats",
                str(stats_file),
                "--no-bwrap",
                "--quiet",
                "--trace",
                str(tmp_path / "trace.jsonl"),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert "budget_steps" in proc.stderr, proc.stderr[-3000:]
    prompt = selection_prompts(s)[0]
    assert entry_line(prompt, "limit-someone-passed-it").endswith(
        "(asked 5 times; mean gain x2.50; large gain after 80%)"
    )
    proposed = payloads(read_trace(tmp_path / "trace.jsonl"), "question_proposed")[0]
    assert proposed["bank_key"] == "limit-someone-passed-it"

    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentloop",
            "run",
            "--task",
            "matmul_cpu",
            "--model",
            "claude-sonnet-4-6",
            "--unsandboxed",  # where no sandbox works the run is refused for that first; nothing runs here
            "--question-stats",
            str(bad),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "question stats" in proc.stderr and "Traceback" not in proc.stderr
    bad_bank = tmp_path / "bank.toml"
    bad_bank.write_text('[[question]]\nkey = "x"\ntext = "Why?"\ncategory = "gossip"\ntriggers = ["plateau"]\n')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentloop",
            "run",
            "--task",
            "matmul_cpu",
            "--model",
            "claude-sonnet-4-6",
            "--unsandboxed",
            "--bank",
            str(bad_bank),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "unknown category 'gossip'" in proc.stderr and "Traceback" not in proc.stderr
