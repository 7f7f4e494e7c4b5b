"""Several processes writing to the default SQLite database at once wait for each other instead of failing.

Without WAL and BEGIN IMMEDIATE, a transaction that reads and then writes can fail with "database is locked"
when another writer got there first; daphne workers, the local agent worker and commands write at once.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# its own site processes, on the embedded defaults: the first CI pass only (tests/conftest.py)
pytestmark = pytest.mark.embedded_defaults

WRITER = """
import sys, django
django.setup()
from runs.models import Run
from runs.services import run_set_status, step_record
run = Run.objects.get(pk=int(sys.argv[1]))
offset = int(sys.argv[2])
for i in range(60):
    step_record(run=run, seq=offset * 1000 + i, kind="note", payload={"text": f"writer {offset}, step {i}"})
    # run_set_status reads the run and then writes it in one transaction: the pattern that fails with
    # "database is locked" when a deferred transaction must upgrade its read lock while another process writes.
    run_set_status(run=run, status="paused" if i % 2 else "running")
"""

SETUP = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from runs.services import run_start, task_upsert
task = task_upsert(name="t", target="cpu", starting_kernel="x", goal_baseline="naive", goal_speedup=2)
from runs.services import run_set_status
run = run_start(task=task, model="m")
print(run_set_status(run=run, status="running").pk)
"""

COUNT = """
import sys, django
django.setup()
from runs.models import Run
run = Run.objects.get(pk=int(sys.argv[1]))
print(run.steps.count(), run.step_count)
"""


def test_four_processes_writing_steps_at_once_all_succeed(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(DJANGO_SETTINGS_MODULE="kseek_site.settings", KSEEK_DATA_DIR=str(tmp_path))

    def python(code, *args, **kwargs):
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            **kwargs,
        )

    run_id = python(SETUP).stdout.strip()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, run_id, str(n)], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
        )
        for n in range(4)
    ]
    errors = [w.communicate(timeout=120)[1] for w in writers]
    assert all(w.returncode == 0 for w in writers), "\n".join(errors)
    # Every row stored, and the run's counter (updated in the same transactions) agrees with the rows.
    assert python(COUNT, run_id).stdout.split() == ["240", "240"]
