"""The JSON the run page's scripts read: feed pages by seq, the header, the speedup chart, the pending count.

Sockets only say that something was stored (run id, seq, kind); these endpoints are where the page fetches it,
so what a browser shows always comes from committed rows, and a reconnect resumes by asking `after=<last seq>`.
"""

import json

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.views.decorators.http import require_safe

from questionbank.bank import keys_named_in
from questionbank.selectors import bank_texts_by_key
from runs.event_parser import INT_COLUMN_MAX
from runs.models import Evaluation, Run, Step, StepKind
from runs.run_pages.selectors import (
    FEED_PAGE_MAX,
    run_best_text,
    run_speedup_series,
    step_evaluations,
    step_summary,
    steps_page,
)
from runs.selectors import questions_pending_count, run_questions_waiting, run_usage_unknown
from runs.selectors_pages import run_or_404, step_or_404

PAYLOAD_INLINE_MAX = 20_000  # characters of JSON; a bigger payload is fetched when its step is expanded
NOTE_SHOWN_MAX = 2_000  # characters of an evaluation's note shown under its line (the whole is in its payload)


def step_notes(steps) -> dict[int, dict]:
    """seq -> the note of each evaluation step that has one (a harness `--trace` line's `--note`, kept by the
    import: in a released kernel's development run, the question asked then), with the bank questions it names by
    key: {"text": note, "questions": [{"key", "text"}]}. One read of the bank for all the steps."""
    notes = {}
    for step in steps:
        note = step.payload.get("note") if isinstance(step.payload, dict) else None
        if step.kind == StepKind.EVALUATION and isinstance(note, str) and note.strip():
            notes[step.seq] = note.strip()
    named = {seq: keys_named_in(note) for seq, note in notes.items()}
    bank = bank_texts_by_key({key for keys in named.values() for key in keys})
    return {
        seq: {
            "text": note[:NOTE_SHOWN_MAX],
            "questions": [{"key": key, "text": bank[key]} for key in named[seq] if key in bank],
        }
        for seq, note in notes.items()
    }


def step_json(
    step: Step, *, full: bool = False, note: dict | None = None, evaluation: Evaluation | None = None
) -> dict:
    """A step as the feed sends it; `note` is its entry of step_notes (None: it has none), `evaluation` its
    stored row (step_evaluations; None: none)."""
    payload_text = json.dumps(step.payload, default=str)
    inline = full or len(payload_text) <= PAYLOAD_INLINE_MAX
    return {
        "seq": step.seq,
        "kind": step.kind,
        "ts": step.created_at.isoformat(),
        "summary": step_summary(step, evaluation),
        "note": note,
        "payload": step.payload if inline else None,
        "payload_chars": len(payload_text),
        "tokens_in": step.tokens_in,
        "tokens_out": step.tokens_out,
    }


SEQ_MAX = INT_COLUMN_MAX  # Step.seq's column (a PositiveIntegerField) holds no more


class BadParameter(ValueError):
    """A query parameter a client got wrong: answered 400 with the reason, as JSON."""


def _int_param(request, name: str, *, minimum: int, maximum: int, default: int | None = None) -> int | None:
    value = request.GET.get(name)
    if value in (None, ""):
        return default
    # ASCII digits and an optional minus only (int() would also take " 7", "7_000" and "٧"); more than 12 digits
    # is out of range before int() has to read them.
    digits = value[1:] if value.startswith("-") else value
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 12 or not minimum <= int(value) <= maximum:
        raise BadParameter(f"{name} must be a whole number from {minimum} to {maximum}, not {value[:40]!r}")
    return int(value)


def _steps_query(request) -> dict:
    kinds = request.GET.getlist("kind")
    unknown = [k for k in kinds if k not in StepKind.values]
    if unknown:
        raise BadParameter(f"unknown kind {unknown[0][:40]!r}: one of {', '.join(StepKind.values)}")
    # after=-1 is "from the start" (the page asks for the steps after seq - 1 to fetch seq 0).
    seq = {"minimum": -1, "maximum": SEQ_MAX}
    return {
        "after": _int_param(request, "after", **seq),
        "before": _int_param(request, "before", **seq),
        "around": _int_param(request, "around", **seq),
        "limit": _int_param(request, "limit", minimum=1, maximum=FEED_PAGE_MAX, default=200),
        "kinds": kinds,
        "text": (request.GET.get("q") or "").strip() or None,
    }


@login_required
@require_safe
def run_steps(request, run_id: int):
    run = run_or_404(run_id)
    try:
        query = _steps_query(request)
    except BadParameter as bad:
        return JsonResponse({"error": str(bad)}, status=400)
    page = steps_page(run_id=run.pk, **query)
    notes = step_notes(page["steps"])
    evaluations = step_evaluations(page["steps"])
    return JsonResponse(
        {
            "run_id": run.pk,
            "run_last_seq": run.last_seq,
            "has_older": page["has_older"],
            "has_newer": page["has_newer"],
            "steps": [step_json(s, note=notes.get(s.seq), evaluation=evaluations.get(s.seq)) for s in page["steps"]],
        }
    )


@login_required
@require_safe
def run_step(request, run_id: int, seq: int):
    step = step_or_404(run_id, seq)
    return JsonResponse(
        step_json(step, full=True, note=step_notes([step]).get(step.seq), evaluation=step_evaluations([step]).get(seq))
    )


def run_summary_json(run: Run) -> dict:
    return {
        "id": run.pk,
        "status": run.status,
        "status_label": run.get_status_display(),
        "status_reason": run.status_reason,
        "best_speedup": run.best_speedup,
        # The header's text of it, as the page renders it: its interval, "no difference" where that holds 1.0,
        # its label (runs.run_pages.selectors.run_best_text); the page sets it as it is.
        "best_text": run_best_text(run),
        "best_speedups": run.best_speedups,
        # Each of them as the page writes it, with its interval ("no difference (…)" where that holds 1.0).
        "best_texts": run.best_texts(),
        "step_count": run.step_count,
        "last_seq": run.last_seq,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost_usd": float(run.cost_usd),
        # false where a model's price was unknown: cost_usd is then a floor, and cost_text says "at least" (the
        # page sets it as it is).
        "cost_complete": not run.cost_incomplete,
        "cost_text": run.cost_text,
        # An imported trace that records no usage: the page writes its tokens and cost as unknown, not zero.
        "usage_unknown": run_usage_unknown(run),
        "imported": bool(run.imported_from),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "pending_questions": run_questions_waiting(run),
        "worker": run.worker.name if run.worker else None,
        "worker_gpu": run.worker_gpu if run.worker else "",  # which of the host's GPUs it holds ("gpu 1")
        # When the host holding the unfinished run lost its connection ("" if not known); null while it is
        # connected or when the run needs no host.
        "worker_offline_since": (
            (run.worker.disconnected_at.isoformat() if run.worker.disconnected_at else "") if run.host_offline else None
        ),
        "worker_revoked": bool(run.worker and not run.worker.is_active),
    }


@login_required
@require_safe
def run_summary(request, run_id: int):
    return JsonResponse(run_summary_json(run_or_404(run_id, "worker")))


@login_required
@require_safe
def run_chart(request, run_id: int):
    return JsonResponse(run_speedup_series(run_or_404(run_id, "task")))


@login_required
@require_safe
def pending_count(request):
    return JsonResponse({"pending": questions_pending_count()})
