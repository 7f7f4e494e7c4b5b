"""Writes to kernels and evaluations (a harness verdict with its per-scenario rows)."""

import hashlib
import math
from typing import cast

from django.db import transaction

from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES, kernel_source_refusal
from gpu_harness import figures
from runs.events import publish_after_commit
from runs.models import Evaluation, EvaluationStatus, Kernel, Run, ScenarioResult, Step, Task
from runs.services.errors import ServiceError
from runs.services.steps import as_datetime


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def kernel_record(
    *,
    source: str,
    task: Task | None = None,
    language: str = "cuda",
    target_arch: str = "",
    filename: str = "",
    parent: Kernel | None = None,
    run: Run | None = None,
    step: Step | None = None,
) -> Kernel:
    """Store a kernel's source. Within one run the same source is one kernel, however often it is evaluated.

    A source over the protocol's limit (KERNEL_SOURCE_MAX_BYTES) is refused, whoever sends it: a worker's
    evaluation is then refused for good and kept on its run, a trace import refused with its line."""
    _within_source_limit(source)
    digest = sha256_text(source)
    if run is not None:
        existing = Kernel.objects.filter(run=run, sha256=digest).first()
        if existing:
            return existing
    return Kernel.objects.create(
        source=source,
        sha256=digest,
        task=task,
        language=language,
        target_arch=target_arch,
        filename=filename,
        parent=parent,
        run=run,
        step=step,
    )


def _within_source_limit(source: str) -> None:
    # Under a quarter of the limit in characters, the UTF-8 bytes are within it: no encoding needed.
    if len(source) > KERNEL_SOURCE_MAX_BYTES // 4:
        refusal = kernel_source_refusal(len(source.encode("utf-8", "surrogatepass")))
        if refusal:
            raise ServiceError(refusal)


def kernel_release(*, kernel: Kernel, name: str) -> Kernel:
    if not name:
        raise ServiceError("a released kernel needs a name")
    with transaction.atomic():
        Kernel.objects.filter(released=True, release_name=name).exclude(pk=kernel.pk).update(released=False)
        kernel.released, kernel.release_name = True, name
        kernel.save(update_fields=["released", "release_name"])
    return kernel


def evaluation_record(*, kernel: Kernel, result: dict, run: Run | None = None, step: Step | None = None) -> Evaluation:
    """Store a harness verdict (`EvalResult.to_dict()`) with its per-scenario rows, all or nothing.

    When the evaluation is a verified one (correct on every scenario of its task's full set, measured here: not
    a quick one, not an imported trace's claim; `_counts_toward_best`) and beats the run's best over the run's
    goal baseline, the run's best speedups move with it.
    """
    status = cast(str, result.get("status"))  # (checked just below)
    if status not in EvaluationStatus.values:
        raise ServiceError(f"unknown evaluation status {status!r}")
    scenarios = result.get("scenarios") or []
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            kernel=kernel,
            run=run,
            step=step,
            host=result.get("host") or "",
            gpu_name=result.get("device_name") or "",
            status=status,
            reason=result.get("reason") or "",
            scenario_set=str(result.get("scenario_set") or "")[:40],
            geomean=result.get("geomean") or {},
            peaks=_peaks(result.get("peaks")),
            host_load=figures.host_load(result),
            started_at=as_datetime(result["started_at"]) if result.get("started_at") else None,
            finished_at=as_datetime(result["finished_at"]) if result.get("finished_at") else None,
        )
        ScenarioResult.objects.bulk_create(
            ScenarioResult(
                evaluation=evaluation,
                scenario_id=s["id"],
                params=s.get("params") or {},
                correct=bool(s.get("correct")),
                error=s.get("error"),
                reason=s.get("reason") or "",
                time_ms=s.get("time_ms"),
                tflops=s.get("tflops"),
                speedups=s.get("speedup") or {},
                noise=figures.scenario_noise_fields(s),
            )
            for s in scenarios
        )
        if run is not None and _counts_toward_best(run, result):
            _raise_run_best(run, result)
    return evaluation


def _peaks(value) -> dict:
    # Only the two figures the pages read, and only as positive numbers: a worker's verdict is not trusted blindly.
    value = value if isinstance(value, dict) else {}
    peaks = {}
    for name in ("peak_tflops", "peak_gbps"):
        figure = value.get(name)
        if isinstance(figure, (int, float)) and not isinstance(figure, bool) and math.isfinite(figure) and figure > 0:
            peaks[name] = float(figure)
    return peaks


def _counts_toward_best(run: Run, verdict: dict) -> bool:
    """A run's best is a headline figure: only a verified verdict moves it (gpu_harness.figures.standing), so a
    quick-set outlier or a figure copied from an imported trace never becomes the run's best."""
    full_ids = list(run.task.scenario_ids or [])
    verified = figures.standing(verdict, full_ids, imported=bool(run.imported_from)) == figures.VERIFIED
    return verified and figures.all_correct(verdict)


def _raise_run_best(run: Run, verdict: dict) -> None:
    run = Run.objects.select_for_update().get(pk=run.pk)
    best = figures.best_per_baseline(run.best_speedups, verdict)
    intervals = figures.best_intervals_after(run.best_speedups, run.best_intervals, verdict)
    best_over_goal = figures.best_so_far(run.best_speedup, figures.verified_speedup(verdict, run.goal[0]))
    fields = []
    if best != run.best_speedups:
        run.best_speedups = best
        fields.append("best_speedups")
    if intervals != run.best_intervals:
        run.best_intervals = intervals
        fields.append("best_intervals")
    if best_over_goal != run.best_speedup:
        run.best_speedup = best_over_goal
        fields.append("best_speedup")
    if fields:
        run.save(update_fields=fields + ["updated_at"])
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)


def evaluation_meets_goal(evaluation: Evaluation, run: Run) -> bool:
    """Whether this stored evaluation confirms `run`'s goal, by the server's own reading of it (docs/protocol.md
    1.2 `goal_met`): a correct verdict, every scenario correct, every scenario of the task's full set among them,
    and the geometric-mean speedup over the run's goal baseline at least the run's target beyond the noise (the
    low end of its interval, `gpu_harness.figures.clears_target`, as the agent loop's own check). The worker's own
    `goal_met` is not taken on trust."""
    baseline, target = run.goal
    return figures.goal_met(evaluation.verdict(), baseline, target, list(run.task.scenario_ids or []))


def run_goal_evaluation(run: Run) -> Evaluation | None:
    """The run's stored evaluation that confirms its goal, or None."""
    for evaluation in Evaluation.objects.filter(run=run, status=EvaluationStatus.CORRECT).order_by("-pk"):
        if evaluation_meets_goal(evaluation, run):
            return evaluation
    return None
