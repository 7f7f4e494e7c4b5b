"""Every read the pages, consumers and commands make of runs and their parts."""

from django.db.models import Count, Q, QuerySet

from runs.models import Evaluation, Kernel, Question, QuestionStatus, Run, Step


def run_list(*, status: str | None = None, task_name: str | None = None) -> QuerySet[Run]:
    runs = Run.objects.select_related("task", "worker", "started_by").annotate(
        pending_questions=Count("questions", filter=Q(questions__status=QuestionStatus.PROPOSED))
    )
    if status:
        runs = runs.filter(status=status)
    if task_name:
        runs = runs.filter(task__name=task_name)
    return runs.order_by("-created_at")


def run_get(run_id: int) -> Run:
    return Run.objects.select_related("task", "worker", "started_by").get(pk=run_id)


def steps_after(*, run_id: int, after_seq: int = -1, limit: int = 200, kinds: list[str] | None = None) -> list[Step]:
    """Steps with seq > after_seq, oldest first: how a feed pages forward and resumes after a reconnect."""
    steps = Step.objects.filter(run_id=run_id, seq__gt=after_seq)
    if kinds:
        steps = steps.filter(kind__in=kinds)
    return list(steps.order_by("seq")[: max(1, min(limit, 1000))])


def questions_pending() -> QuerySet[Question]:
    return Question.objects.filter(status=QuestionStatus.PROPOSED).select_related("run", "run__task").order_by("created_at")


def questions_pending_count() -> int:
    return Question.objects.filter(status=QuestionStatus.PROPOSED).count()


def kernels_released() -> QuerySet[Kernel]:
    return Kernel.objects.filter(released=True).select_related("task").order_by("release_name")


def evaluations_for_run(run_id: int) -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(run_id=run_id).select_related("kernel").order_by("created_at")
