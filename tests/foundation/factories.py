"""Small builders for the rows most tests need; each goes through the services like real callers do."""

from runs.services import run_start, task_upsert


def make_task(name: str = "matmul_cpu", **overrides):
    fields = dict(
        name=name,
        target="cpu",
        starting_kernel="// naive\n",
        goal_baseline="naive",
        goal_speedup=2.0,
        title="float32 matrix product",
        # The scenarios of tests.dashboard.helpers.eval_result: its verdicts cover the task's full set.
        scenario_ids=["n256", "n512"],
    )
    fields.update(overrides)
    return task_upsert(**fields)


def make_run(task=None, **overrides):
    return run_start(task=task or make_task(), model=overrides.pop("model", "replay:demo"), **overrides)
