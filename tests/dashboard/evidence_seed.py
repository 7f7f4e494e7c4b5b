"""An attention-like evaluation of 180 scenarios, stored as a worker's would be: for the evidence view's page and
browser tests (and its screenshot). Deterministic: every figure follows from the scenario's index."""

from gpu_harness import get_task
from gpu_harness.tasks.summary import task_summary
from runs.services import evaluation_record, kernel_record, task_upsert

BASELINES = ["cudnn", "flash", "fa3", "fa4"]
PEAKS = {"peak_tflops": 800.0, "peak_gbps": 4000.0}
WRONG = {7, 61, 122}  # indexes of the scenarios it gets wrong
NOT_RUN = {170, 171, 172, 173}  # ... and of those it never ran
OVER_PEAK = 3  # one scenario whose rate is above the measured peak: a suspect figure


def attention_task():
    spec = task_summary(get_task("attention_fwd"))
    return task_upsert(
        name="attention_fwd",
        target="cuda-sm90",
        starting_kernel="// naive attention\n",
        goal_baseline="cudnn",
        goal_speedup=1.1,
        title="attention forward",
        scenario_ids=[s["id"] for s in spec["scenarios"]],
        spec=spec,
    )


def _scenario(i: int, s: dict) -> dict:
    if i in NOT_RUN:
        return {"id": s["id"], "params": s["params"], "correct": False, "reason": "not run: no GPU on this host"}
    # A spread of speed-ups from about 0.6x to 2.4x over cudnn, different for each baseline.
    base = 0.6 + ((i * 37) % 100) / 55
    speedup = {b: round(base * (1.0 - 0.12 * k if i % 3 else 1.0 + 0.05 * k), 6) for k, b in enumerate(BASELINES)}
    # As fast as 300 TFLOP/s or 1500 GB/s times the speed-up allow, whichever is slower: below the peaks.
    time_ms = max(s["flops"] / (300e12 * base), s["bytes"] / (1500e9 * base)) * 1e3
    if i == OVER_PEAK:
        time_ms = s["flops"] / (1000e12) * 1e3
    outcome = {
        "id": s["id"],
        "params": s["params"],
        "correct": i not in WRONG,
        "error": 0.002201252665921785 if i not in WRONG else 0.41,
        "reason": "max error 0.41 above the tolerance 0.02" if i in WRONG else None,
        "time_ms": time_ms,
        "tflops": s["flops"] / (time_ms * 1e-3) / 1e12,
        "speedup": speedup,
    }
    return outcome


def attention_evaluation(run=None):
    """The task, a kernel and its evaluation of all 180 scenarios (3 wrong, 4 never run)."""
    task = attention_task()
    scenarios = [_scenario(i, s) for i, s in enumerate(task.spec["scenarios"])]
    verdict = {
        "task": task.name,
        "status": "incorrect",
        "reason": "3 scenarios are wrong",
        "host": "h200-a",
        "device_name": "NVIDIA H200",
        "scenarios": scenarios,
        "geomean": _geomean(scenarios),
        "peaks": dict(PEAKS),
        "scenario_set": "full",
    }
    kernel = kernel_record(task=task, source="// attention v7\n", filename="attention.cu", run=run)
    return evaluation_record(kernel=kernel, result=verdict, run=run)


def _geomean(scenarios: list[dict]) -> dict:
    from gpu_harness.verdict import geomean_speedups

    return geomean_speedups([s["speedup"] for s in scenarios if s["correct"]], BASELINES)
