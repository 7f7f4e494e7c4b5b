"""A stand-in for `python -m gpu_harness.service` for the worker's GPU tests (tests/agentloop/test_worker_gpus.py):
HarnessEvaluator starts it exactly as it starts the real harness, and it answers each request with a correct
verdict that also says which GPU its environment names (`cuda_visible_devices`), so that a test can see, from
inside the harness process, the GPU a run's evaluations would use. No GPU and no compiler needed."""

import json
import os
import sys

from tests.agentloop.helpers import verdict

for line in sys.stdin:
    request = json.loads(line)
    result = verdict(request["kernel"], request["scenarios"], 1.0)
    result["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    result["harness_pid"] = os.getpid()
    print(json.dumps({"id": request["id"], "result": result}), flush=True)
