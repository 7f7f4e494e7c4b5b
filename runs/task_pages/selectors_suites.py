"""The reads of the suite pages: the suites, one suite's problems, and a suite study's scoreboard.

The scoreboard's figures are the harness's only: per run, the best speed-up over eager and over torch.compile of
its verified evaluations (full set, measured here, correct on every scenario: `gpu_harness.figures.standing` and
`headline_speedup`, the rule every headline figure of the dashboard follows), never what the agent said; fast_p
and its interval over problems per arm are `runs.task_pages.scoreboard`'s; the questions that preceded a large gain are the
bank's own attribution (`runs.selectors_bank.attributions`).
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from gpu_harness import figures
from runs.models import (
    FINISHED_STATUSES,
    STUDY_SETTINGS,
    Evaluation,
    Question,
    Run,
    Suite,
    SuiteStudy,
    cost_words,
)
from runs.selectors import study_value_of
from runs.selectors_bank import attributions, gain_text
from runs.suite_manifest import IMPORTED, OUTCOMES
from runs.task_pages.scoreboard import FAST_P, fast_p_table, format_fast_p

# The baselines the scoreboard reports, by the names a KernelBench-imported task gives them (gpu_harness/
# kernelbench_files.py: `eager`, and `compiled` for torch.compile), with the words the page uses.
EAGER, COMPILED = "eager", "compiled"
BASELINE_LABELS = {EAGER: "eager", COMPILED: "torch.compile"}

# The CSV's columns: one row per problem and arm.
ROW_FIELDS = [
    "problem",
    "task",
    "arm",
    "run_id",
    "status",
    "correct",
    "speedup_eager",
    "speedup_eager_low",
    "speedup_eager_high",
    "speedup_eager_text",
    "speedup_compiled",
    "speedup_compiled_low",
    "speedup_compiled_high",
    "speedup_compiled_text",
    "evaluations",
    "verified_evaluations",
    "cost_usd",
    "cost_complete",
    "tokens_in",
    "tokens_out",
    "large_gain_questions",
]
FAST_P_FIELDS = ["arm", "p", "fast", "of", "share", "low", "high"]


def _outcome_counts(problems) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for problem in problems:
        counts[problem.outcome] = counts.get(problem.outcome, 0) + 1
    return counts


def suite_list() -> list[dict]:
    """Every suite, name order, with its problems counted by outcome and its studies."""
    suites = Suite.objects.annotate(study_count=Count("studies", distinct=True)).prefetch_related("problems")
    return [
        {
            "suite": suite,
            "problems": len(suite.problems.all()),
            "counts": _outcome_counts(suite.problems.all()),
            "linked": sum(1 for p in suite.problems.all() if p.task_id is not None),
        }
        for suite in suites
    ]


def suite_get(suite_id: int) -> Suite:
    """Suite.DoesNotExist when there is none."""
    return Suite.objects.get(pk=suite_id)


def suite_by_name_or_id(word: str) -> Suite:
    """The suite a command names, by name or id. Suite.DoesNotExist when none is."""
    found = Suite.objects.filter(name=word).first()
    if found is None and word.isascii() and word.isdigit() and len(word) < 10:
        found = Suite.objects.filter(pk=int(word)).first()
    if found is None:
        raise Suite.DoesNotExist(f"no suite named {word!r}")
    return found


def suite_problem_counts(suite: Suite) -> tuple[int, int]:
    """(problems, those linked to a task) of a suite: what sync_tasks says of it."""
    problems = list(suite.problems.values_list("task_id", flat=True))
    return len(problems), sum(1 for task_id in problems if task_id is not None)


def suite_page(suite_id: int) -> dict:
    """A suite's page: its problems in the manifest's order (outcome, reason, task), counts and studies.
    Suite.DoesNotExist when there is none."""
    suite = Suite.objects.get(pk=suite_id)
    problems = list(suite.problems.select_related("task").order_by("position"))
    studies = SuiteStudy.objects.filter(suite=suite).annotate(run_count=Count("studies__runs")).order_by("-created_at")
    return {
        "suite": suite,
        "problems": problems,
        "counts": _outcome_counts(problems),
        "runnable": sum(1 for p in problems if p.outcome == IMPORTED and p.task_id is not None),
        "studies": [
            {"study": s, "label": STUDY_SETTINGS.get(s.setting, s.setting), "runs": s.run_count} for s in studies
        ],
    }


# ---------------------------------------------------------------------------------------------- the scoreboard


def _verdicts(run_ids: list[int]) -> dict[int | None, list[dict]]:
    """run id -> its evaluations' verdicts (Evaluation.verdict, each scenario with its timing's noise, which the
    speed-up's interval needs), from one query however many runs there are."""
    evaluations = Evaluation.objects.filter(run_id__in=run_ids).only("pk", "run_id", "verdict").order_by("pk")
    by_run: defaultdict[int | None, list[dict]] = defaultdict(list)
    for evaluation in evaluations:
        by_run[evaluation.run_id].append(evaluation.verdict)
    return by_run


def _best(best: dict, verdict: dict, full_ids: list[str], imported: bool) -> None:
    """Keep in `best` (baseline -> (speed-up, its interval or None, whether its noise is unknown)) the higher of
    what it holds and this verified, all-correct verdict's headline speed-up over each baseline."""
    for baseline in BASELINE_LABELS:
        speedup = figures.headline_speedup(verdict, baseline, full_ids, imported=imported)
        if speedup is None or (best[baseline] is not None and best[baseline][0] >= speedup):
            continue
        interval = figures.geomean_interval(verdict, baseline)
        best[baseline] = (speedup, interval, figures.noise_unknown(verdict, baseline))


def _best_words(best: tuple, missing: str = "—") -> str:
    """A best (speed-up, interval, noise unknown) as the scoreboard writes it: with its interval, "no difference
    (…)" where that holds 1.0, and "(noise unknown)" after a point whose interval was lost among others, which
    fast_p counts as fast at no p (scoreboard.is_fast): never a bare point that reads as a measured speed-up."""
    speedup, interval, unknown = best
    text = figures.speedup_text(speedup, interval, missing=missing)
    return figures.noise_unknown_text(text, unknown and speedup is not None)


def run_measured(run: Run, verdicts: list[dict]) -> dict:
    """What the harness measured of one run: whether a verified evaluation is correct on its task's full set,
    the best verified speed-up over eager and over torch.compile (None: none verified, or not measured) with the
    low end of the eager one's 95% interval, and how many evaluations it spent (all, and verified)."""
    full_ids = list(run.task.scenario_ids or [])
    imported = bool(run.imported_from)
    best = dict.fromkeys(BASELINE_LABELS)
    correct, verified = False, 0
    for verdict in verdicts:
        if figures.standing(verdict, full_ids, imported=imported) != figures.VERIFIED:
            continue
        verified += 1
        if figures.all_correct(verdict):
            correct = True
            _best(best, verdict, full_ids, imported)
    eager, compiled = best[EAGER] or (None, None, False), best[COMPILED] or (None, None, False)
    return {
        "correct": correct,
        "eager": eager[0],
        "eager_low": eager[1][0] if eager[1] else None,
        "eager_high": eager[1][1] if eager[1] else None,
        "eager_noise_unknown": eager[2],  # fast_p counts it as fast at no p (scoreboard.is_fast)
        "compiled": compiled[0],
        "compiled_low": compiled[1][0] if compiled[1] else None,
        "compiled_high": compiled[1][1] if compiled[1] else None,
        # As the scoreboard writes them: with the interval, "no difference (…)" where it holds 1.0.
        "eager_text": _best_words(eager),
        "compiled_text": _best_words(compiled, missing="n/a"),
        "evaluations": len(verdicts),
        "verified_evaluations": verified,
    }


def _large_gains(run_ids: list[int]) -> dict[int, list[dict]]:
    """run id -> the questions followed by a large gain in it (the bank's attribution: beyond the noise; one whose
    noise is unknown is not listed), in the order asked, each gain with its interval (`gain_text`)."""
    gains = [a for a in attributions(run_ids) if a.large_gain]
    texts = dict(Question.objects.filter(pk__in=[a.question_id for a in gains]).values_list("id", "text"))
    by_run = defaultdict(list)
    for a in gains:
        by_run[a.run_id].append(
            {
                "question_id": a.question_id,
                "key": a.key,
                "text": texts.get(a.question_id, ""),
                "gain": a.gain,
                "gain_text": gain_text(a.gain, a.gain_low, a.gain_high),
            }
        )
    return by_run


def _problem_files(suite_study: SuiteStudy) -> dict[int, str]:
    """task id -> the problem file it was imported from, in the suite as it stands."""
    return dict(suite_study.suite.problems.filter(task__isnull=False).values_list("task_id", "file"))


def suite_study_scoreboard(suite_study_id: int) -> dict:
    """A suite study's scoreboard: per problem and arm what the harness measured of its run; per arm fast_p at
    each threshold with its Wilson interval over the arm's problems, the evaluations and cost spent, and the
    questions that preceded large gains. SuiteStudy.DoesNotExist when there is none."""
    suite_study = SuiteStudy.objects.select_related("suite", "created_by").get(pk=suite_study_id)
    runs = list(
        Run.objects.filter(study__suite_study=suite_study).select_related("task", "study").order_by("study_id", "pk")
    )
    ids = [run.pk for run in runs]
    verdicts, gains, files = _verdicts(ids), _large_gains(ids), _problem_files(suite_study)
    arms = [str(value) for value in suite_study.values]
    problems: dict[int | None, dict] = {}
    for run in runs:
        problem = problems.setdefault(
            run.study_id,
            {
                "problem": files.get(run.task_id, run.task.name),
                "task": run.task.name,
                "study_id": run.study_id,
                "arms": {},
            },
        )
        arm = str(study_value_of(run))
        problem["arms"][arm] = {
            "arm": arm,
            "run_id": run.pk,
            "status": run.status,
            **run_measured(run, verdicts[run.pk]),
            "cost_usd": float(run.cost_usd),
            # false where a model's price was unknown: cost_usd is a floor ("at least", Run.cost_text)
            "cost_complete": not run.cost_incomplete,
            "cost_text": run.cost_text,
            "tokens_in": run.tokens_in,
            "tokens_out": run.tokens_out,
            "large_gains": gains[run.pk],
        }
    rows = list(problems.values())
    return {
        "suite_study": _study_header(suite_study, arms),
        "baselines": BASELINE_LABELS,
        "thresholds": list(FAST_P),
        "arms": [_arm_summary(arm, rows) for arm in arms],
        "problems": [{**row, "arms": [row["arms"].get(arm) for arm in arms]} for row in rows],
    }


def _study_header(suite_study: SuiteStudy, arms: list[str]) -> dict:
    return {
        "id": suite_study.pk,
        "suite_id": suite_study.suite_id,
        "suite": suite_study.suite.name,
        "source": suite_study.suite.source,
        "format": suite_study.suite.format,
        "setting": suite_study.setting,
        "label": STUDY_SETTINGS.get(suite_study.setting, suite_study.setting),
        "values": arms,
        "created_at": suite_study.created_at.isoformat(),
        "created_by": suite_study.created_by.get_username() if suite_study.created_by else "",
    }


def _arm_summary(arm: str, rows: list[dict]) -> dict:
    """One arm: fast_p over its problems (a problem without a run of this arm counts as not fast), what it
    spent, and how many runs have finished."""
    cells = [row["arms"].get(arm) for row in rows]
    measured = [cell or {"correct": False, "eager": None, "eager_low": None} for cell in cells]
    ran = [cell for cell in cells if cell]
    return {
        "arm": arm,
        "problems": len(rows),
        "fast_p": [{**entry, "text": format_fast_p(entry)} for entry in fast_p_table(measured)],
        "evaluations": sum(cell["evaluations"] for cell in ran),
        **_arm_cost(ran),
        "finished": sum(1 for cell in ran if cell["status"] in FINISHED_STATUSES),
        "large_gains": [{**gain, "run_id": cell["run_id"]} for cell in ran for gain in cell["large_gains"]],
    }


def _arm_cost(ran: list[dict]) -> dict:
    """What an arm's runs cost in all: a floor where any run's is (a model's price unknown)."""
    cost = sum(cell["cost_usd"] for cell in ran)
    complete = all(cell["cost_complete"] for cell in ran)
    return {"cost_usd": cost, "cost_complete": complete, "cost_text": cost_words(cost, not complete)}


def scoreboard_rows(board: dict) -> list[dict]:
    """The scoreboard as flat rows (ROW_FIELDS), one per problem and arm: what the CSV holds."""
    rows = []
    for problem in board["problems"]:
        for cell in problem["arms"]:
            if cell is None:
                continue
            rows.append(
                {
                    "problem": problem["problem"],
                    "task": problem["task"],
                    "arm": cell["arm"],
                    "run_id": cell["run_id"],
                    "status": cell["status"],
                    "correct": cell["correct"],
                    "speedup_eager": cell["eager"],
                    "speedup_eager_low": cell["eager_low"],
                    "speedup_eager_high": cell["eager_high"],
                    # the page's words for each ("no difference (…)", "(noise unknown)"), so that a spreadsheet
                    # cannot read a speed-up inside the noise as one
                    "speedup_eager_text": cell["eager_text"],
                    "speedup_compiled": cell["compiled"],
                    "speedup_compiled_low": cell["compiled_low"],
                    "speedup_compiled_high": cell["compiled_high"],
                    "speedup_compiled_text": cell["compiled_text"],
                    "evaluations": cell["evaluations"],
                    "verified_evaluations": cell["verified_evaluations"],
                    "cost_usd": cell["cost_usd"],
                    "cost_complete": cell["cost_complete"],
                    "tokens_in": cell["tokens_in"],
                    "tokens_out": cell["tokens_out"],
                    "large_gain_questions": " | ".join(g["text"] for g in cell["large_gains"]),
                }
            )
    return rows


def fast_p_rows(board: dict) -> list[dict]:
    """fast_p per arm and threshold as flat rows (FAST_P_FIELDS)."""
    return [
        {
            "arm": arm["arm"],
            "p": entry["p"],
            "fast": entry["fast"],
            "of": entry["of"],
            "share": entry["share"],
            "low": entry["interval"][0] if entry["interval"] else None,
            "high": entry["interval"][1] if entry["interval"] else None,
        }
        for arm in board["arms"]
        for entry in arm["fast_p"]
    ]
