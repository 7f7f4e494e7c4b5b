"""The reads of runs that more than one area of pages makes (runs/run_pages, review, kernel_pages, task_pages,
worker_pages: each area's own reads are in its `selectors.py`), and those the shared pieces make: the runs list
(also a task's runs), the questions waiting on a reviewer (the queue, the navigation's badge, a run's page), a
run's evaluations (`selectors_pages`), an evaluation's speed-up as every table writes it (the `speedup` filter)
and a run's value of its study's setting (the compare page, a suite study's scoreboard)."""

from datetime import timedelta

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from gpu_harness import figures
from runs.models import (
    FINISHED_STATUSES,
    Evaluation,
    Question,
    QuestionSource,
    QuestionStatus,
    ReviewMode,
    Run,
)


def run_list(*, status: str | None = None, task_name: str | None = None) -> QuerySet[Run]:
    # Waiting questions only: a finished run's proposed questions are closed, an auto run's, a person's own and a
    # timed-out one wait on nobody (`questions_waiting`).
    waiting = Q(questions__status=QuestionStatus.PROPOSED) & ~Q(status__in=FINISHED_STATUSES)
    waiting &= ~Q(review_mode=ReviewMode.AUTO) & ~Q(questions__source=QuestionSource.HUMAN)
    waiting &= review_time_left(prefix="questions__", run_prefix="")
    runs = Run.objects.select_related("task", "worker", "started_by").annotate(
        pending_questions=Count("questions", filter=waiting)
    )
    if status:
        runs = runs.filter(status=status)
    if task_name:
        runs = runs.filter(task__name=task_name)
    return runs.order_by("-created_at")


# How a run's cost is written where its trace recorded no usage (the runs list, the run page, compare)
USAGE_UNKNOWN = "unknown: the trace records none"


def run_usage_unknown(run: Run) -> bool:
    """An imported run whose trace recorded no usage (a harness trace: evaluations only): its tokens and cost are
    unknown, not zero. A usage event without a price is usage recorded: its run's cost is a floor instead."""
    return bool(run.imported_from) and not (run.tokens_in or run.tokens_out or run.cost_usd or run.cost_incomplete)


def questions_waiting() -> QuerySet[Question]:
    """Proposed questions a reviewer can still act on: a finished (succeeded, failed, stopped) run's questions
    wait on nobody, so they leave the queue and the badge; nor do those of a run in review mode auto, whose agent
    approves them itself (a proposal is stored a moment before its approval: it is never a reviewer's), nor a
    person's own question (a fork's: its author decided it), nor those whose review timeout has run out, which the
    agent asks as proposed (`review_time_left`)."""
    return (
        Question.objects.filter(status=QuestionStatus.PROPOSED)
        .exclude(run__status__in=FINISHED_STATUSES)
        .exclude(run__review_mode=ReviewMode.AUTO)
        .exclude(source=QuestionSource.HUMAN)
        .filter(review_time_left())
    )


def review_time_left(*, prefix: str = "", run_prefix: str = "run__") -> Q:
    """The questions (fields under `prefix`, their run's under `run_prefix`) whose review timeout has not run out
    by now, or that have none. It runs out at a proposal's step time plus its run's `review_timeout_s`
    (runs.services.questions.review_deadline, which refuses a decision from then on). Said as one comparison of
    times per timeout in use, so that the database compares datetimes only: no interval arithmetic, which SQLite
    and PostgreSQL spell differently. Written without negating a join, so that in an aggregate's filter it reads
    each question on its own."""
    in_use = (
        Run.objects.filter(review_mode=ReviewMode.REVIEW_TIMEOUT, review_timeout_s__isnull=False)
        .exclude(status__in=FINISHED_STATUSES)
        .order_by()  # (no ordering column in the SELECT DISTINCT)
        .values_list("review_timeout_s", flat=True)
        .distinct()
    )
    timeouts = [seconds for seconds in in_use if seconds]
    if not timeouts:
        return Q()
    now = timezone.now()
    no_timeout = ~Q(**{f"{run_prefix}review_mode": ReviewMode.REVIEW_TIMEOUT}) | Q(**{f"{prefix}step__isnull": True})
    within = Q()
    for seconds in timeouts:
        other_timeout = ~Q(**{f"{run_prefix}review_timeout_s": seconds})
        within &= other_timeout | Q(**{f"{prefix}step__created_at__gt": now - timedelta(seconds=seconds)})
    return no_timeout | within


def questions_pending() -> QuerySet[Question]:
    return questions_waiting().select_related("run", "run__task").order_by("created_at")


def questions_pending_count() -> int:
    return questions_waiting().count()


def run_questions_waiting(run: Run) -> int:
    """How many of the run's questions wait on a reviewer (none once the run has finished)."""
    return questions_waiting().filter(run=run).count()


def evaluations_for_run(run_id: int) -> QuerySet[Evaluation]:
    # The run and the task: the page labels each figure quick, imported or verified.
    return (
        Evaluation.objects.filter(run_id=run_id).select_related("kernel", "kernel__task", "run").order_by("created_at")
    )


def evaluation_speedup_text(evaluation: Evaluation, baseline: str) -> str:
    """An evaluation's speedup over `baseline` as the run page's Evaluations table writes it: with its interval,
    "no difference" where that holds 1.0, what its best library is the best of where it did not time every
    library of its task, and "host was busy" when it was (gpu_harness.figures)."""
    verdict = evaluation.verdict
    text = figures.verdict_speedup_text(verdict, baseline)
    if scope := evaluation_library_scope(evaluation, baseline):
        text = f"{text} · {scope}"
    return f"{text} · host was busy" if figures.host_busy(verdict) else text


def evaluation_library_scope(evaluation: Evaluation, baseline: str) -> str:
    """ "" unless a best_library figure of the evaluation missed some of its task's libraries; then which it
    timed and which not (gpu_harness.figures.library_scope)."""
    task = evaluation.kernel.task
    if task is None or figures.speedup_over(evaluation.verdict, baseline) is None:
        return ""
    return figures.library_scope(evaluation.verdict, baseline, task.libraries)


def standing_suffix(verdict: dict, baseline: str, full_ids: list[str], imported: bool, recorded: bool = False) -> str:
    """ " (quick)", " (imported)" or " (recorded)" after a speed-up that is not verified
    (gpu_harness.figures.standing), a claim on a subset with its scope (" (imported, on 6 of 18 scenarios)");
    "" for a verified one, or where there is no speed-up to label."""
    standing = figures.standing(verdict, full_ids, imported=imported, recorded=recorded)
    if standing == figures.VERIFIED or figures.speedup_over(verdict, baseline) is None:
        return ""
    scope = figures.claim_scope(verdict, full_ids) if standing in (figures.IMPORTED, figures.RECORDED) else ""
    return f" ({standing}, {scope})" if scope else f" ({standing})"


def study_value_of(run: Run):
    """The value of its study's setting that this run has ("" when it is in no study)."""
    if run.study is None:
        return ""
    if run.study.setting == "questions":
        return "on" if run.asks_questions else "off"
    return getattr(run, run.study.setting, "")
