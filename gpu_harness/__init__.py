"""gpu_harness: decides whether a candidate kernel is correct and how fast it is, in a way it cannot fool.

Plain Python (no Django); torch is imported lazily, only by the GPU tasks, so task definitions, the verdict
logic, compile checks and the CPU task work where torch is absent.

    from gpu_harness import evaluate
    from gpu_harness.report import render_table
    result = evaluate("matmul_cpu", "tasks/matmul_cpu/naive.cpp", scenarios="quick")
    print(render_table(result))
"""

from .evaluate import evaluate
from .result import EvalResult, ScenarioOutcome
from .tasks import get_task, list_tasks

__all__ = ["evaluate", "EvalResult", "ScenarioOutcome", "get_task", "list_tasks"]
