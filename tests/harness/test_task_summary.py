"""gpu_harness.tasks.summary.task_summary: one JSON-safe summary of every task (each a folder)."""

import json

import pytest

from gpu_harness import get_task, list_tasks
from gpu_harness.tasks.summary import SUMMARY_VERSION, task_summary

KEYS = {
    "version",
    "name",
    "description",
    "target",
    "language",
    "symbol",
    "abi",
    "parameters",
    "scenarios",
    "quick",
    "baselines",
    "libraries",
    "tolerance",
    "flops",
    "goal",
    "starting_kernel",
}


@pytest.mark.parametrize("name", list_tasks())
def test_every_task_summarises_to_the_same_json_shape(name):
    task = get_task(name)
    summary = task_summary(task)
    assert set(summary) == KEYS and summary["version"] == SUMMARY_VERSION
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary  # stored as JSON, read back the same
    assert summary["target"] in ("cpu", "cuda-sm90") and summary["description"] and summary["tolerance"]
    ids = [s["id"] for s in summary["scenarios"]]
    assert ids == [s.id for s in task.scenarios()] and set(summary["quick"]) <= set(ids)
    assert [b["name"] for b in summary["baselines"] if b["default"]] == list(task.default_baselines)


def test_a_folder_tasks_summary_is_its_spec():
    task = get_task("matmul_cpu")
    summary = task_summary(task)
    spec = task.spec
    assert (summary["description"], summary["target"]) == (spec.description, spec.target.name)
    assert summary["tolerance"] == spec.tolerance.describe() and summary["flops"] == spec.flops.text
    assert [b["describe"] for b in summary["baselines"]] == [b.describe(spec.folder) for b in spec.baselines.values()]
    assert summary["goal"] == {"baseline": "naive", "speedup": 2.0} and summary["starting_kernel"] == "naive.cpp"
    assert summary["parameters"] == ["m", "n", "k"]  # as task.toml writes them
    assert summary["libraries"] == []  # matmul_cpu marks no baseline a library


def test_a_gpu_tasks_summary_names_its_libraries_in_order():
    assert task_summary(get_task("softmax_rows"))["libraries"] == ["eager", "compile", "quack"]
    assert task_summary(get_task("gemm_bias_gelu"))["libraries"] == ["eager", "epilogue", "compile"]


def test_attentions_summary_describes_every_baseline_it_knows():
    summary = task_summary(get_task("attention_fwd"))
    assert summary["target"] == "cuda-sm90" and summary["language"] == "cuda"
    described = {b["name"]: b["describe"] for b in summary["baselines"]}
    assert set(described) == {"cudnn", "flash", "fa3", "fa4"} and all(v != k for k, v in described.items())
    assert summary["tolerance"].startswith("o: 2 x cudnn's (else flash's) own error on seed a's inputs")
    assert summary["starting_kernel"] == "naive.cu"
    assert all(isinstance(s["params"]["causal"], bool) for s in summary["scenarios"])
