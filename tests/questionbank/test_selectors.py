"""The figures from the database: runs built through the real services, answers worked out by hand."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from questionbank.bank import BankEntry
from questionbank.models import BankQuestion
from questionbank.services import bank_sync
from runs.selectors_bank import (
    attributions,
    effectiveness_by_category,
    effectiveness_by_question,
    effectiveness_by_source,
    run_histories,
    selection_stats,
)
from runs.services import evaluation_record, kernel_record, question_decide, question_propose, step_record
from tests.foundation.factories import make_run, make_task
from tests.payloads import payload

pytestmark = pytest.mark.django_db

ENTRIES = [
    BankEntry("layer-reuse", "Which data is fetched twice?", "layer", ("plateau",)),
    BankEntry("limit-evidence", "What shows the limit you claimed?", "limit", ("claimed-limit",)),
    BankEntry("process-plan", "What is your plan?", "process", ("start",)),
]


class RunBuilder:
    """Writes one run's events in order, as the worker would, through the services. Each verdict's speed-ups carry
    the harness's 95% interval, `noise` either side of the figure (1%: the bank's gains here are far beyond it),
    unless told `noise=None`: a verdict from before the harness measured one."""

    def __init__(self, run, with_steps=True, noise=0.01):
        self.run, self.with_steps, self.seq, self.noise = run, with_steps, 0, noise

    def _step(self, kind):
        if not self.with_steps:
            return None
        step = step_record(run=self.run, seq=self.seq, kind=kind, payload=payload(kind)).step
        self.seq += 1
        return step

    def evaluate(self, source, status, geomean, scenario_ids=None, noise="the builder's"):
        noise = self.noise if noise == "the builder's" else noise
        step = self._step("evaluation")
        kernel = kernel_record(source=source, run=self.run, task=self.run.task, language="cpp", step=step)
        # The task's full set unless told (fewer: a quick-set figure), each correct when the verdict is: a verified
        # speedup needs a verdict correct on every scenario of the full set (gpu_harness.figures.headline_speedup).
        ids = self.run.task.scenario_ids if scenario_ids is None else scenario_ids
        scenarios = [{"id": sid, "correct": status == "correct", **timings(geomean, noise)} for sid in ids]
        evaluation_record(
            kernel=kernel,
            run=self.run,
            step=step,
            result={"status": status, "geomean": geomean, "scenarios": scenarios},
        )

    def ask(self, key, action):
        step = self._step("question_proposed")
        entry = BankQuestion.objects.get(key=key)
        question = question_propose(
            run=self.run, text=entry.text, source="self", decision_point="plateau", bank_entry=entry, step=step
        )
        if action:
            question_decide(
                question=question, reviewer=None, action=action, text="Edited?" if action == "edit" else None
            )
        return question


def naive(speedup):
    return {"naive": {"speedup": speedup, "count": 3}}


def timings(geomean, noise):
    """A scenario's speed-up over each baseline of `geomean` (every scenario at the geometric mean) and, unless
    `noise` is None, the medians and intervals that put it within `noise` either side: the candidate's time 1 ms
    exactly, the baseline's median the speed-up in ms, held in [s * (1 - noise), s * (1 + noise)]."""
    speedups = {name: entry["speedup"] for name, entry in geomean.items()}
    if noise is None:
        return {"speedup": speedups, "time_ms": 1.0}
    return {
        "speedup": speedups,
        "time_ms": 1.0,
        "time_ci_ms": [1.0, 1.0],
        "baseline_ms": dict(speedups),
        "baseline_ci_ms": {name: [s * (1 - noise), s * (1 + noise)] for name, s in speedups.items()},
    }


@pytest.fixture
def history():
    bank_sync(ENTRIES)
    task = make_task(goal_baseline="naive")
    # Run 1, ordered by step numbers.
    one = RunBuilder(make_run(task))
    one.evaluate(one.run.starting_kernel, "correct", naive(1.0))  # 0: the starting kernel: the reference, x1.0
    one.ask("layer-reuse", "approve")  # 1
    one.evaluate("// k1", "correct", naive(1.6))  # 2
    one.evaluate("// k2", "incorrect", naive(5.0))  # 3: incorrect, so never counted
    one.ask("limit-evidence", "veto")  # 4: vetoed, not asked
    one.ask("limit-evidence", "edit")  # 5: edited: asked
    one.evaluate("// k3", "correct", naive(2.0))  # 6
    one.evaluate("// k4", "correct", {"numpy": {"speedup": 9.0, "count": 3}})  # 7: not over the goal baseline
    one.ask("process-plan", None)  # 8: still proposed: not asked
    # Run 2, without steps: ordered by the time the server stored each row.
    two = RunBuilder(make_run(task), with_steps=False)
    two.evaluate("// start-ish", "correct", naive(1.0))
    two.ask("limit-evidence", "approve")
    two.evaluate("// better", "correct", naive(1.1))
    return one.run, two.run


def test_histories_keep_only_verified_speedups_over_the_goal_baseline(history):
    one, two = history
    by_run = {h.run_id: h for h in run_histories()}
    assert by_run[one.pk].reference == 1.0 and by_run[two.pk].reference is None
    assert [(m.position, m.speedup) for m in by_run[one.pk].measurements] == [(0, 1.0), (2, 1.6), (6, 2.0)]
    outcomes = [(q.key, q.position, q.outcome) for q in sorted(by_run[one.pk].questions, key=lambda q: q.position)]
    assert outcomes == [
        ("layer-reuse", 1, "asked"),
        ("limit-evidence", 4, "vetoed"),
        ("limit-evidence", 5, "asked"),
        ("process-plan", 8, "pending"),
    ]


def test_each_asked_question_is_attributed_by_hand(history):
    one, two = history
    rows = sorted((a.run_id, a.key, a.before, a.after, round(a.gain, 6), a.large_gain) for a in attributions())
    assert rows == sorted(
        [
            # layer-reuse at 1: before 1.0 (reference); window (1, 5] has 1.6 (the incorrect x5.0 is ignored).
            (one.pk, "layer-reuse", 1.0, 1.6, 1.6, True),
            # limit-evidence (edited) at 5: before 1.6; window (5, end] has 2.0 (the numpy-only one is ignored).
            (one.pk, "limit-evidence", 1.6, 2.0, 1.25, True),
            # run 2: before 1.0, after 1.1.
            (two.pk, "limit-evidence", 1.0, 1.1, 1.1, False),
        ]
    )


def test_figures_per_question_cover_every_entry(history):
    rows = {r["key"]: r for r in effectiveness_by_question()}
    assert list(rows) == ["layer-reuse", "limit-evidence", "process-plan"]  # category order
    assert rows["layer-reuse"]["mean_gain"] == pytest.approx(1.6) and rows["layer-reuse"]["large_gain_rate"] == 1.0
    limit = rows["limit-evidence"]
    # Gains 1.25 and 1.1: geometric mean sqrt(1.375); one large of two; one veto; two runs.
    assert limit["mean_gain"] == pytest.approx(1.375**0.5)
    assert (
        limit["asked"],
        limit["attributed"],
        limit["large_gains"],
        limit["large_gain_rate"],
        limit["vetoed"],
        limit["runs"],
    ) == (2, 2, 1, 0.5, 1, 2)
    plan = rows["process-plan"]
    assert (plan["asked"], plan["mean_gain"], plan["text"], plan["active"]) == (0, None, "What is your plan?", True)


def test_figures_per_category_list_every_category(history):
    rows = {r["category"]: r for r in effectiveness_by_category()}
    assert list(rows) == ["layer", "limit", "hypothesis", "process", "information"]
    assert (
        rows["limit"]["mean_gain"] == pytest.approx(1.375**0.5) and rows["limit"]["label"] == "Reject a claimed limit"
    )
    assert rows["hypothesis"]["asked"] == 0 and rows["process"]["asked"] == 0


def test_the_large_gain_threshold_comes_from_settings(history, settings):
    settings.KSEEK_LARGE_GAIN_RATIO = 1.3
    by_key = {(a.run_id, a.key): a.large_gain for a in attributions()}
    assert sorted(by_key.values()) == [False, False, True]  # only the x1.6 reaches x1.3
    assert selection_stats()["limit-evidence"]["large_gain_rate"] == 0.0


def test_per_source_and_selection_stats(history):
    assert [(r["source"], r["asked"]) for r in effectiveness_by_source()] == [("self", 3)]
    stats = selection_stats()
    assert stats["layer-reuse"] == {"asked": 1, "mean_gain": pytest.approx(1.6), "large_gain_rate": 1.0}
    assert "process-plan" not in stats  # never asked: no figures to show


def test_a_quick_set_figure_is_no_gain_and_no_gains_base(history):
    # Only a figure a harness of this site measured on the task's full set is verified (docs/architecture.md,
    # `standing`): the quick set's x1e6 after process-plan moves nothing, and in a run whose only figure before its
    # question is a quick one, nothing was verified when it was asked, so the question has no gain at all.
    one, _ = history
    builder = RunBuilder(one)
    builder.seq = 9
    builder.ask("process-plan", "approve")  # 9: asked at run one's best so far, x2.0
    builder.evaluate("// quick", "correct", naive(1e6), scenario_ids=["n256"])  # 10: one of the task's two
    quick_base = RunBuilder(make_run(one.task))
    quick_base.evaluate(one.starting_kernel, "correct", naive(0.168), scenario_ids=["n256"])
    quick_base.ask("layer-reuse", "approve")
    quick_base.evaluate("// full", "correct", naive(1.3))
    rows = {(a.run_id, a.key): a for a in attributions()}
    assert (rows[one.pk, "process-plan"].after, rows[one.pk, "process-plan"].gain) == (2.0, 1.0)
    assert rows[quick_base.run.pk, "layer-reuse"].gain is None
    stats = selection_stats()
    assert stats["process-plan"] == {"asked": 1, "mean_gain": 1.0, "large_gain_rate": 0.0}
    assert stats["layer-reuse"] == {"asked": 2, "mean_gain": pytest.approx(1.6), "large_gain_rate": 1.0}


def test_an_imported_runs_figures_are_its_traces_claims_and_give_no_gain(history):
    # A trace's figures are claims no harness here measured: its run's questions count as asked, but no figure of
    # it is a gain's base or a gain, on the bank page, in its export or in the stats every assignment carries.
    from runs.models import Run

    forged = RunBuilder(make_run(history[0].task))
    forged.evaluate(forged.run.starting_kernel, "correct", naive(0.168))
    forged.ask("layer-reuse", "approve")
    forged.evaluate("// claimed", "correct", naive(1e6))
    Run.objects.filter(pk=forged.run.pk).update(imported_from="trace forged.jsonl", origin="trace:forged:1")
    assert {a.run_id: a.gain for a in attributions() if a.key == "layer-reuse"}[forged.run.pk] is None
    assert selection_stats()["layer-reuse"] == {"asked": 2, "mean_gain": pytest.approx(1.6), "large_gain_rate": 1.0}
    row = {r["key"]: r for r in effectiveness_by_question()}["layer-reuse"]
    assert (row["asked"], row["attributed"], row["mean_gain"]) == (2, 1, pytest.approx(1.6))
    layer = {r["category"]: r for r in effectiveness_by_category()}["layer"]
    assert (layer["large_gains"], layer["mean_gain"]) == (1, pytest.approx(1.6))
    document = json.loads(export())
    assert max(a["gain"] for a in document["asked"] if a["gain"] is not None) == pytest.approx(1.6)


def test_with_no_runs_every_figure_is_empty():
    bank_sync(ENTRIES)
    assert attributions() == [] and selection_stats() == {}
    assert all(r["asked"] == 0 and r["mean_gain"] is None for r in effectiveness_by_question())


# ------------------------------------------------------------------------------------------------ export


def export(*args) -> str:
    out = io.StringIO()
    call_command("export_effectiveness", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_json_export_holds_every_table_with_the_same_figures(history):
    document = json.loads(export())
    assert set(document) == {"generated_at", "large_gain_ratio", "questions", "categories", "sources", "asked"}
    assert document["large_gain_ratio"] == 1.2
    limit = next(r for r in document["questions"] if r["key"] == "limit-evidence")
    assert limit["mean_gain"] == pytest.approx(1.375**0.5)
    assert sorted(round(a["gain"], 6) for a in document["asked"]) == [1.1, 1.25, 1.6]


def test_csv_export_writes_one_table(history, tmp_path):
    rows = list(csv.DictReader(io.StringIO(export("--format", "csv", "--table", "categories"))))
    assert [r["category"] for r in rows] == ["layer", "limit", "hypothesis", "process", "information"]
    assert float(rows[1]["mean_gain"]) == pytest.approx(1.375**0.5)
    target = tmp_path / "asked.csv"
    assert export("--format", "csv", "--table", "asked", "--output", str(target)) == ""
    asked = list(csv.DictReader(target.open()))
    assert len(asked) == 3 and {r["key"] for r in asked} == {"layer-reuse", "limit-evidence"}


def test_csv_export_of_an_empty_table_still_has_its_header():
    text = export("--format", "csv", "--table", "asked")
    assert text.startswith(
        "run_id,question_id,key,category,source,decision_point,before,before_low,before_high,after,after_low,"
        "after_high,gain,gain_low,gain_high,large_gain,large_gain_label,window_evaluations"
    )
    assert len(text.strip().splitlines()) == 1


def test_export_to_an_unwritable_place_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot write"):
        export("--output", str(tmp_path / "no" / "such" / "dir.json"))


# ---- each original run once, a reviewer's replacement credited to the reviewer, runs left out on request ----


def test_a_reviewers_replacement_is_credited_to_the_reviewer_not_the_bank_entry(history):
    from runs.services import question_review

    one, _ = history
    builder = RunBuilder(one)
    builder.seq = 9
    question = builder.ask("process-plan", None)
    question_review(question=question, reviewer=None, decision="replace", text="Did you profile it?")
    builder.evaluate("// k5", "correct", naive(4.0))
    rows = {a.question_id: a for a in attributions()}
    assert rows[question.pk].key is None and rows[question.pk].source == "human"
    by_key = {r["key"]: r for r in effectiveness_by_question()}
    assert by_key["process-plan"]["asked"] == 0  # the bank entry was proposed, not asked
    assert {r["source"]: r for r in effectiveness_by_source()}["human"]["asked"] == 1


def test_a_run_imported_again_counts_once(history):
    from runs.models import Run

    one, two = history
    before = effectiveness_by_question()
    # Two imports of run one's trace: the same questions and evaluations again, with run one as their origin
    # (as runs.services.trace_import.trace_origin gives them; tests/dashboard/test_run_page_origin.py pins that).
    for name in ("copy1.jsonl", "copy2.jsonl"):
        copy = RunBuilder(make_run(one.task))
        copy.evaluate(one.starting_kernel, "correct", naive(1.0))
        copy.ask("layer-reuse", "approve")
        copy.evaluate("// k1", "correct", naive(1.6))
        Run.objects.filter(pk=copy.run.pk).update(imported_from=f"trace {name}", origin=one.origin_key)
    assert {h.run_id for h in run_histories()} == {one.pk, two.pk}
    assert effectiveness_by_question() == before


def test_the_bank_figures_can_leave_out_replayed_and_imported_runs(history):
    from runs.models import Run

    one, two = history
    Run.objects.filter(pk=two.pk).update(model="claude-sonnet-4-6")
    # The fixture's runs are replays (make_run's model): left out, only run two remains.
    assert {h.run_id for h in run_histories(exclude={"replay"})} == {two.pk}
    Run.objects.filter(pk=two.pk).update(imported_from="trace t.jsonl", origin="trace:x:y")
    assert run_histories(exclude={"replay", "imported"}) == []
    assert {h.run_id for h in run_histories(exclude={"demo"})} == {one.pk, two.pk}
    with pytest.raises(ValueError, match="cannot exclude"):
        run_histories(exclude={"bogus"})


# ---- a large gain is one beyond the noise; a verdict without intervals leaves it unknown ----


@pytest.fixture
def noisy_and_old():
    """Two runs of limit-evidence, each x1.0 then x1.25 after its question: one whose verdicts hold the harness's
    intervals, 10% either side (x1.0 in [0.9, 1.1], x1.25 in [1.125, 1.375]: they overlap), and one from before the
    harness measured any (no interval: its noise unknown)."""
    bank_sync(ENTRIES)
    task = make_task(goal_baseline="naive")
    runs = {}
    for name, noise in (("noisy", 0.1), ("old", None)):
        builder = RunBuilder(make_run(task), noise=noise)
        builder.evaluate(builder.run.starting_kernel, "correct", naive(1.0))
        builder.ask("limit-evidence", "approve")
        builder.evaluate("// k1", "correct", naive(1.25))
        runs[name] = builder.run
    return runs


def test_each_measurement_carries_the_interval_of_its_verdict_over_the_goal_baseline(noisy_and_old):
    by_run = {h.run_id: h for h in run_histories()}
    noisy, old = by_run[noisy_and_old["noisy"].pk], by_run[noisy_and_old["old"].pk]
    assert [m.interval for m in noisy.measurements] == [
        (pytest.approx(0.9), pytest.approx(1.1)),
        (pytest.approx(1.125), pytest.approx(1.375)),
    ]
    assert noisy.reference_interval == (pytest.approx(0.9), pytest.approx(1.1))
    assert [m.interval for m in old.measurements] == [None, None] and old.reference_interval is None


def test_a_rise_of_1_25_inside_the_noise_is_no_large_gain_and_one_without_intervals_is_unknown(noisy_and_old):
    rows = {a.run_id: a for a in attributions()}
    noisy, old = rows[noisy_and_old["noisy"].pk], rows[noisy_and_old["old"].pk]
    # x1.25 over x1.0 at the point; beyond the noise 1.125 / 1.1 = 1.023 < 1.2.
    assert noisy.gain == pytest.approx(1.25) and noisy.gain_low == pytest.approx(1.125 / 1.1)
    assert (noisy.large_gain, noisy.large_gain_label) == (False, "not a large gain")
    assert old.gain == pytest.approx(1.25) and (old.large_gain, old.large_gain_label) == (None, "noise unknown")
    limit = {r["key"]: r for r in effectiveness_by_question()}["limit-evidence"]
    # Two attributed, none large, one unknown: the rate is over the one known, 0 of 1.
    assert (limit["attributed"], limit["large_gains"], limit["large_gain_unknown"]) == (2, 0, 1)
    assert limit["large_gain_rate"] == 0.0
    assert limit["mean_gain_text"] == "1.250× (noise unknown)"


def test_the_exports_say_the_noise_is_unknown(noisy_and_old):
    old = noisy_and_old["old"].pk
    document = json.loads(export())
    [old_row] = [a for a in document["asked"] if a["run_id"] == old]
    assert (old_row["large_gain"], old_row["large_gain_label"], old_row["gain_low"]) == (None, "noise unknown", None)
    limit = next(r for r in document["questions"] if r["key"] == "limit-evidence")
    assert (limit["large_gains"], limit["large_gain_unknown"], limit["large_gain_rate"]) == (0, 1, 0.0)
    asked = list(csv.DictReader(io.StringIO(export("--format", "csv", "--table", "asked"))))
    [old_cells] = [r for r in asked if r["run_id"] == str(old)]
    assert (old_cells["large_gain"], old_cells["large_gain_label"]) == ("", "noise unknown")
    questions = list(csv.DictReader(io.StringIO(export("--format", "csv"))))
    limit_cells = next(r for r in questions if r["key"] == "limit-evidence")
    assert (limit_cells["large_gains"], limit_cells["large_gain_unknown"]) == ("0", "1")


def test_with_every_gains_noise_unknown_the_large_gain_rate_is_unknown(noisy_and_old):
    from runs.models import Run

    Run.objects.filter(pk=noisy_and_old["noisy"].pk).delete()
    assert selection_stats()["limit-evidence"]["large_gain_rate"] is None
    limit = {r["key"]: r for r in effectiveness_by_question()}["limit-evidence"]
    assert (limit["large_gains"], limit["large_gain_unknown"], limit["large_gain_rate"]) == (0, 1, None)
