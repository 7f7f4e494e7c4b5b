"""The demo run: the CPU task driven by the replay model from agentloop/replays/matmul_cpu_demo.jsonl, with the
goal and starting kernel recorded in that trace. Its tools and evaluations run for real, so whoever starts it sees
a run stream live, ask itself questions and reach its goal, with no API key. `serve` queues one on an empty
site; an operator starts another from the runs list whenever they are watching, or the review demo, which waits
at its first question for a reviewer's decision."""

from pathlib import Path

from django.conf import settings

from runs.model_options import DEMO_TRACE, recorded_config, recorded_start
from runs.models import ReviewMode, Run, Task
from runs.services import ServiceError, run_start


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
        model=f"replay:{DEMO_TRACE}",
        started_by=started_by,
        **recorded_start(config),
        review_mode=ReviewMode.REVIEW if review else ReviewMode.AUTO,
        budget_steps=200,
    )
