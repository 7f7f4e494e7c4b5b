"""The demo run: the CPU task driven by the replay model from agentloop/replays/matmul_cpu_demo.jsonl, with the
goal and starting kernel recorded in that trace. Its tools and evaluations run for real, so whoever starts it sees
a run stream live, ask itself questions and reach its goal, with no API key. That goal is the trace's own (0.5x over
naive, below the task's 2.0x), so the pages that show a demo's status or best say which goal it met (`goal_note`). `serve` queues one on an empty
site; an operator starts another from the runs list whenever they are watching, or the review demo, which waits
at its first question for a reviewer's decision."""

from pathlib import Path

from django.conf import settings

from gpu_harness.figures import format_speedup
from runs.model_options import DEMO_TRACE, recorded_config, recorded_start
from runs.models import ReviewMode, Run, Task
from runs.services import ServiceError, run_start

DEMO_MODEL = f"replay:{DEMO_TRACE}"


def goal_note(run: Run | None) -> str:
    """Where `run` is judged against a goal of its own, not its task's: the words that say so beside its status or
    best ("demo goal 0.500× over naive (the task's is 2.000×)"), so that "goal met" is never read as the task's;
    "" where the goals are the same (or there is no run). Template filter `goal_note`."""
    if run is None:
        return ""
    baseline, speedup = run.goal
    task_baseline, task_speedup = run.task.goal_baseline, run.task.goal_speedup
    if (baseline, speedup) == (task_baseline, task_speedup):
        return ""
    task_goal = format_speedup(task_speedup, times="×")
    if task_baseline != baseline:
        task_goal += f" over {task_baseline}"
    whose = "demo goal" if run.model == DEMO_MODEL else "its own goal"
    return f"{whose} {format_speedup(speedup, times='×')} over {baseline} (the task's is {task_goal})"


def demo_config() -> dict:
    """The run settings recorded in the demo trace's first event (docs/protocol.md, `status` with `config`)."""
    path = Path(settings.BASE_DIR) / DEMO_TRACE
    config = recorded_config(path)
    if not config:
        raise ServiceError(f"{path}: the first event carries no run config")
    return config


def demo_run_start(*, started_by=None, review: bool = False) -> Run:
    """Queue the demo. `review`: the review demo, the same recording in review mode: the run stops at its first
    self-asked question until a reviewer approves, edits or vetoes it in the review queue, then plays on."""
    config = demo_config()
    task = Task.objects.filter(name=config["task"]).first()
    if task is None:
        raise ServiceError(f"the demo needs task {config['task']}: run `manage.py sync_tasks` first")
    return run_start(
        task=task,
        model=DEMO_MODEL,
        started_by=started_by,
        **recorded_start(config),
        review_mode=ReviewMode.REVIEW if review else ReviewMode.AUTO,
        budget_steps=200,
    )
