"""gpu_harness.figures: the one rule for each figure of a verdict, on the dict that travels and is stored."""

import copy
import math

import pytest

from gpu_harness import EvalResult, figures
from gpu_harness.report import summary_line
from gpu_harness.result import ScenarioOutcome


def verdict(speedup=1.5, *, status="correct", correct=(True, True), ids=("a", "b"), baseline="naive") -> dict:
    return {
        "status": status,
        "scenarios": [{"id": i, "correct": c} for i, c in zip(ids, correct)],
        "geomean": {baseline: {"speedup": speedup, "count": len(ids)}},
    }


def test_all_correct_needs_the_status_at_least_one_scenario_and_none_failed():
    assert figures.all_correct(verdict())
    assert not figures.all_correct(verdict(correct=(True, False)))
    assert not figures.all_correct(verdict(status="incorrect"))
    assert not figures.all_correct(verdict(ids=(), correct=()))  # a correct status over nothing verifies nothing
    assert not figures.all_correct({})


@pytest.mark.parametrize("value", [None, "1.5", True, math.nan, math.inf])
def test_a_speedup_that_is_not_a_finite_number_is_not_a_measurement(value):
    assert figures.speedup_over(verdict(value), "naive") is None


def test_speedup_over_reads_the_geomean_of_its_baseline_only():
    v = verdict(2, baseline="naive")
    assert figures.speedup_over(v, "naive") == 2.0 and isinstance(figures.speedup_over(v, "naive"), float)
    assert figures.speedup_over(v, "numpy") is None
    assert figures.speedup_over({"geomean": {"naive": None}}, "naive") is None


def test_a_speedup_counts_as_verified_only_from_a_verdict_correct_on_everything_it_ran():
    assert figures.verified_speedup(verdict(3.0), "naive") == 3.0
    assert figures.verified_speedup(verdict(3.0, correct=(True, False)), "naive") is None


def test_exactly_at_the_target_counts_as_met():
    assert figures.meets_target(verdict(2.0), "naive", 2.0)
    assert not figures.meets_target(verdict(1.9999), "naive", 2.0)
    assert not figures.meets_target(verdict(5.0, correct=(False, True)), "naive", 2.0)
    assert not figures.meets_target(verdict(None), "naive", 0.1)


def test_the_goal_needs_the_target_and_the_full_set():
    assert figures.goal_met(verdict(2.0), "naive", 2.0, ["a", "b"], [])
    assert not figures.goal_met(verdict(2.0), "naive", 2.0, ["a", "b", "c"], [])  # c was not run
    assert not figures.goal_met(verdict(2.0), "naive", 2.0, [], [])  # an empty full set is never covered
    assert figures.covers(verdict(), ["b"]) and not figures.covers(verdict(), [])


def test_the_best_so_far_only_rises():
    assert figures.best_so_far(None, None) is None
    assert figures.best_so_far(None, 1.2) == 1.2
    assert figures.best_so_far(1.5, 1.2) == 1.5
    assert figures.best_so_far(1.5, None) == 1.5
    assert figures.best_so_far(1.5, 1.7) == 1.7


def test_the_best_per_baseline_moves_each_baseline_with_a_verified_verdict_only():
    both = {
        "status": "correct",
        "scenarios": [{"id": "a", "correct": True}],
        "geomean": {"naive": {"speedup": 3.0}, "numpy": {"speedup": 0.5}, "torch": {"speedup": None}},
    }
    best = {"naive": 4.0, "numpy": 0.2}
    assert figures.best_per_baseline(best, both) == {"naive": 4.0, "numpy": 0.5}
    assert best == {"naive": 4.0, "numpy": 0.2}  # not changed in place
    assert figures.best_per_baseline(best, dict(both, status="incorrect")) == best


def test_the_best_series_holds_the_best_verified_speedup_after_each_verdict():
    verdicts = [verdict(None), verdict(1.2), verdict(9.0, correct=(True, False)), verdict(1.1), verdict(1.4)]
    assert figures.best_series(verdicts, "naive") == [None, 1.2, 1.2, 1.2, 1.4]


def test_the_build_arch_is_the_verdicts_own():
    assert figures.build_arch({"build": {"arch": "sm_100a"}}) == "sm_100a"
    assert figures.build_arch({"build": {"arch": None}}) == "" and figures.build_arch({}) == ""


def test_one_formatter_for_a_speedup():
    assert figures.format_speedup(1.23456) == "1.235x"
    assert figures.format_speedup(None) == "n/a"
    assert figures.format_speedup(2, digits=".3f", times="×", missing="—") == "2.000×"
    assert figures.format_speedup(None, missing="—") == "—"


def test_the_typed_verdict_gives_the_same_figures_as_its_dict():
    r = EvalResult(
        task="matmul_cpu",
        kernel_sha256="",
        kernel_source="",
        status="correct",
        scenarios=[ScenarioOutcome(id="a", params={}, correct=True)],
        geomean={"naive": {"speedup": 1.5, "count": 1}},
    )
    assert r.all_correct == figures.all_correct(r.to_dict()) is True
    assert r.speedup_over("naive") == figures.speedup_over(r.to_dict(), "naive") == 1.5
    r.scenarios[0].correct = False
    assert r.all_correct is False


def _summary_with_na(details_per_scenario: list[dict], notes: dict | None = None) -> str:
    r = EvalResult(
        task="matmul_cpu",
        kernel_sha256="",
        kernel_source="",
        status="correct",
        baselines=["naive", "lib"],
        baseline_notes=notes or {},
        scenarios=[
            ScenarioOutcome(id=f"s{i}", params={}, correct=True, details=details)
            for i, details in enumerate(details_per_scenario)
        ],
        geomean={"naive": {"speedup": 1.5, "count": len(details_per_scenario)}},
    )
    return summary_line(r)


def test_the_summary_says_why_a_baseline_is_na_on_every_scenario():
    # the judge imported the library, the contained child did not: each scenario's cell has the child's note
    child_note = "flash_attn.cute.interface does not import here (OSError)"
    line = _summary_with_na([{"lib_na": child_note}, {"lib_na": child_note}])
    assert f"vs lib: n/a ({child_note}, on every scenario)" in line
    # the run's own note (not installed where the judge ran) is said as it is
    assert "vs lib: n/a (lib does not import here (ModuleNotFoundError))" in _summary_with_na(
        [{}, {}], notes={"lib": "lib does not import here (ModuleNotFoundError)"}
    )
    # notes that differ between scenarios, or a scenario without one, leave the cells to say which
    assert "vs lib: n/a |" in _summary_with_na([{"lib_na": child_note}, {"lib_na": "shape refused"}])
    assert "vs lib: n/a |" in _summary_with_na([{"lib_na": child_note}, {}])


def test_a_speedup_that_is_not_finite_is_written_in_lower_case():
    # the figures never carry one (speedup_over gives None), but the formatter is public: it writes what it gets
    assert figures.format_speedup(float("inf")) == "infx"


# ---- best_library: what it is the best of (a screen against eager alone is not a figure over the libraries) ----

TASK_LIBRARIES = ["eager", "compile", "quack"]


def _library_verdict(libraries, notes=None) -> dict:
    return {
        "status": "correct",
        "scenarios": [{"id": "a", "correct": True}],
        "geomean": {"eager": {"speedup": 1.8}, "best_library": {"speedup": 1.8}},
        "libraries": libraries,
        "baseline_notes": notes or {},
    }


def test_a_best_library_over_every_library_of_its_task_needs_no_scope():
    verdict = _library_verdict(TASK_LIBRARIES, {"naive": "not a library"})
    assert figures.libraries_not_timed(verdict, TASK_LIBRARIES) == []
    assert figures.library_scope(verdict, "best_library", TASK_LIBRARIES) == ""
    assert figures.libraries_complete(verdict, "best_library", TASK_LIBRARIES)


def test_a_best_library_of_a_screen_against_eager_alone_says_so():
    verdict = _library_verdict(["eager"])
    assert figures.libraries_not_timed(verdict, TASK_LIBRARIES) == ["compile", "quack"]
    assert figures.library_scope(verdict, "best_library", TASK_LIBRARIES) == (
        "best of eager only; not timed: compile, quack"
    )
    assert not figures.libraries_complete(verdict, "best_library", TASK_LIBRARIES)


def test_a_library_not_installed_where_it_ran_was_not_timed_but_one_that_refused_some_shapes_was():
    not_installed = _library_verdict(TASK_LIBRARIES, {"quack": "quack.softmax is not installed"})
    assert figures.library_scope(not_installed, "best_library", TASK_LIBRARIES) == (
        "best of eager, compile only; not timed: quack"
    )
    refused_some = _library_verdict(TASK_LIBRARIES)
    refused_some["scenarios"][0]["details"] = {"quack_na": "needs a row length divisible by 8"}
    assert figures.library_scope(refused_some, "best_library", TASK_LIBRARIES) == ""
    none_ran = _library_verdict([])
    assert figures.library_scope(none_ran, "best_library", TASK_LIBRARIES).startswith("best of no library only")


def test_a_library_that_imported_but_no_scenario_timed_was_not_timed_one_timed_on_some_was():
    # A library that imports and then fails on every scenario (a CuTe-DSL library in a contained child, say) is
    # n/a scenario by scenario with no whole-run note: the best library was the best of the others alone.
    failed_everywhere = _library_verdict(TASK_LIBRARIES)
    failed_everywhere["scenarios"] = [
        {"id": sid, "correct": True, "baseline_ms": {"eager": 2.0, "compile": 1.5, "quack": None}} for sid in "ab"
    ]
    assert figures.library_scope(failed_everywhere, "best_library", TASK_LIBRARIES) == (
        "best of eager, compile only; not timed: quack"
    )
    assert not figures.goal_met(failed_everywhere, "best_library", 1.5, ["a", "b"], TASK_LIBRARIES)
    timed_once = copy.deepcopy(failed_everywhere)
    timed_once["scenarios"][1]["baseline_ms"]["quack"] = 1.2
    assert figures.library_scope(timed_once, "best_library", TASK_LIBRARIES) == ""


def test_a_best_library_goal_is_met_only_by_a_verdict_that_timed_every_library_of_the_task():
    every = _library_verdict(TASK_LIBRARIES)
    assert figures.goal_met(every, "best_library", 1.5, ["a"], TASK_LIBRARIES)
    # 1.8x over the best of eager and compile is not 1.8x over the task's strongest library, which did not run
    not_installed = _library_verdict(TASK_LIBRARIES, {"quack": "quack.softmax is not installed"})
    assert figures.meets_target(not_installed, "best_library", 1.5)
    assert not figures.goal_met(not_installed, "best_library", 1.5, ["a"], TASK_LIBRARIES)
    assert not figures.goal_met(_library_verdict(["eager"]), "best_library", 1.5, ["a"], TASK_LIBRARIES)
    # a goal over one library names only that one
    assert figures.goal_met(not_installed, "eager", 1.5, ["a"], TASK_LIBRARIES)


def test_a_library_the_verdict_asked_for_but_could_not_run_is_missing_even_where_the_task_lists_none():
    # a task row that does not list its libraries (an older row) must not make a library not installed count
    not_installed = _library_verdict(TASK_LIBRARIES, {"quack": "quack.softmax is not installed"})
    assert figures.libraries_not_timed(not_installed, []) == ["quack"]
    assert figures.library_scope(not_installed, "best_library", []) == "best of eager, compile only; not timed: quack"
    assert not figures.goal_met(not_installed, "best_library", 1.5, ["a"], [])
    assert figures.goal_met(_library_verdict(TASK_LIBRARIES), "best_library", 1.5, ["a"], [])


def test_only_a_library_that_could_not_run_at_all_is_unavailable_not_one_left_unasked():
    """What ends a run `goal_unreachable` (agentloop's Scoreboard.check_reachable): a whole-run note, with its text."""
    not_installed = _library_verdict(TASK_LIBRARIES, {"quack": "quack.softmax is not installed", "naive": "x"})
    assert figures.libraries_unavailable(not_installed, "best_library") == {"quack": "quack.softmax is not installed"}
    assert figures.libraries_unavailable(not_installed, "eager") == {}  # a goal over eager needs no quack
    assert figures.libraries_unavailable(_library_verdict(["eager"]), "best_library") == {}  # not asked: no note
    odd_note = _library_verdict(["quack"], {"quack": {"why": 3}})
    assert figures.libraries_unavailable(odd_note, "best_library") == {"quack": "n/a"}
    for malformed_notes in (["quack"], "quack", None):
        malformed = _library_verdict(["quack"])
        malformed["baseline_notes"] = malformed_notes
        assert figures.libraries_unavailable(malformed, "best_library") == {}


@pytest.mark.parametrize("libraries, notes", [(5, None), ("quack", None), ([None, 3], None), (["eager"], ["quack"])])
def test_malformed_libraries_or_notes_count_as_nothing_asked_and_no_notes(libraries, notes):
    malformed = _library_verdict(["eager"])
    malformed["libraries"], malformed["baseline_notes"] = libraries, notes
    missing = figures.libraries_not_timed(malformed, TASK_LIBRARIES)
    assert set(missing) >= {"compile", "quack"}
    assert not figures.goal_met(malformed, "best_library", 1.5, ["a"], TASK_LIBRARIES)


def test_only_best_library_has_a_library_scope():
    verdict = _library_verdict(["eager"])
    assert figures.library_scope(verdict, "eager", TASK_LIBRARIES) == ""
    assert figures.libraries_complete(verdict, "eager", TASK_LIBRARIES)
    assert figures.library_scope(verdict, "best_library", []) == ""  # a task with no libraries has nothing missing


def test_a_figure_over_every_library_ranks_before_a_higher_one_over_some_and_the_full_set_before_both():
    full = {"scenarios": [{"id": "a"}, {"id": "b"}]}
    subset = {"scenarios": [{"id": "a"}]}
    ranks = {
        "full, every library": figures.claim_rank(full, ["a", "b"], 0.96, True),
        "full, eager alone": figures.claim_rank(full, ["a", "b"], 1.8, False),
        "subset, every library": figures.claim_rank(subset, ["a", "b"], 2.5, True),
    }
    assert sorted(ranks, key=ranks.__getitem__, reverse=True) == [
        "full, every library",
        "full, eager alone",
        "subset, every library",
    ]


def test_a_speedup_beyond_a_million_is_written_in_exponent_form_not_hundreds_of_digits():
    assert figures.format_speedup(1e308, times="×") == "1.000e+308×"
    assert figures.format_speedup(999_999.0) == "999999.000x" and figures.format_speedup(1.5) == "1.500x"


def test_a_verdicts_machine_is_its_device_name_as_a_short_string_or_nothing():
    assert figures.device_of({"device_name": " NVIDIA H200 "}) == "NVIDIA H200"
    assert figures.device_of({"device_name": "x" * 500}) == "x" * figures.DEVICE_NAME_MAX  # a trace may say anything
    for verdict in ({}, {"device_name": None}, {"device_name": ["H200"]}, {"device_name": 7}, "H200", None):
        assert figures.device_of(verdict) == ""
