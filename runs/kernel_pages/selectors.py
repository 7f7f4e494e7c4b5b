"""The reads of the kernel pages: the kernel list (identical sources as one row, the best kernel of each task), a
kernel's page (its run, the question before it, its evaluations, its development run) and what this site
verified of its exact source."""

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from django.db.models import Count, F, Max, Min

from gpu_harness import figures
from runs.models import Evaluation, Kernel, Question, QuestionStatus, Run
from runs.selectors import evaluation_library_scope


def released_kernels(*, task_name: str | None = None) -> list[Kernel]:
    kernels = Kernel.objects.filter(released=True).select_related("task")
    if task_name:
        kernels = kernels.filter(task__name=task_name)
    return list(kernels.order_by("release_name", "-created_at"))


def kernel_get(kernel_id: int) -> Kernel:
    return Kernel.objects.select_related("task", "run", "step", "parent").get(pk=kernel_id)


def kernel_development(kernel: Kernel) -> dict | None:
    """A released kernel's development run (its lab's trace, imported) and how many evaluations it holds; None
    where it has none."""
    if kernel.development_run_id is None:
        return None
    return {
        "run_id": kernel.development_run_id,
        "evaluations": Evaluation.objects.filter(run_id=kernel.development_run_id).count(),
    }


def run_developed_kernels(run: Run) -> list[Kernel]:
    """The released kernels whose development this (imported) run records."""
    return list(Kernel.objects.filter(development_run=run, released=True).order_by("release_name"))


def kernel_question_before(kernel: Kernel) -> Question | None:
    """The last question asked in the kernel's run before the step that produced it: where it came from."""
    if kernel.run_id is None or kernel.step is None:
        return None
    return (
        Question.objects.filter(run_id=kernel.run_id, step__seq__lt=kernel.step.seq)
        .exclude(status__in=[QuestionStatus.PROPOSED, QuestionStatus.VETOED])
        .select_related("step")
        .order_by("-step__seq")
        .first()
    )


def kernel_evaluations(kernel: Kernel):
    """The kernel's evaluations, newest first (the kernel page leads with the first)."""
    return kernel.evaluations.select_related("run", "run__task", "kernel", "kernel__task").order_by(
        "-created_at", "-pk"
    )


# ---- the kernel list: identical sources as one row, and the best kernel of each task ----


class _Top(NamedTuple):
    """A kernel's best figure of one standing: how it ranks (gpu_harness.figures.claim_rank, which every choice
    between figures uses, within a kernel and across kernels), its speedup, and the evaluation that gave it."""

    rank: tuple[bool, bool, float]
    speedup: float
    evaluation_id: int


def _best_by_standing(kernel_ids, baseline_of) -> dict[int, dict[str, _Top]]:
    """kernel id -> {standing: its best all-correct figure over its task's goal baseline (`_Top`)}, one entry per
    standing its evaluations have (gpu_harness.figures.standing: verified, quick,
    imported, recorded). Only the verified one may be called verified or be a best; the others are shown labelled.
    Within a standing, a figure over the full set is chosen before any on a subset, and one over every library of
    the task before one over some (gpu_harness.figures.claim_rank)."""
    # The index and the geomean only: never the whole verdicts of every evaluation a list ranks.
    evaluations: Iterable[Evaluation] = (
        Evaluation.objects.filter(kernel_id__in=kernel_ids, status="correct")
        .select_related("kernel__task", "run")
        .defer("verdict")
        .annotate(geomean=F("verdict__geomean"), libraries=F("verdict__libraries"), notes=F("verdict__baseline_notes"))
    )
    evaluations = list(evaluations)
    verdicts = {
        e.pk: e.standing_verdict(e.geomean, e.libraries, e.notes)  # type: ignore[attr-defined]  # (annotated)
        for e in evaluations
    }
    ranked: dict[int, dict[str, _Top]] = defaultdict(dict)
    for e in evaluations:
        baseline = baseline_of(e.kernel)
        speedup = figures.verified_speedup(verdicts[e.pk], baseline)
        if speedup is None:
            continue
        task = e.kernel.task
        full_ids = list(task.scenario_ids or []) if task else []
        standing = figures.standing(verdicts[e.pk], full_ids, imported=e.imported, recorded=e.recorded)
        complete = figures.libraries_complete(verdicts[e.pk], baseline, task.libraries if task else [])
        rank = figures.claim_rank(verdicts[e.pk], full_ids, speedup, complete)
        current = ranked[e.kernel_id].get(standing)
        if current is None or rank > current.rank:
            ranked[e.kernel_id][standing] = _Top(rank, speedup, e.pk)
    return ranked


def _best_verified(kernel_ids, baseline_of) -> dict[int, _Top]:
    """kernel id -> its best verified figure over its task's goal baseline: from full evaluations measured here
    only (gpu_harness.figures.headline_speedup's rule)."""
    by_standing = _best_by_standing(kernel_ids, baseline_of)
    return {k: found[figures.VERIFIED] for k, found in by_standing.items() if figures.VERIFIED in found}


def _devices(evaluation_ids) -> dict[int, str]:
    """evaluation id -> the GPU its verdict says it ran on ("" where it names none): a claim's figures (imported,
    recorded with a release) come from a machine no harness here chose, and a lab's trace may mix an H100's
    with an H200's."""
    rows = Evaluation.objects.filter(pk__in=[i for i in evaluation_ids if i]).values_list("pk", "verdict__device_name")
    return {pk: figures.device_text(device) for pk, device in rows}


def _speedup_texts(chosen: dict[int, str]) -> dict[int, str]:
    """evaluation id -> its speedup over the baseline `chosen` names for it, with its interval ("no difference
    (…)" where that holds 1.0: gpu_harness.figures.verdict_speedup_text), and a claim made on a subset of its
    task's scenarios with its scope ("… on 6 of 18 scenarios"), from one query."""
    evaluations = Evaluation.objects.filter(pk__in=list(chosen)).select_related("kernel__task", "run")
    texts = {}
    for e in evaluations:
        text = figures.verdict_speedup_text(e.verdict, chosen[e.pk])
        task = e.kernel.task
        scope = figures.claim_scope(e.verdict, list(task.scenario_ids or []) if task else [])
        text = f"{text} {scope}" if scope and (e.imported or e.recorded) else text
        libraries = evaluation_library_scope(e, chosen[e.pk])
        texts[e.pk] = figures.with_notes(text, libraries, figures.host_wait_words(e.verdict, chosen[e.pk]))
    return texts


def _task_goal_baseline(kernel: Kernel) -> str:
    # Across runs of a task, each with its own goal, kernels compare on the task's goal baseline.
    return kernel.task.goal_baseline if kernel.task_id else ""


def kernel_source_groups(*, task_name: str | None = None, limit: int = 300) -> list[dict]:
    """Kernels produced by runs, one row per identical source (task, sha256), newest first: the newest kernel
    of the group, how many kernels, runs and evaluations share it, and the best verified speedup any of them
    reached over the task's goal baseline (a full evaluation measured here: gpu_harness.figures.standing), with
    the best quick figure and the best figure an imported trace claims, each to be shown labelled."""
    kernels = Kernel.objects.filter(released=False)
    if task_name:
        kernels = kernels.filter(task__name=task_name)
    groups = list(
        kernels.values("task_id", "sha256")  # type: ignore[no-redef]  # django-stubs' plugin: `evaluations` below is a count, no relation
        .annotate(
            newest=Max("id"),
            kernels=Count("id", distinct=True),
            runs=Count("run", distinct=True),
            evaluations=Count("evaluations", distinct=True),
            first_at=Min("created_at"),
            last_at=Max("created_at"),
        )
        .order_by("-last_at")[:limit]
    )
    members = defaultdict(list)
    for kernel_id, task_id, sha in kernels.filter(sha256__in={g["sha256"] for g in groups}).values_list(
        "id", "task_id", "sha256"
    ):
        members[(task_id, sha)].append(kernel_id)
    newest = Kernel.objects.select_related("task", "run", "step").in_bulk([g["newest"] for g in groups])
    best = _best_by_standing([k for ids in members.values() for k in ids], _task_goal_baseline)
    tops_of = {}  # (task id, sha256) -> standing -> the group's best figure of it
    for g in groups:
        tops: dict[str, _Top] = {}
        for kernel_id in members[(g["task_id"], g["sha256"])]:
            for standing, top in best.get(kernel_id, {}).items():
                if standing not in tops or top.rank > tops[standing].rank:
                    tops[standing] = top
        tops_of[(g["task_id"], g["sha256"])] = tops
    baseline_of_group = {(g["task_id"], g["sha256"]): _task_goal_baseline(newest[g["newest"]]) for g in groups}
    texts = _speedup_texts(
        {top.evaluation_id: baseline_of_group[key] for key, tops in tops_of.items() for top in tops.values()}
    )
    claims = {key: tops[figures.IMPORTED].evaluation_id for key, tops in tops_of.items() if figures.IMPORTED in tops}
    devices = _devices(claims.values())
    rows = []
    for g in groups:
        tops = tops_of[(g["task_id"], g["sha256"])]
        row: dict[str, Any] = {**g, "kernel": newest[g["newest"]]}
        # The verified figure, and beside it or in its place, labelled, the quick one and an import's claim.
        for key, standing in (("best", figures.VERIFIED), ("quick", figures.QUICK), ("claimed", figures.IMPORTED)):
            found = tops.get(standing)
            row[key] = found.speedup if found else None
            row[f"{key}_text"] = texts.get(found.evaluation_id, "") if found else ""
        row["claimed_device"] = devices.get(claims.get((g["task_id"], g["sha256"]), 0), "")
        rows.append(row)
    return rows


def released_kernel_rows(*, task_name: str | None = None) -> list[dict]:
    """The released kernels, each with the figure its release records (its results file, read from the
    repository: a claim, gpu_harness.figures.RECORDED) and the best figure a harness of this site measured of the
    same source ("Verify here"), each over its task's goal baseline with its interval; "" where there is none."""
    kernels = released_kernels(task_name=task_name)
    recorded = _best_by_standing([k.pk for k in kernels], _task_goal_baseline)
    sources = Kernel.objects.filter(sha256__in={k.sha256 for k in kernels}, task_id__in={k.task_id for k in kernels})
    siblings: dict[tuple[int | None, str], list[int]] = defaultdict(list)  # (task id, sha256) -> every kernel of it
    for kernel_id, task_id, sha in sources.values_list("id", "task_id", "sha256"):
        siblings[(task_id, sha)].append(kernel_id)
    verified = _best_verified([i for ids in siblings.values() for i in ids], _task_goal_baseline)
    rows: list[dict[str, Any]] = []
    for kernel in kernels:
        mine = recorded.get(kernel.pk, {}).get(figures.RECORDED)
        mine_here = [verified[i] for i in siblings[(kernel.task_id, kernel.sha256)] if i in verified]
        here = max(mine_here, key=lambda top: top.rank, default=None)
        rows.append(
            {
                "kernel": kernel,
                "recorded": mine.evaluation_id if mine else None,
                "verified": here.evaluation_id if here else None,
            }
        )
    texts = _speedup_texts(
        {row[key]: _task_goal_baseline(row["kernel"]) for row in rows for key in ("recorded", "verified") if row[key]}
    )
    # Side by side, the two may come from different GPUs (recorded on an H200, verified on an H100): each says its own.
    devices = _devices(row[key] for row in rows for key in ("recorded", "verified"))
    for row in rows:
        for key in ("recorded", "verified"):
            row[f"{key}_text"] = texts.get(row[key], "")
            row[f"{key}_device"] = devices.get(row[key], "")
    return rows


def best_kernel_per_task(*, task_name: str | None = None) -> list[dict]:
    """For each task with a verified kernel (or the one named `task_name`): the kernel with the best verified
    speedup over the task's goal baseline (a full evaluation measured here; never a quick one or an imported
    trace's claim), that speedup, and the evaluation that measured it."""
    kernels = Kernel.objects.filter(task__isnull=False).select_related("task", "run__task")  # run: its goal_note
    if task_name:
        kernels = kernels.filter(task__name=task_name)
    best = _best_verified(kernels.values_list("id", flat=True), _task_goal_baseline)
    by_id = kernels.in_bulk(list(best))
    per_task: dict[int | None, dict] = {}
    for kernel_id, top in best.items():
        kernel = by_id[kernel_id]
        current = per_task.get(kernel.task_id)
        if current is None or top.rank > current["rank"]:  # over every library before a higher figure over some
            per_task[kernel.task_id] = {
                "task": kernel.task,
                "kernel": kernel,
                "speedup": top.speedup,
                "rank": top.rank,
                "baseline": kernel.task.goal_baseline,
                "evaluation_id": top.evaluation_id,
            }
    texts = _speedup_texts({row["evaluation_id"]: row["baseline"] for row in per_task.values()})
    for row in per_task.values():
        row["speedup_text"] = texts[row["evaluation_id"]]
    return sorted(per_task.values(), key=lambda row: row["task"].name)


# ---- verify here: what this site measured of a kernel's exact source (runs/services/verify.py) ----


def evaluation_environment(evaluation: Evaluation) -> dict:
    """Where an evaluation ran: the host and GPU of its verdict, whether the candidate's process had a sandbox of
    its own, and what its event adds (a verify run's `environment`: Python and the library versions,
    docs/protocol.md 2.12); {} values where none was recorded."""
    payload = evaluation.step.payload if evaluation.step_id else {}
    recorded = payload.get("environment") if isinstance(payload.get("environment"), dict) else {}
    return {
        "host": evaluation.verdict.get("host") or recorded.get("host") or "",
        "gpu": evaluation.verdict.get("device_name") or "",
        "python": str(recorded.get("python") or ""),
        "libraries": str(recorded.get("library_versions") or ""),
        "candidate_process": candidate_process_text(evaluation.verdict.get("child_sandbox")),
    }


# The verdict's `child_sandbox` (gpu_harness/childbox.py) in a user's words: whether the kernel's own process was
# shut in (docs/harness.md, "Threat model"), or, for a verdict from before the harness recorded it, that nobody knows.
CANDIDATE_PROCESS_WORDS = {
    "bubblewrap": "contained (bubblewrap)",
    "none": "not contained: the kernel's process had no sandbox of its own",
}


def candidate_process_text(child_sandbox) -> str:
    """What the evaluation page says of the candidate's process; an unknown value is shown as the text it is."""
    if not child_sandbox or not isinstance(child_sandbox, str):
        return "not recorded"
    return CANDIDATE_PROCESS_WORDS.get(child_sandbox, child_sandbox)


def kernel_verification(kernel: Kernel) -> dict:
    """The kernel page's "Verified here": every verified evaluation (full, measured here) of this kernel's exact
    source, from any run of its task (a verify run's kernel is another row with the same sha256), with its
    speed-up over the task's goal baseline and where it ran; and the verify run that is queued or running."""
    from runs.services.verify import verification_pending

    if kernel.task_id is None:
        return {"rows": [], "pending": None}
    same_source = (
        Evaluation.objects.filter(kernel__task_id=kernel.task_id, kernel__sha256=kernel.sha256, status="correct")
        .select_related("run", "kernel", "kernel__task", "step")
        .order_by("-pk")
    )
    baseline = kernel.task.goal_baseline
    rows = [
        {
            "evaluation": e,
            "speedup": figures.verified_speedup(e.verdict, baseline),
            "speedup_text": _verified_text(e, baseline),
            "baseline": baseline,
            **evaluation_environment(e),
        }
        for e in same_source
        if e.standing == figures.VERIFIED
    ]
    return {"rows": rows, "pending": verification_pending(kernel)}


def _verified_text(evaluation: Evaluation, baseline: str) -> str:
    """A "Verified here" row's speed-up as every other list writes a verified figure (`_speedup_texts`): with its
    interval, "no difference (…)" where that holds 1.0, "(noise unknown)" where it is, and over best_library what
    it is the best of. "Verified" says who measured it, not that it is faster: a figure inside the noise is none."""
    text = figures.verdict_speedup_text(evaluation.verdict, baseline)
    libraries = evaluation_library_scope(evaluation, baseline)
    return f"{text} ({libraries})" if libraries else text


def evaluation_get(evaluation_id: int) -> Evaluation:
    return Evaluation.objects.select_related("kernel", "kernel__task", "run", "run__task", "step").get(pk=evaluation_id)
