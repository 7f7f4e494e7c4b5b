"""Mirror the harness's tasks (gpu_harness/tasks) into the database, idempotently.

The harness defines what a task is (ABI, scenarios, starting kernel, target) and summarises it for the task pages
(gpu_harness.tasks.summary.task_summary, stored whole in Task.spec); a task's one goal is its folder's task.toml
[goal], the same goal `python -m agentloop run` uses. A task without one is refused by name rather than given an
invented one.

A task root (KSEEK_TASKS_DIR) that holds a suite's manifest (suite.json: `python -m gpu_harness task
import-kernelbench` writes one) is read as a suite after the tasks (runs.services.suites.suite_sync), each of its
imported problems linked to its task; a malformed manifest is reported and skipped, the rest still loaded.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.models import Target
from runs.services import ServiceError, suite_sync, task_upsert
from runs.suite_manifest import MANIFEST
from runs.task_pages.selectors_suites import suite_problem_counts


class Command(BaseCommand):
    help = "Load the harness's tasks and their goals into the database (idempotent)."

    def handle(self, *args, **options):
        from gpu_harness import get_task, list_tasks
        from gpu_harness.tasks.summary import task_summary

        for name in list_tasks():
            try:
                task = get_task(name)
            except ValueError as error:  # a broken task folder (KSEEK_TASKS_DIR) is skipped, not fatal to the rest
                self.stderr.write(f"task {name}: skipped: {error}")
                continue
            goal = task.goal
            if not goal or "baseline" not in goal or "speedup" not in goal:
                raise CommandError(f"task {name} has no goal: give its task.toml a [goal] (baseline, speedup)")
            summary = task_summary(task)
            target = summary["target"]
            if target not in Target.values:
                raise CommandError(f"task {name}: target {target!r} is not one the dashboard knows ({Target.values})")
            starting = Path(task.starting_kernel)
            task_upsert(
                name=name,
                target=target,
                title=name.replace("_", " "),
                description=task.abi,
                spec=summary,
                starting_kernel=starting.read_text(),
                starting_kernel_name=starting.name,
                goal_baseline=goal["baseline"],
                goal_speedup=float(goal["speedup"]),
                scenario_ids=[scenario.id for scenario in task.scenarios()],
            )
            self.stdout.write(f"task {name}: {target}, goal {goal['speedup']}x over {goal['baseline']}")
        self.sync_suites()

    def sync_suites(self) -> None:
        """Every task root holding a suite.json, as a suite (the first root of a folder name wins, as for tasks)."""
        from gpu_harness.tasks import task_roots

        seen: set[str] = set()
        for root in task_roots():
            if not (root / MANIFEST).is_file() or root.resolve().name in seen:
                continue
            seen.add(root.resolve().name)
            try:
                suite = suite_sync(root)
            except ServiceError as error:  # nothing of it was stored; the tasks and other suites stand
                self.stderr.write(f"suite {root}: skipped: {error}")
                continue
            problems, linked = suite_problem_counts(suite)
            self.stdout.write(f"suite {suite.name}: {suite.source}, {problems} problems, {linked} tasks linked")
