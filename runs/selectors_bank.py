"""The question bank's effectiveness figures, read from runs' rows: which questions are followed by gains.

The maths lives in `questionbank.effectiveness` (plain data, no Django); this module only turns runs' rows into
`RunHistory` values and its results into rows for pages and exports. It lives in `runs`, not in the bank, because
it reads runs' questions and evaluations: `questionbank` is the lower layer and imports nothing from `runs`.

A verified speedup is `gpu_harness.figures.headline_speedup` over the RUN's goal baseline (`Run.goal`), the one
the run was judged against, as the run's own best speedup is: a figure a harness of this site measured on the
task's full set, correct on every scenario. An imported run's figures (its trace's claims) and quick-set figures
are never verified, so they are no gain's base and no gain (issue 34; docs/architecture.md, "standing").
Each verified speedup carries its 95% interval (`gpu_harness.figures.geomean_interval` over the same baseline,
None where the verdict has none), from which the attribution tells a large gain beyond the noise from one inside
it, or says the noise is unknown (`questionbank.effectiveness`); `gain_text` writes a gain as pages write any
speed-up, with its interval.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_harness import figures as verdict_figures
from questionbank import effectiveness as eff
from questionbank.bank import CATEGORIES
from questionbank.models import QuestionCategory
from questionbank.selectors import bank_questions, large_gain_ratio
from runs.model_options import DEMO_TRACE
from runs.models import (
    Evaluation,
    EvaluationStatus,
    Question,
    QuestionSource,
    QuestionStatus,
    Run,
    standing_verdict,
)

# A question's status as the bank's attribution reads it: asked (approved, edited, answered), vetoed, or pending.
QUESTION_OUTCOME: dict[str, str] = {
    QuestionStatus.APPROVED: eff.ASKED,
    QuestionStatus.EDITED: eff.ASKED,
    QuestionStatus.ANSWERED: eff.ASKED,
    QuestionStatus.VETOED: eff.VETOED,
    QuestionStatus.PROPOSED: eff.PENDING,
}


# How many whole verdicts one query reads for their intervals (under SQLite's limit on a query's parameters).
INTERVAL_BATCH = 500

# Runs the bank page may leave out of its figures: the demo (a recorded run played back), any replay (its turns
# are a recording's, not a model's answer to the question), and runs imported from a trace.
EXCLUDABLE = {
    "demo": "the demo run",
    "replay": "replayed runs",
    "imported": "imported runs",
}


def _excluded(run: Run, exclude: frozenset[str]) -> bool:
    return (
        ("imported" in exclude and bool(run.imported_from))
        or ("replay" in exclude and run.model.startswith("replay:"))
        or ("demo" in exclude and run.model == f"replay:{DEMO_TRACE}")
    )


def _one_per_origin(runs: list[Run]) -> list[Run]:
    """Each original run once: a run and its imports (or several imports of one trace) have one origin
    (`Run.origin_key`); the run itself is kept where it is here, else its first import."""
    kept: dict[str, Run] = {}
    for run in sorted(runs, key=lambda r: (bool(r.origin), r.pk)):
        kept.setdefault(run.origin_key, run)
    return sorted(kept.values(), key=lambda r: r.pk)


def _question_credit(q: Mapping[str, Any]) -> tuple[str | None, str]:
    """(bank key, source) a question's figures count under. A question a reviewer replaced with their own
    (`Question.replaced`) is the reviewer's: the agent was asked the reviewer's question, so the bank entry that
    was proposed is not credited with what followed. An edit keeps the entry's credit (its wording changed). A
    replacement in an imported run is its trace's claim, which no reviewer here made: credited to no one; so is a
    question an imported trace says a person proposed (`Question.trace_proposed_by`)."""
    if q["trace_proposed_by"] == QuestionSource.HUMAN:
        return None, ""
    if q["replaced"]:
        return None, "" if q["run__imported_from"] else QuestionSource.HUMAN
    return q["bank_entry__key"], q["source"]


# ------------------------------------------------------------------------------------------------ histories


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _verified_positive(verdict: dict, baseline: str, full_ids: list[str], imported: bool) -> float | None:
    """The verified speedup (`headline_speedup`: measured here on the task's full set, correct on all of it; None
    for an imported claim or a quick-set figure), when it can be a gain's base (a ratio needs a positive one)."""
    speedup = verdict_figures.headline_speedup(verdict, baseline, full_ids, imported=imported)
    return speedup if speedup is not None and speedup > 0 else None


def run_histories(run_ids: list[int] | None = None, exclude=frozenset()) -> list[eff.RunHistory]:
    """The question and verified-evaluation history of each run that has questions (or of `run_ids`), each
    original run once (`_one_per_origin`), leaving out the kinds of run named in `exclude` (EXCLUDABLE).

    Events are ordered by their step's sequence number when every question and evaluation of the run has a
    step, and otherwise by the time the server stored them, so that one run never mixes the two orders.
    """
    questions = Question.objects.all()
    if run_ids is not None:
        questions = questions.filter(run_id__in=run_ids)
    question_rows = list(
        questions.order_by("created_at", "pk").values(
            "id",
            "run_id",
            "step__seq",
            "created_at",
            "bank_entry__key",
            "bank_entry__category",
            "category",
            "source",
            "decision_point",
            "status",
            "replaced",
            "trace_proposed_by",
            "run__imported_from",
        )
    )
    exclude = frozenset(exclude)
    if unknown := exclude - set(EXCLUDABLE):
        raise ValueError(f"cannot exclude {', '.join(sorted(unknown))}: use {', '.join(EXCLUDABLE)}")
    candidates = Run.objects.filter(pk__in={q["run_id"] for q in question_rows}).select_related("task")
    runs = {run.pk: run for run in _one_per_origin([r for r in candidates if not _excluded(r, exclude)])}
    ids = sorted(runs)
    # Only a correct status can be verified; its verdict says whether it is correct on all it ran.
    evaluation_rows = list(
        Evaluation.objects.filter(run_id__in=ids, status=EvaluationStatus.CORRECT)
        .order_by("created_at", "pk")
        .values(
            "id",
            "run_id",
            "step__seq",
            "created_at",
            "status",
            "scenarios_correct",
            "verdict__geomean",
            "kernel__sha256",
        )
    )

    questions_by_run, evaluations_by_run = defaultdict(list), defaultdict(list)
    for q in question_rows:
        questions_by_run[q["run_id"]].append(q)
    for e in evaluation_rows:
        evaluations_by_run[e["run_id"]].append(e)

    # run -> evaluation id -> its verified speedup; then each of those evaluations' interval
    speedups = {run_id: _verified_speedups(runs[run_id], evaluations_by_run[run_id]) for run_id in ids}
    intervals = _goal_intervals({e_id: runs[run_id].goal[0] for run_id in ids for e_id in speedups[run_id]})
    return [
        _run_history(runs[run_id], questions_by_run[run_id], evaluations_by_run[run_id], speedups[run_id], intervals)
        for run_id in ids
    ]


def _verified_speedups(run: Run, evaluation_rows: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """evaluation id -> its verified speedup over the run's goal baseline, for those that have one."""
    baseline, full_ids, imported = run.goal[0], list(run.task.scenario_ids or []), bool(run.imported_from)
    speedups = {}
    for e in evaluation_rows:
        verdict = standing_verdict(e["status"], e["scenarios_correct"], e["verdict__geomean"])
        speedup = _verified_positive(verdict, baseline, full_ids, imported)
        if speedup is not None:
            speedups[e["id"]] = speedup
    return speedups


def _goal_intervals(baselines: dict[int, str]) -> dict[int, tuple[float, float] | None]:
    """evaluation id -> the 95% interval of its geometric-mean speedup over `baselines[id]` (its run's goal
    baseline): `gpu_harness.figures.geomean_interval`, the interval the run pages write beside each speed-up; None
    where the verdict has none (from before the harness measured one, or an interval missing among others).
    Whole verdicts are read here, for verified evaluations only: the interval is the scenarios' (the ranking
    above reads the geomean alone)."""
    ids, intervals = sorted(baselines), {}
    for start in range(0, len(ids), INTERVAL_BATCH):
        rows = Evaluation.objects.filter(pk__in=ids[start : start + INTERVAL_BATCH]).values_list("pk", "verdict")
        for pk, verdict in rows.iterator(chunk_size=100):
            intervals[pk] = verdict_figures.geomean_interval(verdict, baselines[pk])
    return intervals


def _run_history(
    run: Run,
    question_rows: Sequence[Mapping[str, Any]],
    evaluation_rows: Sequence[Mapping[str, Any]],
    speedups: dict[int, float],
    intervals: dict[int, tuple[float, float] | None],
) -> eff.RunHistory:
    """One run's history: its questions, its verified measurements with their intervals, its reference (the best
    verified measurement of its starting kernel). Events are ordered by their step's sequence number when every
    question and evaluation of the run has a step, and otherwise by the time the server stored them."""
    by_seq = all(row["step__seq"] is not None for row in [*question_rows, *evaluation_rows])

    def position(row):
        return row["step__seq"] if by_seq else row["created_at"]

    start_sha = _sha256(run.starting_kernel)
    measurements, reference = [], None
    for e in evaluation_rows:
        if e["id"] not in speedups:
            continue
        measurement = eff.Measurement(position=position(e), speedup=speedups[e["id"]], interval=intervals.get(e["id"]))
        measurements.append(measurement)
        if e["kernel__sha256"] == start_sha and (reference is None or measurement.speedup > reference.speedup):
            reference = measurement
    return eff.RunHistory(
        run_id=run.pk,
        reference=reference.speedup if reference is not None else None,
        reference_interval=reference.interval if reference is not None else None,
        measurements=sorted(measurements, key=lambda m: m.position),
        questions=[
            eff.QuestionEvent(
                question_id=q["id"],
                position=position(q),
                key=_question_credit(q)[0],
                category=q["category"] or q["bank_entry__category"] or "",
                source=_question_credit(q)[1],
                decision_point=q["decision_point"],
                outcome=QUESTION_OUTCOME.get(q["status"], eff.PENDING),
            )
            for q in question_rows
        ],
    )


# ------------------------------------------------------------------------------------------------ figures


def attributions(run_ids: list[int] | None = None) -> list[eff.Attribution]:
    """One row per asked question: best verified speedup before and after it with their intervals, its gain with
    its interval, whether large beyond the noise (None: its noise unknown)."""
    return eff.attribute_runs(run_histories(run_ids), large_gain_ratio())


def gain_text(gain: float | None, low: float | None, high: float | None, *, missing: str = "—") -> str:
    """A gain (or a mean gain) as pages write a speed-up (`figures.speedup_text`): with its interval, "no
    difference (…)" where that holds 1.0, and "(noise unknown)" after a point without one."""
    if gain is None:
        return missing
    interval = (low, high) if low is not None and high is not None else None
    text = verdict_figures.speedup_text(gain, interval, missing=missing)
    return text if interval is not None else f"{text} ({eff.NOISE_UNKNOWN})"


def _figures(agg: eff.Aggregate | None) -> dict:
    if agg is None:
        return {
            "asked": 0,
            "attributed": 0,
            "mean_gain": None,
            "mean_gain_low": None,
            "mean_gain_high": None,
            "mean_gain_text": gain_text(None, None, None),
            "large_gains": 0,
            "large_gain_unknown": 0,
            "large_gain_rate": None,
            "runs": 0,
            "vetoed": 0,
        }
    figures = agg.as_dict()
    figures.pop("group")
    figures["mean_gain_text"] = gain_text(agg.mean_gain, agg.mean_gain_low, agg.mean_gain_high)
    return figures


def effectiveness_by_question(exclude=frozenset()) -> list[dict]:
    """Every bank entry, asked or not, with its figures across all runs (but the kinds in `exclude`); in category
    order, then key."""
    per_key = eff.effectiveness(run_histories(exclude=exclude), by="key", large_gain_ratio=large_gain_ratio())
    order = {c: i for i, c in enumerate(CATEGORIES)}
    rows = sorted(bank_questions(), key=lambda r: (order.get(r.category, len(order)), r.key))
    return [
        {
            "key": row.key,
            "text": row.text,
            "category": row.category,
            "active": row.active,
            "targets": list(row.targets),  # empty: every target
            "added_by": row.added_by.get_username() if row.added_by else "",
            **_figures(per_key.get(row.key)),
        }
        for row in rows
    ]


def effectiveness_by_category(exclude=frozenset()) -> list[dict]:
    """Every category, asked or not, with its figures across all runs (reviewers' own questions count under the
    category they were given when asked from the bank; a free-text question without a category is left out)."""
    per_category = eff.effectiveness(run_histories(exclude=exclude), by="category", large_gain_ratio=large_gain_ratio())
    labels = dict(QuestionCategory.choices)
    return [
        {"category": category, "label": labels.get(category, category), **_figures(per_category.get(category))}
        for category in CATEGORIES
    ]


def effectiveness_by_source() -> list[dict]:
    """The same figures per source: a human's question, a rule's pick from the bank, the agent's own pick."""
    per_source = eff.effectiveness(run_histories(), by="source", large_gain_ratio=large_gain_ratio())
    return [{"source": source, **_figures(agg)} for source, agg in per_source.items()]


def selection_stats() -> dict[str, dict]:
    """key -> {"asked", "mean_gain", "large_gain_rate"}: what the selection prompt shows the agent."""
    return eff.selection_stats(eff.effectiveness(run_histories(), by="key", large_gain_ratio=large_gain_ratio()))
