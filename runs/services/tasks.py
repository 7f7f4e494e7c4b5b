"""Writes to tasks."""

from runs.models import Task


def task_upsert(
    *, name: str, target: str, starting_kernel: str, goal_baseline: str, goal_speedup: float,
    title: str = "", description: str = "", starting_kernel_name: str = "",
) -> Task:
    task, _ = Task.objects.update_or_create(
        name=name,
        defaults=dict(
            target=target, starting_kernel=starting_kernel, goal_baseline=goal_baseline, goal_speedup=goal_speedup,
            title=title, description=description, starting_kernel_name=starting_kernel_name,
        ),
    )
    return task
