"""The reads of the run pages: the runs list's search, a run's page (its sandbox, closed questions, forks,
best figures), its paged feed and chart, and its trace export."""

from django.db.models import DurationField, ExpressionWrapper, F, OrderBy, Q, QuerySet, TextField
from django.db.models.functions import Cast, Coalesce, Now

from agentloop.fork import start_problem
from agentloop.protocol import (
    EVENT_KINDS,
    PROTOCOL_VERSION,
    VERIFY_MODEL,
    evaluation_line,
    event_summary,
    one_line,
)
from gpu_harness import figures
from runs.event_parser import repeated_usage
from runs.models import (
    Evaluation,
    EvaluationStatus,
    Question,
    QuestionStatus,
    ReviewMode,
    Run,
    RunStatus,
    Step,
    StepKind,
)
from runs.nul_escape import unescape_nul
from runs.selectors import evaluation_speedup_text, run_list, standing_suffix


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


def run_fork_refusal(run: Run) -> str:
    """Why no fork can continue `run` ("" when one can): agentloop.fork's rule over the first event of its record,
    which must be its `started` status, config and all (an imported harness trace has none), of an agent run (a
    "Verify here" run has no agent: nothing to continue)."""
    first = Step.objects.filter(run=run, seq=0).values("kind", "payload").first()
    return start_problem(first)


def run_is_verify(run: Run) -> bool:
    """A "Verify here" run: no agent, one full evaluation by a worker's harness (docs/protocol.md 2.12)."""
    return run.model == VERIFY_MODEL


def elapsed_text(run: Run, now=None) -> str:
    """Started to finished (to `now` while it runs) as the page writes it, "67h 34m 2s"; "—" before it started."""
    from django.utils import timezone

    if run.started_at is None:
        return "—"
    end = run.finished_at or now or timezone.now()
    seconds = max(0, round((end - run.started_at).total_seconds()))
    return f"{seconds // 3600}h {seconds % 3600 // 60}m {seconds % 60}s"


def run_questions_closed(run: Run) -> QuerySet[Question]:
    """The run's questions closed undecided: proposed, and the run finished before anyone decided them."""
    if not run.is_finished:
        return Question.objects.none()
    return run.questions.filter(status=QuestionStatus.PROPOSED).select_related("step").order_by("created_at")


def run_questions_unheard(run: Run) -> QuerySet[Question]:
    """The run's questions whose reviewer's decision the agent did not act on: it had asked the proposal by review
    timeout first, or reports another decision (runs.services.questions.question_decision_reported). A run in
    auto mode has none, as no reviewer decides its questions (no query for it: the run page's queries are
    counted)."""
    if run.review_mode == ReviewMode.AUTO:
        return Question.objects.none()
    return run.questions.exclude(unheard_decision="").select_related("step").order_by("created_at")


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


def step_summary(step: Step, evaluation: Evaluation | None = None) -> str:
    """The one line a step is folded to in the feed: the protocol's summary of its event (agentloop/protocol.py),
    the same line the agent's terminal shows. An evaluation step with its stored row (`step_evaluations`) is
    written from that row, as the run page's Evaluations table writes it: its speed-up with its interval ("no
    difference" where that holds 1.0) over the run's goal baseline, the set it covered where the event does not
    say (a harness trace's line, imported, carries the verdict alone), and "imported" on a trace's claim; never the
    sender's own `speedup` where the stored verdict has no figure over that baseline.

    What the sender said of its own verdict is not the line's word: the set is "full" only where the stored verdict
    ran the task's full set, and "GOAL MET" is the server's reading of the verdict against the run's goal
    (`figures.goal_met`, as `runs.services.kernels.evaluation_meets_goal`), never the payload's `goal_met`; an
    imported trace's goal_met is written as its claim."""
    if step.kind != StepKind.EVALUATION or evaluation is None or evaluation.run is None:
        return event_summary(step.kind, step.payload)
    run = evaluation.run
    baseline, target = run.goal
    full_ids = list(run.task.scenario_ids or [])
    payload = step.payload if isinstance(step.payload, dict) else {}
    verdict = evaluation.verdict
    covered = figures.covers(verdict, full_ids)
    scenarios = payload.get("scenario_set") or ("full" if covered else "quick")
    if scenarios == "full" and not covered:  # a sender's "full" on a verdict that did not run the full set
        scenarios = "quick"
    if run.imported_from:
        scenarios = _claim_words(scenarios, verdict, full_ids, payload)
        met = False
    else:
        met = figures.goal_met(verdict, baseline, target, full_ids, run.task.libraries)
    # scenario_set and goal_met are the server's own here: evaluation_line prefers a payload's to its arguments.
    # The figure is the stored verdict's alone: where it holds none over the baseline (a malformed geomean dropped
    # when stored), the sender's own `speedup` is no measurement, so the line says "—", as the table does.
    stored = {"scenario_set": scenarios, "goal_met": met, "speedup": None}
    line = evaluation_line(
        {**payload, **stored, "result": {**verdict, "reason": verdict.get("reason")}},
        baseline=baseline,
        scenario_set=scenarios,
        figure=evaluation_speedup_text(evaluation, baseline) if evaluation.speedup_over(baseline) else "",
    )
    return one_line(line)


def _claim_words(scenarios: str, verdict: dict, full_ids: list[str], payload: dict) -> str:
    """What an imported evaluation's line says of its figure beside its set: a trace's claim, on which scenarios
    where not all, on which GPU (a lab's trace may hold an H100's screens among an H200's), and its goal met as
    its claim."""
    scope = figures.claim_scope(verdict, full_ids)
    words = f"{scenarios}, imported{f' {scope}' if scope else ''}"
    if device := figures.device_of(verdict):
        words += f", {device}"
    if payload.get("goal_met") is True:
        words += "; goal met: the trace's claim"
    return words


def step_line(step: Step) -> str:
    """A step as one line (the fork page's): its kind's label and its feed line (`step_summary`, with its stored
    evaluation: the server's reading of goal met and of the set, an imported trace's claim said as one)."""
    label = EVENT_KINDS.get(step.kind, step.kind)
    return f"{label}: {step_summary(step, step_evaluations([step]).get(step.seq))}"


def step_evaluations(steps) -> dict[int, Evaluation]:
    """seq -> the stored evaluation of each evaluation step (with its run and task), read in one query."""
    ids = [step.pk for step in steps if step.kind == StepKind.EVALUATION]
    if not ids:
        return {}
    rows = Evaluation.objects.filter(step_id__in=ids).select_related("step", "run", "run__task", "kernel__task")
    return {row.step.seq: row for row in rows}


def run_evaluations(run: Run) -> list[Evaluation]:
    """A run's evaluations in the order they were stored, with their steps, as the figures of its chart and of the
    compare page take them."""
    return list(
        Evaluation.objects.filter(run=run).select_related("step", "kernel", "kernel__task").order_by("created_at", "pk")
    )


def run_speedup_series(run: Run) -> dict:
    """Every evaluation of a run as a point (x = its step's seq), the best-so-far line, and its questions, all
    over the run's own goal (`Run.goal`), the one it is judged against."""
    baseline, target = run.goal
    evaluations = run_evaluations(run)
    full_ids, imported = list(run.task.scenario_ids or []), bool(run.imported_from)
    verdicts = [evaluation.verdict for evaluation in evaluations]
    # The best-so-far line is a best: it moves with verified (full, measured here) evaluations only.
    bests = figures.headline_series(verdicts, baseline, full_ids, imported=imported)
    points, best_line, best_text = [], [], None
    for index, (evaluation, verdict, best) in enumerate(zip(evaluations, verdicts, bests)):
        x = evaluation.step.seq if evaluation.step else None
        if best is not None and (index == 0 or best != bests[index - 1]):  # this evaluation set a new best
            best_text = evaluation_speedup_text(evaluation, baseline)
        points.append(
            {
                "x": x,
                "speedup": evaluation.speedup_over(baseline),
                **chart_point_standing(verdict, baseline, full_ids, imported, run.task.libraries),
                "status": evaluation.status,
                "evaluation_id": evaluation.pk,
                "kernel_id": evaluation.kernel_id,
                # What the run page's Evaluations table shows of it, as its template writes it (the page redraws
                # the table from these when the feed announces an evaluation).
                "status_label": evaluation.get_status_display(),
                "speedup_text": evaluation_speedup_text(evaluation, baseline)
                + standing_suffix(verdict, baseline, full_ids, imported),
                "kernel_short": evaluation.kernel.sha256[:12],
                "device": figures.device_of(verdict) or "—",  # a run's figures may come from two cards
            }
        )
        if best is not None and x is not None:
            # the hover's words: the best as the header writes it ("no difference (…)" inside the noise)
            best_line.append({"x": x, "best": best, "text": best_text})
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
        "axis_label": chart_axis_label(baseline, points),
        "goal": target,
        "points": points,
        "best": best_line,
        "questions": questions,
        "unverified": run_unverified_bests(run, evaluations),
    }


def chart_point_standing(
    verdict: dict, baseline: str, full_ids: list[str], imported: bool, libraries: list[str]
) -> dict:
    """What the chart draws of a point besides its figure (gpu_harness.figures, the rules every page uses): its
    interval ([low, high], drawn as an error bar; None where the verdict has none), whether that holds 1.0 ("no
    difference"), its standing ("verified", "quick" or "imported": each drawn in its own marker), and `partial`,
    what it did not cover: a claim's "on N of M scenarios" and, over best_library, the libraries it did not time
    (figures.library_scope); "" where it covered all."""
    interval = figures.geomean_interval(verdict, baseline)
    standing = figures.standing(verdict, full_ids, imported=imported)
    scopes = [
        figures.claim_scope(verdict, full_ids) if standing == figures.IMPORTED else "",
        figures.library_scope(verdict, baseline, libraries) if figures.speedup_over(verdict, baseline) else "",
    ]
    return {
        "interval": list(interval) if interval is not None else None,
        "no_difference": figures.no_difference(interval),
        "standing": standing,
        "partial": " · ".join(scope for scope in scopes if scope),
    }


def chart_axis_label(baseline: str, points: list[dict]) -> str:
    """The chart's y-axis: the speed-up over `baseline`, naming the scope actually timed where its points did not
    time every library the baseline names (figures.library_scope): the one scope they share, or that it varies."""
    scopes = {scope for p in points if p["speedup"] is not None for scope in [_library_part(p["partial"])] if scope}
    if not scopes:
        return f"speedup over {baseline}"
    if len(scopes) == 1:
        return f"speedup over {baseline} ({scopes.pop()})"
    return f"speedup over {baseline} (libraries timed vary by point: see each)"


def _library_part(partial: str) -> str:
    return next((part for part in partial.split(" · ") if part.startswith("best of ")), "")


# The labels the run header writes after each of its best figures (what each may be called: gpu_harness.figures).
BEST_LABELS = {
    figures.VERIFIED: "(verified: full set)",
    figures.QUICK: "(quick: on the quick set only, not verified)",
    figures.IMPORTED: "(imported: the trace's claim{scope}, not measured here)",
}


def _labelled(
    evaluation: Evaluation | None, value: float | None, baseline: str, standing: str, scope: str = ""
) -> str | None:
    """A best figure as the run header writes it: the evaluation's speedup with its interval ("no difference"
    where that holds 1.0, "host was busy" where it was: `evaluation_speedup_text`, as the Evaluations table
    writes it), then its label; the point figure alone where no evaluation is at hand; None for no figure.
    `scope`: a claim's "on N of M scenarios" (gpu_harness.figures.claim_scope), said in its label."""
    if value is None:
        return None
    text = (
        evaluation_speedup_text(evaluation, baseline)
        if evaluation is not None
        else figures.format_speedup(value, times="×")
    )
    return f"{text} {BEST_LABELS[standing].format(scope=f' {scope}' if scope else '')}"


def run_unverified_bests(run: Run, evaluations: list[Evaluation] | None = None) -> dict:
    """The run's best figures that are not verified, which its page shows labelled beside its verified best
    (`Run.best_speedup`): "quick", the best all-correct quick-set figure measured here, and "claimed", the best
    an imported trace claims (over the full set where it claims one: `figures.claim_rank`; a subset's claim says
    so); each None where there is none or where the verified best is as high. `quick_text` and `claimed_text`:
    each as the header writes it, with its interval and label (`_labelled`)."""
    baseline = run.goal[0]
    full_ids, imported = list(run.task.scenario_ids or []), bool(run.imported_from)
    best: dict[str, tuple[tuple[bool, bool, float], float, Evaluation]] = {}
    for evaluation in run_evaluations(run) if evaluations is None else evaluations:
        verdict = evaluation.verdict
        speedup = figures.verified_speedup(verdict, baseline)
        standing = figures.standing(verdict, full_ids, imported=imported)
        if speedup is None or standing == figures.VERIFIED:
            continue
        complete = figures.libraries_complete(verdict, baseline, run.task.libraries)
        rank = figures.claim_rank(verdict, full_ids, speedup, complete)
        if standing == figures.QUICK:  # a quick figure is on a subset by its nature: only the libraries rank it
            rank = (True, complete, speedup)
        if standing not in best or rank > best[standing][0]:
            best[standing] = (rank, speedup, evaluation)
    verified = run.best_speedup or 0.0
    _, quick, quick_from = best.get(figures.QUICK, (None, None, None))
    if quick is not None and quick <= verified:
        quick, quick_from = None, None
    _, claimed, claimed_from = best.get(figures.IMPORTED, (None, None, None))
    scope = figures.claim_scope(claimed_from.verdict, full_ids) if claimed_from is not None else ""
    return {
        "quick": quick,
        "claimed": claimed,
        "quick_text": _labelled(quick_from, quick, baseline, figures.QUICK),
        "claimed_text": _labelled(claimed_from, claimed, baseline, figures.IMPORTED, scope),
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


def _exported_usage(step: Step) -> dict:
    """A step's envelope usage as the export writes it: a usage event's repeats its payload's, as the worker sent
    it and as an import requires (docs/protocol.md 1.1), where the stored cost is rounded to 6 places (the payload
    may hold 8) and is the 0 a total adds for a call of unknown price (null in the payload); another kind's is
    its stored zeros."""
    repeated = repeated_usage(step.kind, step.payload)
    if repeated is not None:
        return repeated
    return {"tokens_in": step.tokens_in, "tokens_out": step.tokens_out, "cost_usd": float(step.cost_usd)}


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
            "usage": _exported_usage(step),
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
            # Who asked what: an "edited" question whose text is the reviewer's own (the bank's figures credit the
            # reviewer, not the entry), and in an imported run who its trace says proposed and decided it.
            "replaced": question.replaced,
            "trace_proposed_by": question.trace_proposed_by or None,
            "trace_reviewer": question.trace_reviewer or None,
            "unheard_decision": question.unheard_decision or None,  # a reviewer's that the agent never got
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
