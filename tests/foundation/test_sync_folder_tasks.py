"""sync_tasks with task folders from KSEEK_TASKS_DIR: a folder's own [goal] is the task's one goal (nothing
else names one), a task without one is refused by name, and a broken folder is skipped with its reason instead of
stopping the others."""

import io

import pytest
from django.core.management import call_command

from gpu_harness.taskscaffold import scaffold
from runs.models import Task

pytestmark = pytest.mark.django_db


def test_a_folder_task_is_mirrored_with_its_own_goal_and_a_broken_one_is_skipped(tmp_path, monkeypatch):
    scaffold("demo_op", tmp_path)
    broken = scaffold("broken_op", tmp_path)
    (broken / "task.toml").write_text((broken / "task.toml").read_text().replace('"float32"', '"float33"', 1))
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(tmp_path))
    err = io.StringIO()
    call_command("sync_tasks", stdout=io.StringIO(), stderr=err)
    demo = Task.objects.get(name="demo_op")
    assert demo.target == "cpu" and (demo.goal_baseline, demo.goal_speedup) == ("numpy", 1.0)
    assert "kseek_demo_op" in demo.description and len(demo.scenario_ids) == 10
    assert not Task.objects.filter(name="broken_op").exists()
    assert "task broken_op: skipped" in err.getvalue() and "unknown dtype 'float33'" in err.getvalue()
    assert Task.objects.filter(name="matmul_cpu").exists()


def test_a_task_without_a_goal_is_refused_by_name(tmp_path, monkeypatch):
    goalless = scaffold("goalless_op", tmp_path)
    text = (goalless / "task.toml").read_text()
    assert "[goal]" in text
    (goalless / "task.toml").write_text(text.replace("[goal]\n", ""))
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(tmp_path))
    err = io.StringIO()
    call_command("sync_tasks", stdout=io.StringIO(), stderr=err)
    assert not Task.objects.filter(name="goalless_op").exists()
    assert "task goalless_op: skipped" in err.getvalue() and "goal.speedup: expected a number > 0" in err.getvalue()
    assert Task.objects.filter(name="matmul_cpu").exists()


def test_the_built_in_tasks_goals_are_their_folders_own():
    import tomllib
    from pathlib import Path

    from agentloop.policy import load_policy
    from gpu_harness.tasks import BUILTIN_TASKS_DIR

    repo = Path(__file__).resolve().parents[2]
    assert "goals" not in tomllib.loads((repo / "agentloop" / "policy.toml").read_text())
    assert not hasattr(load_policy(), "goals")
    call_command("sync_tasks", stdout=io.StringIO(), stderr=io.StringIO())
    for folder in sorted(BUILTIN_TASKS_DIR.glob("*/task.toml")):
        goal = tomllib.loads(folder.read_text())["goal"]
        task = Task.objects.get(name=folder.parent.name)
        assert (task.goal_baseline, task.goal_speedup) == (goal["baseline"], float(goal["speedup"]))
