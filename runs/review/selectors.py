"""The reads of the review queue: the questions waiting on a reviewer with the steps before each, and the runs
they hold up."""

from django.db.models import Count

from runs.models import Run, Step
from runs.selectors import questions_pending, questions_waiting
from runs.services.questions import review_deadline


def runs_waiting_on_review() -> list[dict]:
    """The runs whose questions wait on a reviewer, the longest-waiting first: each run with how many questions
    wait and since when the oldest has (`waiting_since`)."""
    from django.db.models import Min

    rows = questions_waiting().values("run_id").annotate(waiting=Count("pk"), since=Min("created_at")).order_by("since")
    runs = Run.objects.select_related("task").in_bulk([row["run_id"] for row in rows])
    return [{"run": runs[row["run_id"]], "waiting": row["waiting"], "waiting_since": row["since"]} for row in rows]


def review_queue(*, context_steps: int = 5) -> list[dict]:
    """Proposed questions across runs, oldest first, each with what a reviewer needs to decide it, and until when
    they can (`deadline`)."""
    items = []
    for question in questions_pending().select_related("step", "bank_entry"):
        before = question.step.seq if question.step else question.run.last_seq + 1
        recent = list(Step.objects.filter(run_id=question.run_id, seq__lt=before).order_by("-seq")[:context_steps])
        items.append(
            {
                "question": question,
                "run": question.run,
                "recent_steps": list(reversed(recent)),
                # when the agent asks it as proposed if nobody decides (None: its run waits for a decision)
                "deadline": review_deadline(question.run, question),
            }
        )
    return items
