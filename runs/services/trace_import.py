"""A browsable run made from a trace file: this dashboard's export, an agent-loop trace, a harness `--trace`."""

import json
from decimal import Decimal

from django.db import transaction

from runs.events import publish_after_commit
from runs.models import FINISHED_STATUSES, ReviewMode, Run, RunStatus, Step, StepKind, Task
from runs.services.errors import ServiceError
from runs.services.steps import as_datetime
from runs.services.worker_events import apply_step_effects, usage_of


_IMPORT_BATCH = 1000


def _trace_records(lines) -> list[dict]:
    """Parse JSONL; a last line cut short (a crash mid-write) is dropped, a broken line elsewhere is an error."""
    raw = [line.decode("utf-8") if isinstance(line, bytes) else line for line in lines]
    raw = [line for line in raw if line.strip()]
    records = []
    for number, line in enumerate(raw, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(raw):
                break
            raise ServiceError(f"line {number} is not JSON") from None
        if not isinstance(record, dict):
            raise ServiceError(f"line {number} is not a JSON object")
        records.append(record)
    if not records:
        raise ServiceError("the trace holds no events")
    return records


def _is_harness_line(record: dict) -> bool:
    # `python -m gpu_harness eval --trace`: one EvalResult per line, with kind=evaluation and no seq.
    return record.get("kind") == "evaluation" and "seq" not in record and "scenarios" in record


def _harness_line_as_event(record: dict, seq: int) -> dict:
    result = {k: v for k, v in record.items() if k not in ("kind", "note", "summary")}
    payload = {"purpose": "tool", "kernel_source": record.get("kernel_source") or "",
               "kernel_path": record.get("kernel_path") or "", "result": result}
    if record.get("note"):
        payload["note"] = record["note"]
    return {"seq": seq, "kind": StepKind.EVALUATION, "ts": record.get("finished_at") or None, "payload": payload}


def trace_import(*, lines, name: str, user=None) -> Run:
    """Make a browsable run from a trace: this dashboard's export, an agent-loop trace, or a harness `--trace` file.

    Steps are stored in bulk (a trace may hold tens of thousands); questions, kernels and evaluations are
    derived from their events as if a worker had sent them. The run ends in the trace's last finished status,
    or `stopped` when the trace stops before one (an imported run never runs on).
    """
    records = _trace_records(lines)
    meta = next((r for r in records if r.get("type") == "run"), {})
    if any(_is_harness_line(r) for r in records):
        events = [_harness_line_as_event(r, seq) for seq, r in enumerate(r for r in records if _is_harness_line(r))]
    else:
        events = [r for r in records if "seq" in r and "kind" in r and "type" not in r]
    if not events:
        raise ServiceError("the trace holds no run events")
    config = next(
        (e["payload"].get("config") for e in events
         if e.get("kind") == StepKind.STATUS and isinstance(e.get("payload"), dict) and e["payload"].get("config")),
        None,
    ) or {}
    task_name = meta.get("task") or config.get("task") or next(
        (e["payload"]["result"].get("task") for e in events if e.get("kind") == StepKind.EVALUATION
         and isinstance(e.get("payload"), dict) and isinstance(e["payload"].get("result"), dict)), None)
    task = Task.objects.filter(name=task_name).first() if task_name else None
    if task is None:
        raise ServiceError(f"the trace's task {task_name!r} is not known here" if task_name else "the trace names no task")

    with transaction.atomic():
        run = Run.objects.create(
            task=task, model=str(meta.get("model") or config.get("model") or f"import:{name}")[:120],
            starting_kernel=config.get("starting_kernel") or task.starting_kernel, started_by=user,
            review_mode=meta.get("review_mode") if meta.get("review_mode") in ReviewMode.values else ReviewMode.AUTO,
        )
        steps, seen = [], {}
        for number, event in enumerate(events, start=1):
            seq, kind, payload = event.get("seq"), event.get("kind"), event.get("payload")
            if kind not in StepKind.values or isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
                raise ServiceError(f"event {number}: needs a known kind and a non-negative seq")
            if not isinstance(payload, dict):
                raise ServiceError(f"event {number} (seq {seq}): payload must be a JSON object")
            if seq in seen:
                if seen[seq] != (kind, json.dumps(payload, sort_keys=True)):
                    raise ServiceError(f"seq {seq} appears twice with different events")
                continue
            seen[seq] = (kind, json.dumps(payload, sort_keys=True))
            tokens_in, tokens_out, cost = usage_of(event.get("usage"))
            steps.append(Step(run=run, seq=seq, kind=kind, payload=payload, created_at=as_datetime(event.get("ts")),
                              tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost))
        steps.sort(key=lambda s: s.seq)
        for start in range(0, len(steps), _IMPORT_BATCH):
            Step.objects.bulk_create(steps[start:start + _IMPORT_BATCH])
        final_status = RunStatus.STOPPED
        for step in steps:
            if step.kind == StepKind.STATUS and step.payload.get("status") in FINISHED_STATUSES:
                final_status = step.payload["status"]
        Run.objects.filter(pk=run.pk).update(
            last_seq=steps[-1].seq, step_count=len(steps), status=final_status,
            tokens_in=sum(s.tokens_in for s in steps), tokens_out=sum(s.tokens_out for s in steps),
            cost_usd=sum((s.cost_usd for s in steps), Decimal(0)),
            started_at=steps[0].created_at, finished_at=steps[-1].created_at,
        )
        run.refresh_from_db()
        effect_kinds = [StepKind.QUESTION_PROPOSED, StepKind.QUESTION_DECIDED, StepKind.EVALUATION]
        for step in Step.objects.filter(run=run, kind__in=effect_kinds).order_by("seq"):
            try:
                apply_step_effects(run=run, step=step)
            except (KeyError, TypeError, ValueError, AttributeError) as malformed:
                raise ServiceError(f"seq {step.seq}: a {step.kind} event of the wrong shape: {malformed!r}") from None
        run.refresh_from_db()  # the effects moved its best speedups
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run
