"""The reads of the task pages: what each task is (the harness's summary, Task.spec), who can run it now, and
its runs."""

from django.db.models import Count

from runs.models import Task
from runs.selectors import run_list
from runs.worker_pages.selectors import workers_serving_now

TASK_RUNS_SHOWN = 20


def _task_view(task: Task, serving: dict[str, int]) -> dict:
    """What the task pages show of one task, from its stored summary (`spec`, which `sync_tasks` fills from
    gpu_harness.tasks.summary.task_summary); a task synced before the summary existed shows its scenario ids
    and ABI only, and says how to fill the rest."""
    spec = task.spec or {}
    quick = set(spec.get("quick") or [])
    scenarios = spec.get("scenarios") or [{"id": sid, "params": {}} for sid in task.scenario_ids]
    # The summary's own order of the parameters (a stored object's keys may come back sorted otherwise).
    found = list(dict.fromkeys(key for scenario in scenarios for key in (scenario.get("params") or {})))
    params = [key for key in spec.get("parameters") or [] if key in found] + sorted(
        set(found) - set(spec.get("parameters") or [])
    )
    return {
        "task": task,
        "summarised": bool(spec),
        "description": spec.get("description") or "",
        "abi": spec.get("abi") or task.description,
        "language": spec.get("language") or ("cuda" if task.target == "cuda-sm90" else "cpp"),
        "scenarios": [
            {
                "id": scenario["id"],
                "values": [(scenario.get("params") or {}).get(key, "") for key in params],
                "quick": scenario["id"] in quick,
                "flop": f"{scenario['flops']:.3g}" if isinstance(scenario.get("flops"), (int, float)) else "—",
            }
            for scenario in scenarios
        ],
        "params": params,
        "quick_count": len(quick),
        "baselines": spec.get("baselines") or [],
        "tolerance": spec.get("tolerance") or "",
        "flops": spec.get("flops") or "",
        "serving": serving.get(task.target, 0),
    }


def task_overview() -> list[dict]:
    """Every registered task, name order, with what the tasks page lists of it (`_task_view`) and how many
    runs it has had."""
    serving = workers_serving_now()
    tasks = Task.objects.annotate(run_count=Count("runs")).order_by("name")
    return [_task_view(task, serving) for task in tasks]


def task_page(name: str) -> dict:
    """One task's page: `_task_view` and its newest runs. Task.DoesNotExist when there is none of that name."""
    task = Task.objects.get(name=name)
    view = _task_view(task, workers_serving_now())
    view["runs"] = list(run_list(task_name=name)[:TASK_RUNS_SHOWN])
    view["run_count"] = task.runs.count()
    return view
