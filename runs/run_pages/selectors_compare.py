"""The reads of the compare page: 2 to 8 runs side by side, their summary figures and their best-so-far lines.

Every figure comes from where the rest of the dashboard takes it: a verdict's through `gpu_harness.figures`
over the run's own goal (`Run.goal`), a question's gain through `runs.selectors_bank.attributions` (the bank's
own attribution), so that the compare page cannot disagree with the run page or the bank's page.
"""

from __future__ import annotations

from typing import cast

from django.db import connection
from django.utils import timezone

from gpu_harness import figures
from questionbank import effectiveness as eff
from runs import demo
from runs.models import (
    COMPARE_MAX,
    STUDY_SETTINGS,
    Evaluation,
    Question,
    QuestionSource,
    QuestionStatus,
    ReviewMode,
    Run,
    Step,
    Study,
)
from runs.run_pages.selectors import run_evaluations
from runs.selectors import USAGE_UNKNOWN, run_usage_unknown, study_value_of
from runs.selectors_bank import QUESTION_OUTCOME, attributions, gain_text

# The summary's columns, in the order the table, the CSV and the JSON give them.
SUMMARY_FIELDS = [
    "run_id",
    "task",
    "model",
    "status",
    "goal_baseline",
    "goal_speedup",
    "goal_note",
    "goal_met",
    "best_speedup",
    "best_speedup_low",
    "best_speedup_high",
    "best_noise_unknown",
    "best_library_scope",
    "evaluations",
    "evaluations_to_goal",
    "steps",
    "steps_to_goal",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "cost_complete",
    "usage",
    "wall_s",
    "questions_asked",
    "questions_vetoed",
    "questions_by_reviewers",
    "largest_gain",
    "largest_gain_low",
    "largest_gain_high",
    "largest_gain_question",
    "imported",
]


def fork_family(run_id: int) -> list[int]:
    """What a compare of one run opens on: a fork's parent and the fork; a parent and its first forks (up to
    COMPARE_MAX runs in all); [] when the run is neither (or does not exist)."""
    run = Run.objects.filter(pk=run_id).values("pk", "parent_id").first()
    if run is None:
        return []
    if run["parent_id"] is not None:
        return [run["parent_id"], run_id]
    forks = Run.objects.filter(parent_id=run_id).order_by("created_at", "pk").values_list("pk", flat=True)
    forks = list(forks[: COMPARE_MAX - 1])
    return [run_id, *forks] if forks else []


def study_setting(study_id: int) -> dict | None:
    """What a study's page names: the setting its runs differ in, and each run's value of it (by run id)."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return None
    runs = Run.objects.filter(study=study).select_related("study")
    return {
        "id": study.pk,
        "setting": study.setting,
        "label": STUDY_SETTINGS.get(study.setting, study.setting),
        "values": {run.pk: str(study_value_of(run)) for run in runs},
    }


def study_csv(summary: list[dict], study: dict) -> tuple[list[dict], list[str]]:
    """A study's CSV rows and columns: the summary with the setting its runs differ in and each run's value of it
    after `run_id`, as the page's second column gives them (a CSV without them could not tell the arms apart)."""
    rows = [
        {**row, "study_setting": study["setting"], "study_value": study["values"].get(row["run_id"], "")}
        for row in summary
    ]
    return rows, [SUMMARY_FIELDS[0], "study_setting", "study_value", *SUMMARY_FIELDS[1:]]


def study_run_ids(study_id: int) -> list[int]:
    """The ids of a study's runs, in the order they were started (what compare opens on)."""
    return list(Run.objects.filter(study_id=study_id).order_by("pk").values_list("pk", flat=True)[:COMPARE_MAX])


def compare_runs_get(run_ids: list[int]) -> tuple[list[Run], list[int]]:
    """The runs of `run_ids` in the order asked, and the ids no run has. An id the key's column cannot hold names
    no run, and is not sent to the database (SQLite raises OverflowError for it, PostgreSQL an error)."""
    lowest, highest = connection.ops.integer_field_range(Run._meta.pk.get_internal_type())
    storable = [i for i in run_ids if lowest <= i <= highest]
    found = {run.pk: run for run in Run.objects.filter(pk__in=storable).select_related("task")}
    return [found[i] for i in run_ids if i in found], [i for i in run_ids if i not in found]


def _who_decided(question: Question, run: Run) -> str:
    """Who decided the question: a reviewer's name, "automatic" (the agent's review mode), "no reviewer here, as
    the agent reports" for a decision the agent reports that no account here made (`_automatic`), "nobody yet"
    while it waits, "nobody" once its run finished before anyone decided it (closed undecided, as the run page
    says); in an imported run, the name the trace gives, "as the trace says" (its claim: no account here)."""
    if question.status == QuestionStatus.PROPOSED:
        return "nobody" if run.is_finished else "nobody yet"
    if run.imported_from:
        return f"{question.trace_reviewer or 'automatic'}, as the trace says"
    if question.reviewer is not None:
        return question.reviewer.get_username()
    if _automatic(question, run):
        return "automatic"
    return "no reviewer here, as the agent reports"


def _automatic(question: Question, run: Run) -> bool:
    """Whether a decision no reviewer here is credited with is the agent's review mode's: an approval in auto or
    review-timeout mode that overruled no reviewer. Anything else (a veto, an edit, an approval in review mode, one
    that overruled a reviewer's decision) is a decision the agent reports and no account here made
    (runs.services.step_effects, docs/protocol.md 1.2)."""
    by_mode = run.review_mode in (ReviewMode.AUTO, ReviewMode.REVIEW_TIMEOUT)
    return by_mode and question.status == QuestionStatus.APPROVED and not question.unheard_decision


def _by_a_reviewer_here(question: Question) -> bool:
    """A person's own question, written on this site: not one an imported trace says a person proposed."""
    return question.source == QuestionSource.HUMAN and not question.trace_proposed_by


def _decision_text(question: Question, run: Run, decided_by: str) -> str:
    """The decision as the chart's hover and the question table write it: "approved by rita"; "waiting for a
    reviewer"; "closed undecided: the run succeeded while it waited for a reviewer" (the run page's words,
    `run_questions_closed`); led, for a question an imported trace says a person proposed, by that claim."""
    if question.trace_proposed_by == QuestionSource.HUMAN:
        return f"a person's question, as the trace says; {_decision_words(question, run, decided_by)}"
    return _decision_words(question, run, decided_by)


def _decision_words(question: Question, run: Run, decided_by: str) -> str:
    if question.status != QuestionStatus.PROPOSED:
        return f"{question.status} by {decided_by}"
    if run.is_finished:
        return f"closed undecided: the run {run.get_status_display().lower()} while it waited for a reviewer"
    return "waiting for a reviewer"


def _evaluation_number_at(question: Question, evaluations: list[Evaluation], by_seq: bool) -> int:
    """How many of the run's evaluations came before the question: by step number when every question and
    evaluation of the run has a step, by the time the server stored them otherwise (the order the bank's
    attribution reads a run in, so that a marker sits where its gain was measured from)."""
    if by_seq:
        return sum(1 for e in evaluations if e.step.seq <= question.step.seq)  # type: ignore[misc]  # (the nullable step: mypy then takes sum()'s bool overload)
    return sum(1 for e in evaluations if e.created_at <= question.created_at)


def _wall_s(run: Run) -> float | None:
    if run.started_at is None:
        return None
    return round(((run.finished_at or timezone.now()) - run.started_at).total_seconds(), 1)


def _largest_gain(run: Run, questions: list[Question]) -> dict:
    """The largest gain the bank's attribution gives one of the run's questions (by its point figure), with its
    interval and its text as pages write a gain (`gain_text`: "no difference (…)" inside the noise), and that
    question's text: the summary's largest_gain* columns."""
    gains = [a for a in attributions([run.pk]) if a.gain is not None]
    top = max(gains, key=lambda a: cast(float, a.gain)) if gains else None  # (none is None: filtered above)
    return {
        "largest_gain": top.gain if top else None,
        "largest_gain_low": top.gain_low if top else None,
        "largest_gain_high": top.gain_high if top else None,
        "largest_gain_text": gain_text(top.gain, top.gain_low, top.gain_high) if top else "",
        "largest_gain_question": next((q.text for q in questions if top and q.pk == top.question_id), ""),
    }


# Where a run's tokens and cost come from: this site's worker measured them, or an imported trace claims them (or,
# recording none, leaves them unknown: not a measured zero), as the run page says.
USAGE_MEASURED, USAGE_CLAIMED = "measured", "the trace's claim"


def _usage_columns(run: Run) -> dict:
    """The summary's tokens_in, tokens_out, cost_usd, cost_complete (None where unknown) and usage (which of the
    three); cost_text, the table's cost ("at least …" where cost_complete is false: a model's price was unknown,
    so cost_usd is a floor)."""
    if run_usage_unknown(run):
        return {
            "tokens_in": None,
            "tokens_out": None,
            "cost_usd": None,
            "cost_complete": None,
            "cost_text": USAGE_UNKNOWN,
            "usage": USAGE_UNKNOWN,
        }
    return {
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost_usd": float(run.cost_usd),
        "cost_complete": not run.cost_incomplete,
        "cost_text": run.cost_text,
        "usage": USAGE_CLAIMED if run.imported_from else USAGE_MEASURED,
    }


def _best_text(verdict: dict, baseline: str, libraries: list[str]) -> str:
    """A best as the compare page writes it: with its interval ("no difference (…)" where that holds 1.0,
    "(noise unknown)" where it is: `figures.verdict_speedup_text`, as the run header writes it) and, over
    best_library, what it is the best of where it did not time every library."""
    return " · ".join(
        part
        for part in (
            figures.verdict_speedup_text(verdict, baseline),
            figures.library_scope(verdict, baseline, libraries),
        )
        if part
    )


def best_series_texts(verdicts: list[dict], bests: list, baseline: str, libraries: list[str]) -> list[str | None]:
    """The text of each point of a best-so-far series (`bests`, `figures.headline_series` of `verdicts`), as the
    summary writes the best (`_best_text`), from the verdict that set it: the chart's hover says "no difference"
    where the table beside it does, never a bare 1.060×. None before the first verified best."""
    texts: list[str | None] = []
    current = None
    for index, (verdict, best) in enumerate(zip(verdicts, bests)):
        if best is not None and (index == 0 or best != bests[index - 1]):  # this verdict set a new best
            current = _best_text(verdict, baseline, libraries)
        texts.append(current if best is not None else None)
    return texts


def _best_verdict(verdicts: list[dict], bests: list) -> dict | None:
    """The verdict of the evaluation that first reached the run's best (the last of its best-so-far series
    `bests`): its interval and its libraries are the best's; None where there is no best."""
    if not bests or bests[-1] is None:
        return None
    return verdicts[bests.index(bests[-1])]


def run_comparison(runs: list[Run]) -> dict:
    """{"summary": one row per run (SUMMARY_FIELDS), "series": one best-so-far line per run with its questions}."""
    summary, series = [], []
    for run in runs:
        baseline, target = run.goal
        evaluations = run_evaluations(run)
        verdicts = [e.verdict for e in evaluations]
        full_set = list(run.task.scenario_ids or [])
        # An imported run's figures are its trace's claims: no best and no goal met here (gpu_harness.figures).
        imported = bool(run.imported_from)
        bests = figures.headline_series(verdicts, baseline, full_set, imported=imported)
        best_texts = best_series_texts(verdicts, bests, baseline, run.task.libraries)
        best_verdict = _best_verdict(verdicts, bests)
        # the best's interval (None where that evaluation has none) and, over best_library, what it is the best of
        best_interval = figures.geomean_interval(best_verdict, baseline) if best_verdict else None
        library_scope = figures.library_scope(best_verdict, baseline, run.task.libraries) if best_verdict else ""
        goal_index = next(
            (
                i
                for i, v in enumerate(verdicts)
                if not imported and figures.goal_met(v, baseline, target, full_set, run.task.libraries)
            ),
            None,
        )
        steps_to_goal = None
        if goal_index is not None and evaluations[goal_index].step is not None:
            steps_to_goal = Step.objects.filter(run=run, seq__lte=evaluations[goal_index].step.seq).count()
        questions = list(
            Question.objects.filter(run=run).select_related("step", "reviewer").order_by("created_at", "pk")
        )
        summary.append(
            {
                "run_id": run.pk,
                "task": run.task.name,
                "model": run.model,
                "status": run.status,
                "goal_baseline": baseline,
                "goal_speedup": target,
                "goal_note": demo.goal_note(run),
                "goal_met": goal_index is not None,
                "best_speedup": bests[-1] if bests else None,
                "best_speedup_low": best_interval[0] if best_interval else None,
                "best_speedup_high": best_interval[1] if best_interval else None,
                # why low and high are empty where they are: unknown noise (true), or a verdict from before
                # intervals (false), which is held to its point; empty where there is no best
                "best_noise_unknown": figures.noise_unknown(best_verdict, baseline) if best_verdict else None,
                "best_library_scope": library_scope,
                "best_text": (best_texts[-1] if best_texts else None) or "—",
                "evaluations": len(evaluations),
                "evaluations_to_goal": None if goal_index is None else goal_index + 1,
                "steps": run.step_count,
                "steps_to_goal": steps_to_goal,
                **_usage_columns(run),
                "wall_s": _wall_s(run),
                "questions_asked": sum(1 for q in questions if QUESTION_OUTCOME.get(q.status) == eff.ASKED),
                "questions_vetoed": sum(1 for q in questions if QUESTION_OUTCOME.get(q.status) == eff.VETOED),
                "questions_by_reviewers": sum(1 for q in questions if _by_a_reviewer_here(q)),
                **_largest_gain(run, questions),
                "imported": imported,
            }
        )
        # (mypy joins the two lists to Model, which has no `step`: Question and Evaluation both have it)
        by_seq = all(row.step is not None for row in [*questions, *evaluations])  # type: ignore[attr-defined]
        markers = []
        for q in questions:
            number = _evaluation_number_at(q, evaluations, by_seq)
            decided_by = _who_decided(q, run)
            markers.append(
                {
                    "question_id": q.pk,
                    "evaluation": number,
                    "best": bests[number - 1] if number else None,
                    "best_text": best_texts[number - 1] if number else None,
                    "text": q.text,
                    "decided_by": decided_by,
                    "decision": q.status,
                    "decision_text": _decision_text(q, run, decided_by),
                }
            )
        series.append(
            {
                "run_id": run.pk,
                "label": f"#{run.pk} {run.task.name} · {run.model}",
                "baseline": baseline,
                "goal": target,
                "evaluations": list(range(1, len(evaluations) + 1)),
                "best": bests,
                # each point's best as the summary writes it: the hover's words (compare_chart.js)
                "best_text": best_texts,
                "questions": markers,
            }
        )
    return {"summary": summary, "series": series}
