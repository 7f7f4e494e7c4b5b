import io

import pytest
from django.core.management import call_command

from gpu_harness import list_tasks
from runs.models import Task

pytestmark = pytest.mark.django_db


def test_every_harness_task_is_mirrored_with_its_starting_kernel_and_goal():
    call_command("sync_tasks", stdout=io.StringIO())
    call_command("sync_tasks", stdout=io.StringIO())
    assert sorted(Task.objects.values_list("name", flat=True)) == list_tasks()
    matmul = Task.objects.get(name="matmul_cpu")
    assert matmul.target == "cpu" and "kseek_matmul" in matmul.starting_kernel + matmul.description
    assert matmul.goal_speedup > 0 and matmul.goal_baseline
    attention = Task.objects.get(name="attention_fwd")
    assert attention.target == "cuda-sm90" and attention.starting_kernel_name == "naive.cu"


def test_the_sync_stores_the_harnesss_summary_of_each_task_for_its_pages():
    from gpu_harness import get_task
    from gpu_harness.tasks.summary import task_summary

    call_command("sync_tasks", stdout=io.StringIO())
    for name, target, defaults in (
        ("matmul_cpu", "cpu", ["numpy", "naive"]),
        ("attention_fwd", "cuda-sm90", ["cudnn", "flash", "fa3", "fa4"]),
    ):
        stored, harness = Task.objects.get(name=name), get_task(name)
        # One source: what is stored is the harness's summary, read back from the database unchanged.
        assert stored.spec == task_summary(harness)
        assert stored.spec["target"] == stored.target == target
        assert stored.spec["abi"] == harness.abi == stored.description
        assert [s["id"] for s in stored.spec["scenarios"]] == stored.scenario_ids == [s.id for s in harness.scenarios()]
        assert stored.spec["quick"] == harness.quick_ids()
        assert [b["name"] for b in stored.spec["baselines"] if b["default"]] == defaults
        assert all(b["describe"] for b in stored.spec["baselines"]) and stored.spec["tolerance"]
    matmul = Task.objects.get(name="matmul_cpu").spec
    assert matmul["scenarios"][0]["params"] == {"m": 1, "n": 1, "k": 1} and matmul["flops"] == "2*m*n*k"
    assert matmul["tolerance"] == "2 x numpy's own error + 1e-05"
