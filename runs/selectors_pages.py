"""The rows a page or an action is about, found by the id or name in its URL or form: a view never queries models
itself (docs/architecture.md, "How to add a page"; tests/foundation/test_views_query_nothing.py). The `_or_404`
reads raise Http404 when there is no such row, as a page about it would answer."""

from django.db.models import Exists, OuterRef, QuerySet
from django.shortcuts import get_object_or_404

from runs.models import Evaluation, Kernel, Question, RefusedEvent, Run, Step, Task, WorkerHost
from runs.selectors import evaluations_for_run

KERNELS_OF_TASK_SHOWN = 200  # a kernel page's list of its task's other kernels, newest first


def task_names() -> QuerySet:
    return Task.objects.values_list("name", flat=True)


def task_named(name: str) -> Task | None:
    # A NUL is in no task's name, and PostgreSQL refuses a query that holds one (an error, not "none").
    return Task.objects.filter(name=name).first() if name and "\x00" not in name else None


def run_or_404(run_id: int, *related: str) -> Run:
    """The run, with the `related` rows its page reads joined in."""
    return get_object_or_404(Run.objects.select_related(*related), pk=run_id)


def newest_evaluations(run: Run, count: int) -> QuerySet[Evaluation]:
    """The run's `count` newest evaluations, each with its verdict (the run page's table; evaluations_for_run
    joins their kernels, tasks and runs)."""
    return evaluations_for_run(run.pk).order_by("-created_at", "-pk")[:count]


def refused_events_of(run: Run) -> QuerySet[RefusedEvent]:
    """The events of the run the server refused for good, each with `step_stored`: whether the run holds a step
    under its number all the same (another event: one stored before it, whose number it reused, or one sent
    under the number since)."""
    same_number = Step.objects.filter(run_id=OuterRef("run_id"), seq=OuterRef("seq"))
    return run.refused_events.annotate(step_stored=Exists(same_number))


def step_or_404(run_id: int, seq: int) -> Step:
    return get_object_or_404(Step, run_id=run_id, seq=seq)


def step_at(run: Run, seq: int) -> Step | None:
    return Step.objects.filter(run=run, seq=seq).first()


def kernel_or_404(kernel_id: int, *related: str) -> Kernel:
    return get_object_or_404(Kernel.objects.select_related(*related), pk=kernel_id)


def other_kernels_of_task(kernel: Kernel) -> QuerySet[Kernel]:
    """The newest other kernels of the kernel's task, with the step each came from."""
    return (
        Kernel.objects.filter(task_id=kernel.task_id)  # type: ignore[misc]  # (None: the kernels without a task)
        .exclude(pk=kernel.pk)
        .select_related("step")
        .order_by("-created_at")[:KERNELS_OF_TASK_SHOWN]
    )


def question_or_404(question_id: int) -> Question:
    return get_object_or_404(Question.objects.select_related("run", "step"), pk=question_id)


def worker_host_or_404(host_id: int) -> WorkerHost:
    return get_object_or_404(WorkerHost, pk=host_id)


def worker_name_taken(name: str) -> bool:
    return WorkerHost.objects.filter(name=name).exists()
