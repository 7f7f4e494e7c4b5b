"""The suite scoreboard's pure parts: fast_p with its Wilson interval (runs/task_pages/scoreboard.py) and the manifest's
reading (runs/suite_manifest.py): a malformed manifest is refused with what is wrong."""

import json

import pytest

from runs.suite_manifest import ManifestError, parse_manifest, read_manifest
from runs.task_pages.scoreboard import fast_p, fast_p_table, format_fast_p, is_fast, wilson_interval
from tests.foundation.suite_folders import manifest


@pytest.mark.parametrize(
    "successes,total,low,high",
    [
        (6, 10, 0.3127, 0.8318),  # the textbook example of Wilson's interval at 95%
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 1, 0.2065, 1.0),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_the_wilson_interval_matches_its_known_values(successes, total, low, high):
    got = wilson_interval(successes, total)
    assert got == pytest.approx((low, high), abs=1e-4)
    assert 0.0 <= got[0] <= successes / total <= got[1] <= 1.0


def test_the_wilson_interval_of_nothing_is_none_and_impossible_counts_are_refused():
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_a_problem_is_fast_only_when_correct_and_strictly_above_p_over_eager():
    assert is_fast(True, None, 0) and is_fast(True, 0.01, 0)  # fast_0: correct at all
    assert not is_fast(False, 50.0, 0) and not is_fast(False, 50.0, 2)  # a wrong kernel is never fast
    assert not is_fast(True, None, 1)  # correct, but eager was not measured: not faster than it
    assert not is_fast(True, 1.0, 1) and is_fast(True, 1.0001, 1)  # exactly p is not above it
    assert is_fast(True, 2.5, 2) and not is_fast(True, 1.9, 2)


def test_a_speedup_is_held_to_p_by_its_intervals_low_end_where_the_harness_measured_one():
    assert not is_fast(True, 1.2, 1, eager_low=0.97)  # 1.2x whose interval holds 1.0: no speed-up
    assert is_fast(True, 1.2, 1, eager_low=1.01) and not is_fast(True, 2.1, 2, eager_low=1.95)
    assert is_fast(True, 0.5, 0, eager_low=0.4)  # fast_0 asks only for correctness
    rows = [{"correct": True, "eager": 1.2, "eager_low": 0.97}, {"correct": True, "eager": 1.2, "eager_low": None}]
    assert fast_p(rows, 1.0)["fast"] == 1  # the second, with no interval measured, is held to its point
    # one whose interval went missing among others (figures.noise_unknown) clears nothing, as in the goal check
    assert not is_fast(True, 1.5, 1, noise_unknown=True) and is_fast(True, 1.5, 0, noise_unknown=True)
    rows.append({"correct": True, "eager": 1.5, "eager_low": None, "eager_noise_unknown": True})
    assert fast_p(rows, 1.0)["fast"] == 1


def test_fast_p_counts_every_problem_in_the_denominator():
    rows = [
        {"correct": True, "eager": 3.0},
        {"correct": True, "eager": 1.2},
        {"correct": True, "eager": 0.5},
        {"correct": False, "eager": None},  # no verified evaluation
    ]
    table = fast_p_table(rows)
    assert [(e["p"], e["fast"], e["of"]) for e in table] == [(0.0, 3, 4), (1.0, 2, 4), (1.5, 1, 4), (2.0, 1, 4)]
    assert table[0]["share"] == 0.75 and table[0]["interval"] == wilson_interval(3, 4)
    assert fast_p([], 1.0) == {"p": 1.0, "fast": 0, "of": 0, "share": None, "interval": None}
    assert format_fast_p(table[1]).startswith("2/4 (50%; 95% CI ")
    assert format_fast_p(fast_p([], 0)) == "—"


def test_a_manifest_as_the_importer_writes_it_is_read_with_kernelbench_as_its_format():
    read = parse_manifest(manifest(3, refused=1, check_failed=1))
    assert (read.suite, read.format, read.source) == ("level_test", "kernelbench", "KernelBench level_test")
    assert [(p.name, p.outcome) for p in read.problems][-2:] == [
        ("kb_hub_0", "refused"),
        ("kb_broken_0", "check failed"),
    ]
    assert read.problems[3].reason.startswith("downloads its model")
    assert parse_manifest(manifest(1, format="gpumode")).source == "GPU MODE level_test"


def _broken(change):
    data = manifest(2, refused=1)
    change(data)
    return data


@pytest.mark.parametrize(
    "data,message",
    [
        ([], "a JSON object"),
        (_broken(lambda d: d.update(problems=[])), "non-empty list"),
        (_broken(lambda d: d.update(format="mlperf")), "format 'mlperf' is none of"),
        (_broken(lambda d: d["problems"][0].update(outcome="maybe")), "outcome 'maybe' is none of"),
        (_broken(lambda d: d["problems"][1].update(file=d["problems"][0]["file"])), "two problems have the file"),
        (_broken(lambda d: d["problems"][1].update(name=d["problems"][0]["name"])), "two problems have the task name"),
        (_broken(lambda d: d["problems"][0].pop("name")), "name is missing"),
        (_broken(lambda d: d["problems"][0].update(name="../etc")), "is no task name"),
        (_broken(lambda d: d["problems"][2].pop("reason")), "needs its reason"),
        (_broken(lambda d: d["problems"][0].update(scenarios="main")), "scenarios must be a list"),
        (_broken(lambda d: d["problems"][0].update(sha256="xyz")), "sha256"),
        (_broken(lambda d: d["problems"].append(7)), "each problem is an object"),
    ],
)
def test_a_malformed_manifest_is_refused_saying_what_is_wrong(data, message):
    with pytest.raises(ManifestError, match=message):
        parse_manifest(data)


def test_a_manifest_file_that_is_missing_or_not_json_is_refused_with_its_path(tmp_path):
    with pytest.raises(ManifestError, match="suite.json: cannot be read"):
        read_manifest(tmp_path)
    (tmp_path / "suite.json").write_text("{not json")
    with pytest.raises(ManifestError, match="suite.json: not JSON"):
        read_manifest(tmp_path)
    (tmp_path / "suite.json").write_text(json.dumps({"problems": [{"file": "a.py"}]}))
    with pytest.raises(ManifestError, match=r"suite.json: problems\[0\] \(a.py\): outcome is missing"):
        read_manifest(tmp_path)
