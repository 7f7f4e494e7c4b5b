"""The task statement says what a `best_library` goal is over (the task's own definition: on each scenario the
fastest of its libraries), so a model is not left to guess from the baseline's name; other goals read as before."""

from agentloop.agent import task_facts
from agentloop.config import Goal, RunConfig
from agentloop.policy import load_policy


def _prompt(task: str, baseline: str) -> str:
    config = RunConfig(
        task=task,
        goal=Goal(baseline=baseline, speedup=1.0),
        model="replay:demo",
        starting_kernel="// start\n",
        kernel_filename="kernel.cu",
    )
    return load_policy().task_prompt(config, task_facts(task))


def test_a_best_library_goal_names_the_libraries_it_is_the_fastest_of():
    prompt = _prompt("softmax_rows", "best_library")
    assert (
        "speedup of at least 1x over\nthe baseline `best_library` (on each scenario, the fastest of the libraries "
        "eager, compile, quack that runs it)." in prompt
    )


def test_a_goal_over_one_baseline_reads_as_before():
    prompt = _prompt("matmul_cpu", "naive")
    assert "over\nthe baseline `naive`.\n" in prompt
    assert "fastest of the libraries" not in prompt
