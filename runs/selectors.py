"""Every read the pages, consumers and commands make of runs and their parts (the kernel pages' in
`selectors_kernels.py`)."""

from collections.abc import Sequence

from django.db.models import Count, DurationField, ExpressionWrapper, F, OrderBy, Prefetch, Q, QuerySet
from django.db.models.functions import Coalesce, Now

from agentloop.protocol import PROTOCOL_VERSION
from gpu_harness import figures
from runs.models import (
    FINISHED_STATUSES,
    Evaluation,
    EvaluationStatus,
    Question,
    QuestionStatus,
    Run,
    RunStatus,
    Step,
    StepKind,
)
from runs.nul_escape import unescape_nul


def run_list(*, status: str | None = None, task_name: str | None = None) -> QuerySet[Run]:
    # Waiting questions only: a finished run's proposed questions are closed (`_questions_waiting`).
    runs = Run.objects.select_related("task", "worker", "started_by").annotate(
        pending_questions=Count(
            "questions", filter=Q(questions__status=QuestionStatus.PROPOSED) & ~Q(status__in=FINISHED_STATUSES)
        )
    )
    if status:
        runs = runs.filter(status=status)
    if task_name:
        runs = runs.filter(task__name=task_name)
    return runs.order_by("-created_at")


def run_sandbox(run_id: int) -> str | None:
    """Where the run's agent commands ran (docs/protocol.md, section 3): "none" when it started or was resumed
    unsandboxed (its `started` config, or the note a resume under --unsandboxed writes), else what its start
    recorded ("bubblewrap", or "refused": nothing ran); None when its worker recorded nothing (older workers)."""
    steps = Step.objects.filter(run_id=run_id)
    if steps.filter(
        Q(kind=StepKind.STATUS, payload__config__sandbox="none") | Q(kind=StepKind.NOTE, payload__sandbox="none")
    ).exists():
        return "none"
    return (
        steps.filter(kind=StepKind.STATUS, payload__config__sandbox__isnull=False)
        .order_by("seq")
        .values_list("payload__config__sandbox", flat=True)
        .first()
    )


def _questions_waiting() -> QuerySet[Question]:
    """Proposed questions a reviewer can still act on: a finished (succeeded, failed, stopped) run's questions
    wait on nobody, so they leave the queue and the badge."""
    return Question.objects.filter(status=QuestionStatus.PROPOSED).exclude(run__status__in=FINISHED_STATUSES)


def questions_pending() -> QuerySet[Question]:
    return _questions_waiting().select_related("run", "run__task").order_by("created_at")


def questions_pending_count() -> int:
    return _questions_waiting().count()


def run_questions_waiting(run: Run) -> int:
    """How many of the run's questions wait on a reviewer (none once the run has finished)."""
    return _questions_waiting().filter(run=run).count()


def run_questions_closed(run: Run) -> QuerySet[Question]:
    """The run's questions closed undecided: proposed, and the run finished before anyone decided them."""
    if not run.is_finished:
        return Question.objects.none()
    return run.questions.filter(status=QuestionStatus.PROPOSED).select_related("step").order_by("created_at")


def runs_waiting_on_review() -> list[dict]:
    """The runs whose questions wait on a reviewer, the longest-waiting first: each run with how many questions
    wait and since when the oldest has (`waiting_since`)."""
    from django.db.models import Min

    rows = (
        _questions_waiting().values("run_id").annotate(waiting=Count("pk"), since=Min("created_at")).order_by("since")
    )
    runs = Run.objects.select_related("task").in_bulk([row["run_id"] for row in rows])
    return [{"run": runs[row["run_id"]], "waiting": row["waiting"], "waiting_since": row["since"]} for row in rows]


def evaluations_for_run(run_id: int) -> QuerySet[Evaluation]:
    # The run and the task: the page labels each figure quick, imported or verified.
    return (
        Evaluation.objects.filter(run_id=run_id).select_related("kernel", "kernel__task", "run").order_by("created_at")
    )


# ============================================================================================================
# The dashboard's reads: the paged feed, the speedup series, the review queue, kernels, traces.
# ============================================================================================================

from django.db.models import TextField  # noqa: E402
from django.db.models.functions import Cast  # noqa: E402

from runs.models import HELD_STATUSES, Target, WorkerHost  # noqa: E402

# The statuses of a run that holds one of its worker's slots (a GPU): a run waiting for its reviewer is parked.
SLOT_STATUSES = (RunStatus.RUNNING, RunStatus.PAUSED)

FEED_PAGE_MAX = 500


def _feed_filter(run_id: int, kinds: list[str] | None, text: str | None):
    steps = Step.objects.filter(run_id=run_id)
    if kinds:
        steps = steps.filter(kind__in=kinds)
    if text:
        # The payload as JSON text: searches every field at once, on SQLite and PostgreSQL alike.
        steps = steps.annotate(payload_text=Cast("payload", TextField())).filter(payload_text__icontains=text)
    return steps


def steps_page(
    *,
    run_id: int,
    after: int | None = None,
    before: int | None = None,
    around: int | None = None,
    limit: int = 200,
    kinds: list[str] | None = None,
    text: str | None = None,
) -> dict:
    """One page of a run's feed, oldest first, under a kind/text filter; never more than FEED_PAGE_MAX steps.

    after=N: the next steps with seq > N (paging forward, resuming after a reconnect).
    before=N: the steps just before seq N (paging back); neither: the last `limit` steps (the tail).
    around=N: up to limit/2 steps at or before N and the ones after it (a permalink).
    Returns the steps and whether older / newer ones exist beyond the page.
    """
    limit = max(1, min(int(limit), FEED_PAGE_MAX))
    steps = _feed_filter(run_id, kinds, text)
    if around is not None:
        half = max(1, limit // 2)
        older = list(steps.filter(seq__lte=around).order_by("-seq")[: half + 1])
        newer = list(steps.filter(seq__gt=around).order_by("seq")[: limit - half + 1])
        has_older, has_newer = len(older) > half, len(newer) > limit - half
        page = list(reversed(older[:half])) + newer[: limit - half]
    elif after is not None:
        page = list(steps.filter(seq__gt=after).order_by("seq")[: limit + 1])
        has_newer = len(page) > limit
        page = page[:limit]
        has_older = steps.filter(seq__lte=after).exists()
    else:
        window = steps.filter(seq__lt=before) if before is not None else steps
        page = list(window.order_by("-seq")[: limit + 1])
        has_older = len(page) > limit
        page = list(reversed(page[:limit]))
        has_newer = before is not None and steps.filter(seq__gte=before).exists()
    return {"steps": page, "has_older": has_older, "has_newer": has_newer}


def run_evaluations(run: Run) -> list[Evaluation]:
    """A run's evaluations in the order they were stored, with their steps, as the figures of its chart and of the
    compare page take them."""
    return list(Evaluation.objects.filter(run=run).select_related("step", "kernel").order_by("created_at", "pk"))


def evaluation_speedup_text(evaluation: Evaluation, baseline: str) -> str:
    """An evaluation's speedup over `baseline` as the run page's Evaluations table writes it: with its interval,
    "no difference" where that holds 1.0, and "host was busy" when it was (gpu_harness.figures)."""
    verdict = evaluation.verdict
    text = figures.verdict_speedup_text(verdict, baseline)
    return f"{text} · host was busy" if figures.host_busy(verdict) else text


def run_speedup_series(run: Run) -> dict:
    """Every evaluation of a run as a point (x = its step's seq), the best-so-far line, and its questions, all
    over the run's own goal (`Run.goal`), the one it is judged against."""
    baseline, target = run.goal
    evaluations = run_evaluations(run)
    full_ids, imported = list(run.task.scenario_ids or []), bool(run.imported_from)
    verdicts = [evaluation.verdict for evaluation in evaluations]
    # The best-so-far line is a best: it moves with verified (full, measured here) evaluations only.
    bests = figures.headline_series(verdicts, baseline, full_ids, imported=imported)
    points, best_line = [], []
    for evaluation, verdict, best in zip(evaluations, verdicts, bests):
        x = evaluation.step.seq if evaluation.step else None
        points.append(
            {
                "x": x,
                "speedup": evaluation.speedup_over(baseline),
                "status": evaluation.status,
                "evaluation_id": evaluation.pk,
                "kernel_id": evaluation.kernel_id,
                # What the run page's Evaluations table shows of it, as its template writes it (the page redraws
                # the table from these when the feed announces an evaluation).
                "status_label": evaluation.get_status_display(),
                "speedup_text": evaluation_speedup_text(evaluation, baseline)
                + standing_suffix(verdict, baseline, full_ids, imported),
                "kernel_short": evaluation.kernel.sha256[:12],
            }
        )
        if best is not None and x is not None:
            best_line.append({"x": x, "best": best})
    questions = [
        {
            "x": q.step.seq if q.step else None,
            "text": q.text,
            "status": q.status,
            "category": q.category,
            "question_id": q.pk,
        }
        for q in Question.objects.filter(run=run).select_related("step").order_by("created_at", "pk")
    ]
    return {
        "baseline": baseline,
        "goal": target,
        "points": points,
        "best": best_line,
        "questions": questions,
        "unverified": run_unverified_bests(run, evaluations),
    }


def standing_suffix(verdict: dict, baseline: str, full_ids: list[str], imported: bool) -> str:
    """ " (quick)" or " (imported)" after a speed-up that is not verified (gpu_harness.figures.standing); "" for
    a verified one, or where there is no speed-up to label."""
    standing = figures.standing(verdict, full_ids, imported=imported)
    if standing == figures.VERIFIED or figures.speedup_over(verdict, baseline) is None:
        return ""
    return f" ({standing})"


# The labels the run header writes after each of its best figures (what each may be called: gpu_harness.figures).
BEST_LABELS = {
    figures.VERIFIED: "(verified: full set)",
    figures.QUICK: "(quick: on the quick set only, not verified)",
    figures.IMPORTED: "(imported: the trace's claim, not measured here)",
}


def _labelled(evaluation: Evaluation | None, value: float | None, baseline: str, standing: str) -> str | None:
    """A best figure as the run header writes it: the evaluation's speedup with its interval ("no difference"
    where that holds 1.0, "host was busy" where it was: `evaluation_speedup_text`, as the Evaluations table
    writes it), then its label; the point figure alone where no evaluation is at hand; None for no figure."""
    if value is None:
        return None
    text = (
        evaluation_speedup_text(evaluation, baseline)
        if evaluation is not None
        else figures.format_speedup(value, times="×")
    )
    return f"{text} {BEST_LABELS[standing]}"


def run_unverified_bests(run: Run, evaluations: list[Evaluation] | None = None) -> dict:
    """The run's best figures that are not verified, which its page shows labelled beside its verified best
    (`Run.best_speedup`): "quick", the best all-correct quick-set figure measured here, and "claimed", the best
    an imported trace claims; each None where there is none or where the verified best is as high. `quick_text`
    and `claimed_text`: each as the header writes it, with its interval and label (`_labelled`)."""
    baseline = run.goal[0]
    full_ids, imported = list(run.task.scenario_ids or []), bool(run.imported_from)
    best: dict[str, tuple[float, Evaluation]] = {}
    for evaluation in run_evaluations(run) if evaluations is None else evaluations:
        verdict = evaluation.verdict
        speedup = figures.verified_speedup(verdict, baseline)
        standing = figures.standing(verdict, full_ids, imported=imported)
        if speedup is not None and standing != figures.VERIFIED and speedup > best.get(standing, (0.0, None))[0]:
            best[standing] = (speedup, evaluation)
    verified = run.best_speedup or 0.0
    quick, quick_from = best.get(figures.QUICK, (None, None))
    if quick is not None and quick <= verified:
        quick, quick_from = None, None
    claimed, claimed_from = best.get(figures.IMPORTED, (None, None))
    return {
        "quick": quick,
        "claimed": claimed,
        "quick_text": _labelled(quick_from, quick, baseline, figures.QUICK),
        "claimed_text": _labelled(claimed_from, claimed, baseline, figures.IMPORTED),
    }


def run_best_text(run: Run) -> str | None:
    """The run header's best (`Run.best_speedup`, a verified figure) as the page writes it: the interval of the
    evaluation that gave it ("no difference (…)" where it holds 1.0) and its label; "—" while there is none."""
    baseline = run.goal[0]
    if run.best_speedup is None:
        return "—"
    # The best was raised by exactly this figure of one of the run's verified evaluations (runs.services.kernels):
    # find it by its verdict's geomean alone (a long run's verdicts are large), then read those verdicts whole.
    correct = Evaluation.objects.filter(run=run, status=EvaluationStatus.CORRECT)
    geomeans = correct.values_list("pk", "verdict__geomean")
    given = [pk for pk, geomean in geomeans if figures.speedup_over({"geomean": geomean}, baseline) == run.best_speedup]
    full_ids, imported = list(run.task.scenario_ids or []), bool(run.imported_from)
    source = next(
        (
            e
            for e in Evaluation.objects.filter(pk__in=given).order_by("-pk")
            if figures.standing(e.verdict, full_ids, imported=imported) == figures.VERIFIED
        ),
        None,
    )
    return _labelled(source, run.best_speedup, baseline, figures.VERIFIED)


def review_queue(*, context_steps: int = 5) -> list[dict]:
    """Proposed questions across runs, oldest first, each with what a reviewer needs to decide it."""
    items = []
    for question in questions_pending().select_related("step", "bank_entry"):
        before = question.step.seq if question.step else question.run.last_seq + 1
        recent = list(Step.objects.filter(run_id=question.run_id, seq__lt=before).order_by("-seq")[:context_steps])
        items.append({"question": question, "run": question.run, "recent_steps": list(reversed(recent))})
    return items


def evaluation_get(evaluation_id: int) -> Evaluation:
    return Evaluation.objects.select_related("kernel", "kernel__task", "run", "run__task", "step").get(pk=evaluation_id)


def trace_export_records(run: Run):
    """The run as JSONL records: a run line, every step as its protocol event, then questions and evaluations."""
    yield {
        "v": PROTOCOL_VERSION,
        "type": "run",
        "id": run.pk,
        "task": run.task.name,
        "model": run.model,
        "status": run.status,
        "review_mode": run.review_mode,
        # The goal it was judged against: an import keeps it (runs.services.trace_import.trace_goal).
        "goal": dict(zip(("baseline", "speedup"), run.goal)),
        "best_speedup": run.best_speedup,
        "best_speedups": run.best_speedups,
        "created_at": run.created_at.isoformat(),
        # An imported run's export passes its origin on, so that a re-import is still the same original run.
        "origin": run.origin_key,
        "imported_from": run.imported_from,
    }
    for step in Step.objects.filter(run=run).order_by("seq").iterator(chunk_size=1000):
        yield {
            "v": PROTOCOL_VERSION,
            "run_id": run.pk,
            "seq": step.seq,
            "kind": step.kind,
            "ts": step.created_at.isoformat(),
            "payload": unescape_nul(step.payload),  # the event as it was sent (runs/nul_escape.py)
            "usage": {"tokens_in": step.tokens_in, "tokens_out": step.tokens_out, "cost_usd": float(step.cost_usd)},
        }
    for question in Question.objects.filter(run=run).select_related("step", "reviewer", "bank_entry").order_by("pk"):
        yield {
            "v": PROTOCOL_VERSION,
            "type": "question",
            "id": question.pk,
            "seq": question.step.seq if question.step else None,
            "source": question.source,
            "text": question.text,
            "original_text": question.original_text,
            "category": question.category,
            "decision_point": question.decision_point,
            "status": question.status,
            "bank_key": question.bank_entry.key if question.bank_entry else None,
            "reviewer": question.reviewer.get_username() if question.reviewer else None,
            "decided_at": question.decided_at.isoformat() if question.decided_at else None,
        }
    for evaluation in Evaluation.objects.filter(run=run).select_related("kernel", "step").order_by("pk"):
        verdict = evaluation.verdict
        # The export's evaluation line: a few of the verdict's fields, as it has always written them.
        yield {
            "v": PROTOCOL_VERSION,
            "type": "evaluation",
            "id": evaluation.pk,
            "seq": evaluation.step.seq if evaluation.step else None,
            "kernel_sha256": evaluation.kernel.sha256,
            "status": evaluation.status,
            "geomean": verdict.get("geomean") or {},
            "scenarios": [
                {
                    "id": s["id"],
                    "params": s.get("params") or {},
                    "correct": s.get("correct"),
                    "time_ms": s.get("time_ms"),
                    "speedup": s.get("speedup") or {},
                }
                for s in verdict.get("scenarios") or []
            ],
        }


def worker_hosts() -> QuerySet[WorkerHost]:
    """The hosts, each with `active_runs` (how many it holds) and `held_runs` (those runs, with their GPUs)."""
    held = Prefetch("runs", queryset=Run.objects.filter(status__in=HELD_STATUSES).order_by("pk"), to_attr="held_runs")
    return (
        WorkerHost.objects.annotate(active_runs=Count("runs", filter=Q(runs__status__in=HELD_STATUSES)))
        .prefetch_related(held)
        .order_by("name")
    )


def held_runs_of(host: WorkerHost) -> QuerySet[Run]:
    """The runs `host` holds now (running, waiting for review, paused), newest first."""
    return Run.objects.filter(worker=host, status__in=HELD_STATUSES).select_related("task").order_by("-pk")


def workers_serving_now() -> dict[str, int]:
    """Target -> how many hosts serve it now: connected, token not revoked, the target in their hello's
    `targets` (every target is a key, 0 when none serves it). Hosts are few: their lists are read in Python, which
    works the same on SQLite (no JSON containment there) and PostgreSQL."""
    counts = dict.fromkeys(Target.values, 0)
    for host in WorkerHost.objects.filter(revoked_at__isnull=True).exclude(connection=""):
        for target in set(host.targets) & set(counts):
            counts[target] += 1
    return counts


def run_queue_reason(run: Run) -> str | None:
    """Why a queued run has no worker yet, in the words its page shows; None when it is not waiting for one.

    It reads what `run_claim` decides by (runs/services/runs.py): a connected host whose token is not revoked and
    whose hello announced the run's task's target gets the oldest queued run of the targets it serves when it
    claims, and a worker claims only while it has a free GPU (one run per GPU it offers in its hello,
    docs/protocol.md)."""
    if run.status != RunStatus.QUEUED or run.worker_id is not None:
        return None
    hosts = list(worker_hosts().filter(revoked_at__isnull=True))
    connected = [host for host in hosts if host.is_connected]
    not_started = start_problems(hosts)
    if not connected:
        if not hosts:
            return (
                "no worker host has a token yet: `manage.py serve` starts a local one, or give a GPU host a token "
                "(`manage.py worker_token NAME`) and start `python -m agentloop worker` there"
            )
        names = ", ".join(host.name for host in hosts)
        return f"no worker is online: none of the hosts with a token ({names}) is connected" + not_started
    target = run.task.target
    serving = [host for host in connected if target in host.targets]
    if not serving:
        return unserved_reason(target, connected, offline=[h for h in hosts if not h.is_connected]) + not_started
    # A run waiting for its reviewer holds no slot: its worker parked it (docs/protocol.md 2.4).
    holding = Run.objects.filter(worker__in=serving, status__in=SLOT_STATUSES).order_by("pk")
    busy = dict(holding.order_by().values("worker").annotate(n=Count("pk")).values_list("worker", "n"))
    free_slots = sum(max(0, max(1, len(host.gpus)) - busy.get(host.pk, 0)) for host in serving)
    if free_slots == 0:
        held = ", ".join(f"#{pk}" for pk in holding.values_list("pk", flat=True)[:10])
        slots = sum(max(1, len(host.gpus)) for host in serving)
        return f"all {slots} slot(s) of the connected workers that serve {target} are busy: runs {held} hold them"
    # The runs those hosts would take first: older queued runs of any target one of them serves.
    competing = {t for host in serving for t in host.targets}
    ahead = Run.objects.filter(
        status=RunStatus.QUEUED, worker__isnull=True, created_at__lt=run.created_at, task__target__in=competing
    ).count()
    if ahead:
        return f"{ahead} queued run(s) are ahead of it"
    return "a worker with a free slot is connected: it takes the run at its next claim (within seconds)"


def start_problems(hosts) -> str:
    """ "; the local worker did not start: ... To fix: ...", for each of `hosts` whose worker did not start (as
    `serve` recorded), or "": the reason a queued run waits is then that worker, which the operator can fix."""
    return "".join(f"; {host.start_problem}" for host in hosts if host.start_problem)


def unserved_reason(target: str, connected: list[WorkerHost], offline: Sequence[WorkerHost] = ()) -> str:
    """ "no connected worker serves cuda-sm90", with what the connected ones serve and which offline host would."""
    serves = "; ".join(f"{host.name} serves {', '.join(host.targets) or 'no target'}" for host in connected)
    reason = f"no connected worker serves {target}" + (f" ({serves})" if serves else "")
    waiting = [host.name for host in offline if target in host.targets]
    if waiting:
        reason += f"; {', '.join(waiting)} served it when last connected"
    return reason


def runs_queue_reasons(runs) -> dict[int, str | None]:
    """Of `runs` (a page of the runs list), each queued one that no worker holds yet: run id -> why it waits, in
    the words its page shows (`run_queue_reason`). The unserved ones (`runs_unserved`) in one read of the hosts;
    the few others, each on its own."""
    unserved = runs_unserved(runs)
    waiting = [run for run in runs if run.status == RunStatus.QUEUED and run.worker_id is None]
    return {run.pk: unserved.get(run.pk) or run_queue_reason(run) for run in waiting}


def runs_unserved(runs) -> dict[int, str]:
    """Of `runs` (a page of the runs list), the queued ones that no connected worker can serve: run id -> why
    ("no connected worker serves cuda-sm90"). One read of the hosts for the whole page."""
    queued = [run for run in runs if run.status == RunStatus.QUEUED and run.worker_id is None]
    if not queued:
        return {}
    served = workers_serving_now()
    not_started = start_problems(WorkerHost.objects.filter(revoked_at__isnull=True).exclude(start_problem=""))
    return {
        run.pk: f"no connected worker serves {run.task.target}{not_started}"
        for run in queued
        if not served.get(run.task.target)
    }


RUN_SORTS: dict[str, tuple[str, list[str | OrderBy]]] = {
    # name in the page's `sort` parameter -> (label, ordering)
    "newest": ("newest first", ["-created_at", "-pk"]),
    "oldest": ("oldest first", ["created_at", "pk"]),
    "speedup": ("best speedup", [F("best_speedup").desc(nulls_last=True), "-pk"]),
    "cost": ("cost", ["-cost_usd", "-pk"]),
    "duration": ("duration", [F("duration").desc(nulls_last=True), "-pk"]),
    "steps": ("steps", ["-step_count", "-pk"]),
}


def run_search(
    *, status: str | None = None, task_name: str | None = None, query: str | None = None, sort: str = "newest"
) -> QuerySet[Run]:
    """The runs list under its filters: `query` matches the run's number, task, model or status (its label too),
    `sort` is a key of RUN_SORTS. Each run carries `duration`: started to finished, or to now while unfinished."""
    runs = run_list(status=status, task_name=task_name).annotate(
        duration=ExpressionWrapper(Coalesce("finished_at", Now()) - F("started_at"), output_field=DurationField())
    )
    query = (query or "").strip()
    if query:
        labels = [value for value, label in RunStatus.choices if query.lower() in label.lower()]
        match = Q(task__name__icontains=query) | Q(model__icontains=query) | Q(status__in=labels)
        number = query.lstrip("#")
        if number.isascii() and number.isdigit():  # "²".isdigit() too, which int() refuses
            match |= Q(pk=int(number))
        runs = runs.filter(match)
    return runs.order_by(*RUN_SORTS.get(sort, RUN_SORTS["newest"])[1])


# ============================================================================================================
# Tasks: what each is (the harness's summary, Task.spec), who can run it now, and its runs.
# ============================================================================================================

from runs.models import Task  # noqa: E402

TASK_RUNS_SHOWN = 20


def _task_view(task: Task, serving: dict[str, int]) -> dict:
    """What the task pages show of one task, from its stored summary (`spec`, which `sync_tasks` fills from
    gpu_harness.tasks.summary.task_summary); a task synced before the summary existed shows its scenario ids
    and ABI only, and says how to fill the rest."""
    spec = task.spec or {}
    quick = set(spec.get("quick") or [])
    scenarios = spec.get("scenarios") or [{"id": sid, "params": {}} for sid in task.scenario_ids]
    # The summary's own order of the parameters (a stored object's keys may come back sorted otherwise).
    found = list(dict.fromkeys(key for scenario in scenarios for key in (scenario.get("params") or {})))
    params = [key for key in spec.get("parameters") or [] if key in found] + sorted(
        set(found) - set(spec.get("parameters") or [])
    )
    return {
        "task": task,
        "summarised": bool(spec),
        "description": spec.get("description") or "",
        "abi": spec.get("abi") or task.description,
        "language": spec.get("language") or ("cuda" if task.target == "cuda-sm90" else "cpp"),
        "scenarios": [
            {
                "id": scenario["id"],
                "values": [(scenario.get("params") or {}).get(key, "") for key in params],
                "quick": scenario["id"] in quick,
                "flop": f"{scenario['flops']:.3g}" if isinstance(scenario.get("flops"), (int, float)) else "—",
            }
            for scenario in scenarios
        ],
        "params": params,
        "quick_count": len(quick),
        "baselines": spec.get("baselines") or [],
        "tolerance": spec.get("tolerance") or "",
        "flops": spec.get("flops") or "",
        "serving": serving.get(task.target, 0),
    }


def task_overview() -> list[dict]:
    """Every registered task, name order, with what the tasks page lists of it (`_task_view`) and how many
    runs it has had."""
    serving = workers_serving_now()
    tasks = Task.objects.annotate(run_count=Count("runs")).order_by("name")
    return [_task_view(task, serving) for task in tasks]


def task_page(name: str) -> dict:
    """One task's page: `_task_view` and its newest runs. Task.DoesNotExist when there is none of that name."""
    task = Task.objects.get(name=name)
    view = _task_view(task, workers_serving_now())
    view["runs"] = list(run_list(task_name=name)[:TASK_RUNS_SHOWN])
    view["run_count"] = task.runs.count()
    return view


def run_forks(run: Run) -> list[Run]:
    """The runs forked from `run`, oldest first (its page lists them)."""
    return list(Run.objects.filter(parent=run).order_by("created_at", "pk"))


def fork_decision_text(run: Run) -> str:
    """A fork's decision at the question it was forked at, in words ("" when it forked at another step)."""
    decision = (run.fork or {}).get("decision") or {}
    by = f" by {decision['by']}" if decision.get("by") else ""
    if decision.get("action") == "veto":
        return f"the question was vetoed{by}"
    if decision.get("action") in ("bank", "write"):
        return f"asked instead{by}: {decision.get('text', '')}"
    return ""


def study_value_of(run: Run):
    """The value of its study's setting that this run has ("" when it is in no study)."""
    if run.study is None:
        return ""
    if run.study.setting == "questions":
        return "on" if run.asks_questions else "off"
    return getattr(run, run.study.setting, "")
