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
