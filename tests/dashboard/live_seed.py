"""Seed a live server's database for the browser tests; prints what the tests need as one JSON line.

Run as `python tests/dashboard/live_seed.py` with KSEEK_DATA_DIR pointing at the live server's (migrated) data.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kseek_site.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402

from gpu_harness import get_task  # noqa: E402
from gpu_harness.tasks.summary import task_summary  # noqa: E402
from runs.services import task_upsert, trace_import, worker_host_create  # noqa: E402
from tests.dashboard.evidence_seed import attention_evaluation  # noqa: E402

PASSWORD = "live-pw-123456789"


def user(name: str, role: str):
    account = get_user_model().objects.create_user(name, password=PASSWORD)
    account.groups.add(Group.objects.get(name=role))


def long_trace(steps: int) -> list[str]:
    lines = [
        json.dumps(
            {
                "v": 1,
                "run_id": "local-big",
                "seq": 0,
                "kind": "status",
                "ts": "2026-11-30T12:00:00+00:00",
                "payload": {
                    "status": "running",
                    "reason": "started",
                    "config": {"task": "matmul_cpu", "model": "replay:long"},
                },
                "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
            }
        )
    ]
    for seq in range(1, steps):
        lines.append(
            json.dumps(
                {
                    "v": 1,
                    "run_id": "local-big",
                    "seq": seq,
                    "kind": "note",
                    "ts": "2026-11-30T12:00:01+00:00",
                    "payload": {"text": f"long-run note {seq}", "level": "info"},
                    "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
                }
            )
        )
    return lines


task_upsert(
    name="matmul_cpu",
    target="cpu",
    starting_kernel="// naive\n",
    goal_baseline="naive",
    goal_speedup=2.0,
    title="float32 matrix product",
    # The harness's summary, for the task pages; the scenario ids stay the test verdicts' (n256, n512).
    spec=task_summary(get_task("matmul_cpu")),
    scenario_ids=["n256", "n512"],  # a test verdict over both is a full one: its figures are verified
)
user("olga", "operator")
user("rita", "reviewer")
_, token = worker_host_create(name="live-worker", gpus=["cpu"])
big = trace_import(lines=long_trace(12_000), name="long.jsonl")
evidence = attention_evaluation()  # 180 attention scenarios, for the evidence view
print(json.dumps({"token": token, "password": PASSWORD, "big_run": big.pk, "evidence_evaluation": evidence.pk}))
