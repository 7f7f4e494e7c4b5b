"""Writes to tasks."""

from runs.models import Task


def task_upsert(
    *,
    name: str,
    target: str,
    starting_kernel: str,
    goal_baseline: str,
    goal_speedup: float,
    title: str = "",
    description: str = "",
    starting_kernel_name: str = "",
    scenario_ids: list[str] | None = None,
    spec: dict | None = None,
) -> Task:
    """Create or update a task. `scenario_ids` is its full scenario set, which a run's success is checked against
    (an empty list: no evaluation can confirm a goal on this task). `spec`: the harness's summary of it
    (gpu_harness.tasks.summary.task_summary), which its pages show, stored as it is."""
    task, _ = Task.objects.update_or_create(
        name=name,
        defaults=dict(
            target=target,
            starting_kernel=starting_kernel,
            goal_baseline=goal_baseline,
            goal_speedup=goal_speedup,
            title=title,
            description=description,
            starting_kernel_name=starting_kernel_name,
            scenario_ids=list(scenario_ids or []),
            spec=dict(spec or {}),
        ),
    )
    return task
