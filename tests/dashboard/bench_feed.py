"""Benchmark (not a test): how long a 12,000-step run's page and feed pages take to serve.

    KSEEK_DATA_DIR=$(mktemp -d) .venv/bin/python tests/dashboard/bench_feed.py [steps]

Uses a fresh SQLite data folder (migrated here); prints the median of 20 requests for each URL.
"""

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kseek_site.settings")
if "KSEEK_DATA_DIR" not in os.environ:
    sys.exit("set KSEEK_DATA_DIR to an empty folder: this benchmark writes a database there")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from runs.services import task_upsert, trace_import  # noqa: E402


def main(steps: int) -> None:
    call_command("migrate", verbosity=0)
    task_upsert(name="matmul_cpu", target="cpu", starting_kernel="//\n", goal_baseline="naive", goal_speedup=2.0)
    lines = [
        json.dumps(
            {
                "seq": 0,
                "kind": "status",
                "ts": "2026-11-30T12:00:00+00:00",
                "payload": {"status": "running", "reason": "started", "config": {"task": "matmul_cpu"}},
            }
        )
    ]
    lines += [
        json.dumps(
            {
                "seq": s,
                "kind": "tool_result",
                "ts": "2026-11-30T12:00:00+00:00",
                "payload": {"name": "shell", "output": f"output line {s}\n" * 20, "exit_code": 0},
            }
        )
        for s in range(1, steps)
    ]
    started = time.perf_counter()
    run = trace_import(lines=lines, name="bench.jsonl")
    print(f"import of {steps} steps: {time.perf_counter() - started:.2f} s")
    client = Client(HTTP_HOST="localhost")
    client.force_login(get_user_model().objects.create_superuser("bench", password="bench-pw-12345"))
    for label, url in [
        ("run page", f"/runs/{run.pk}/"),
        ("last 200 steps", f"/runs/{run.pk}/steps/"),
        ("200 steps before 6000", f"/runs/{run.pk}/steps/?before=6000"),
        ("text search", f"/runs/{run.pk}/steps/?q=line%205999"),
    ]:
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            assert client.get(url).status_code == 200
            times.append(time.perf_counter() - t0)
        print(f"{label:24s} median {statistics.median(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 12_000)
