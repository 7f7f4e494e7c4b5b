"""A question the bank made for GPU targets (blocks, warps, shared memory) is never offered on a CPU task, and a GPU
task still gets it: through the agent's own selection (the real `anthropic` client and a local Messages-API
server), the bank of a dashboard's assignment (`bank_from_wire`) and the bank file alike."""

from dataclasses import replace
from pathlib import Path

from agentloop.bank_source import bank_from_wire
from agentloop.config import Budgets
from questionbank.bank import load_bank
from tests.agentloop.helpers import make_config, payloads
from tests.agentloop.messages_api import Reply, text
from tests.agentloop.test_loop import run
from tests.agentloop.test_question_figures import entry_line, selection_prompts, two_turns

REPO = Path(__file__).resolve().parents[2]


def gpu_at_claimed_limit() -> set[str]:
    """The GPU-only questions of the shipped bank that suit the decision point of two_turns (a claimed limit)."""
    return {e.key for e in load_bank() if getattr(e, "targets", ()) == ("gpu",) and e.suits("claimed-limit")}


def gpu_config():
    """A run of the cuda-sm90 softmax_rows task (its evaluations scripted: no GPU is needed to choose questions)."""
    return replace(
        make_config(budgets=Budgets(steps=2)),
        task="softmax_rows",
        starting_kernel=(REPO / "tasks" / "softmax_rows" / "naive.cu").read_text(),
        kernel_filename="kernel.cu",
    )


def listed(prompt: str) -> list[str]:
    return [line[2:].split(" ", 1)[0] for line in prompt.splitlines() if line.startswith("- ")]


def test_the_shipped_bank_has_a_gpu_only_question_at_a_claimed_limit():
    assert "layer-grid-top-down" in gpu_at_claimed_limit()  # else the tests below would prove nothing


def test_a_cpu_run_is_never_offered_a_gpu_only_question_even_when_the_model_names_one(tmp_path):
    outcome, events, server = run(
        tmp_path,
        two_turns(),
        selections=[Reply([text("QUESTION: layer-grid-top-down\nREASON: the grid")])],
        config=make_config(budgets=Budgets(steps=2)),  # matmul_cpu: target cpu
    )
    prompt = selection_prompts(server)[0]
    assert "Decision point: claimed-limit" in prompt
    assert listed(prompt) and "layer-grid-top-down" not in listed(prompt)
    assert not set(listed(prompt)) & gpu_at_claimed_limit()
    [proposed] = payloads(events, "question_proposed")
    assert proposed["bank_key"] != "layer-grid-top-down" and proposed["by"] == "rule"


def test_a_gpu_run_still_gets_the_gpu_questions(tmp_path):
    outcome, events, server = run(
        tmp_path,
        two_turns(),
        selections=[Reply([text("QUESTION: layer-grid-top-down\nREASON: the grid")])],
        config=gpu_config(),
    )
    prompt = selection_prompts(server)[0]
    assert gpu_at_claimed_limit() <= set(listed(prompt))
    assert entry_line(prompt, "layer-grid-top-down") == "- layer-grid-top-down [layer] (not asked in earlier runs)"
    [proposed] = payloads(events, "question_proposed")
    assert (proposed["bank_key"], proposed["by"]) == ("layer-grid-top-down", "model")


def test_an_assignments_bank_keeps_each_entrys_targets_for_the_agent(tmp_path):
    wire = [
        {"key": "layer-warps", "text": "What does each warp own?", "category": "layer", "triggers": ["claimed-limit"]},
        {"key": "limit-evidence", "text": "What shows it?", "category": "limit", "triggers": ["claimed-limit"]},
    ]
    wire[0]["targets"] = ["gpu"]
    entries, problems = bank_from_wire(wire)
    assert problems == [] and [e.targets for e in entries] == [("gpu",), ()]
    outcome, events, server = run(
        tmp_path,
        two_turns(),
        selections=[Reply([text("QUESTION: layer-warps\nREASON: r")])],
        config=make_config(budgets=Budgets(steps=2)),
        bank=entries,
    )
    assert listed(selection_prompts(server)[0]) == ["limit-evidence"]
    assert payloads(events, "question_proposed")[0]["bank_key"] == "limit-evidence"


def test_an_assignments_entry_with_malformed_targets_is_left_out_with_the_reason():
    item = {"key": "layer-warps", "text": "Who owns what?", "category": "layer", "triggers": ["plateau"]}
    entries, problems = bank_from_wire([dict(item, targets=["gpu", "tpu"]), dict(item, key="layer-b", targets=None)])
    assert [e.key for e in entries] == ["layer-b"]  # null: every target, as when it is left out
    assert problems == ["bank entry 1 (layer-warps): unknown target(s) 'tpu' (known: cpu, gpu)"]
