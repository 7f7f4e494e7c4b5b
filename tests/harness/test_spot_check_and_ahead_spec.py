"""The spec's judging features beyond the tolerance (gpu_harness/taskspec.py, data_task.py): [spot_check]
(a timed call's outputs judged on sampled indices of one axis, the whole outputs checked without a reference),
[judge] ahead (cuda-sm90), [reference] fast, [child] baseline_threads, [baselines] versions and a child
variable under the harness's cache; each bad value named by `task check`, and the sampled judge on the cpu
target's arrays."""

import numpy as np
import pytest

from gpu_harness.tasks import TaskError, folder_task
from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import JudgeAhead, SpotCheck, TaskSpecError, load_spec

from .conftest import edit_task_folder as edited

PARAMS = {"rows": 1000, "cols": 33, "scale": 0.5}
GOAL = "[goal]"
SAMPLED = '[spot_check]\nsample = "rows"\nfraction = 5\nmin_count = 100\n\n[goal]'
REFERENCE = """import numpy as np

CALLS = []


def reference(x, y, scale, rows, cols, sampled=None):
    picked = sampled
    CALLS.append(None if picked is None else len(picked))
    out = x * scale + y
    return out if picked is None else out[picked]


def numpy_scale_add(x, y, out, scale, rows, cols):
    np.multiply(x, np.float32(scale), out=out)
    out += y


def whole(outputs, params):
    out = outputs["out"]
    return {"out": (int(np.count_nonzero(~np.isfinite(out))), int(np.count_nonzero(out[:, 0] == 7.0)))}


def versions():
    return "numpy, as it is"
"""


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def problems(folder, *edits):
    edited(folder, *edits)
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    return [(p.field, p.message) for p in info.value.problems]


def test_the_features_are_read(folder):
    spec = load_spec(
        edited(
            folder,
            (GOAL, SAMPLED),
            ('function = "reference"', 'function = "reference"\nfast = "quick"'),
            ("[baselines]\n", '[baselines]\nversions = "versions"\n'),
            (GOAL, "[child]\nbaseline_threads = 4\n\n[goal]"),
        )
    )
    assert spec.spot_check == SpotCheck("rows", fraction=5, min_count=100, whole="")
    assert spec.reference_fast == "quick" and spec.versions_function == "versions" and spec.baseline_threads == 4
    assert spec.ahead is None and load_spec(scaffold("plain", folder.parent)).spot_check is None


@pytest.mark.parametrize(
    "old, new, want",
    [
        (GOAL, '[spot_check]\nsample = "m"\n\n[goal]',
         [("spot_check.sample", "'m': name a symbol of an output's shape (known: cols, rows)")]),
        (GOAL, '[spot_check]\nsample = "rows"\nfraction = 9\n\n[goal]',
         [("spot_check.fraction", "9: an integer in [1, 8]")]),
        (GOAL, '[spot_check]\nsample = "rows"\nmin_count = 63\n\n[goal]',
         [("spot_check.min_count", "63: an integer in [64, 1048576]")]),
        (GOAL, '[spot_check]\nsample = "rows"\nwhole = "no good"\nevery = 2\n\n[goal]',
         [("spot_check.every", "unknown field (its fields: fraction, min_count, sample, whole)"),
          ("spot_check.whole", "'no good' is not a function name")]),
        (GOAL, "[judge]\nahead = true\n\n[goal]",
         [("judge.ahead", "the judge works ahead on CUDA streams: target cpu has none")]),
        ('function = "reference"', 'function = "reference"\nfast = 3',
         [("reference.fast", "3 is not a function name")]),
        (GOAL, "[child]\nbaseline_threads = 33\n\n[goal]", [("child.baseline_threads", "33: an integer in [0, 32]")]),
        ("[baselines]\n", "[baselines]\nversions = 1\n", [("baselines.versions", "1 is not a function name")]),
    ],
)  # fmt: skip
def test_task_check_names_each_bad_value(folder, old, new, want):
    assert problems(folder, (old, new)) == want


def test_the_judge_section_of_a_cuda_task(tmp_path):
    folder = scaffold("demo_gpu", tmp_path, target="cuda-sm90")
    edited(folder, (GOAL, "[judge]\nahead = true\nbaseline_threads = 2\n\n[goal]"))
    assert load_spec(folder).ahead == JudgeAhead(reference_depth=4, baseline_depth=12, baseline_threads=2)
    edited(folder, ("baseline_threads = 2", "reference_depth = 0\nspeed = 1"))
    assert problems(folder) == [
        ("judge.speed", "unknown field (its fields: ahead, baseline_depth, baseline_threads, reference_depth)"),
        ("judge.reference_depth", "0: an integer in [1, 64]"),
    ]


def test_a_child_variable_may_live_under_the_harness_cache_and_the_users_wins(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    folder = scaffold("demo_gpu", tmp_path, target="cuda-sm90")
    edited(folder, (GOAL, '[child.env]\nLIB_CACHE = "{cache}/lib"\nLIB_ON = "1"\n\n[goal]'))
    task = folder_task(load_spec(folder), device="cpu")
    from gpu_harness.build import cache_dir
    from gpu_harness.runner import with_cache_folder

    assert task.child_env() == {"LIB_CACHE": "{cache}/lib", "LIB_ON": "1"}  # the runner resolves {cache}
    assert with_cache_folder(task.child_env(), str(cache_dir())) == {
        "LIB_CACHE": f"{tmp_path}/cache/lib",
        "LIB_ON": "1",
    }
    monkeypatch.setenv("LIB_ON", "0")
    assert task.child_env() == {"LIB_CACHE": "{cache}/lib"}


def sampled_task(folder, *more):
    return folder_task(load_spec(edited(folder, (GOAL, SAMPLED), *more, reference=REFERENCE)))


def honest(task, seed):
    inputs = task.make_inputs(PARAMS, seed)
    return {"out": (inputs["x"] * np.float32(0.5) + inputs["y"]).astype(np.float32)}


def test_a_spot_check_computes_the_reference_on_sampled_rows_only(folder):
    task = sampled_task(folder)
    calls = task.module().CALLS
    j = task.judge(PARAMS, 3, honest(task, 3), spot_check=True)
    assert j.correct and j.details["rows_checked"] == 200 and calls[-1] == 200  # 1000 / 5, above 100
    full = task.judge(PARAMS, 3, honest(task, 3))
    assert full.correct and "rows_checked" not in full.details and calls[-1] is None
    small = {"rows": 7, "cols": 33, "scale": 0.5}
    assert task.spot_rows(small).tolist() == list(range(7))  # at least min_count: every row of a short axis
    assert len(task.spot_rows({"rows": 300, "cols": 1, "scale": 1.0})) == 100  # 300 / 5 < min_count
    rows = [tuple(task.spot_rows(PARAMS)) for _ in range(3)]
    assert len(set(rows)) == 3 and all(list(r) == sorted(set(r)) for r in rows)


def test_without_a_whole_function_any_non_finite_element_fails_a_spot_check(folder):
    task = sampled_task(folder)
    outs = honest(task, 3)
    outs["out"][999, 32] = np.inf  # wherever the sample falls
    j = task.judge(PARAMS, 3, outs, spot_check=True)
    assert not j.correct and j.reason.startswith("out: 1 of 33000 elements are NaN/Inf")


def test_a_whole_function_counts_wrong_specials_over_the_whole_output(folder):
    task = sampled_task(folder, ("min_count = 100", 'min_count = 100\nwhole = "whole"'))
    outs = honest(task, 3)
    outs["out"][500, 0] = 7.0  # what this task's whole() calls a misplaced special
    j = task.judge(PARAMS, 3, outs, spot_check=True)
    assert not j.correct and j.reason == "out: 1 elements differ where the reference is -inf/inf/NaN"
    assert task.self_check()["scenario"] == "r1_c1_s2.0"  # the sampled reference and whole() were tried


def test_a_sampled_each_rule_samples_the_baselines_outputs_too(folder):
    task = sampled_task(folder)
    j = task.judge(PARAMS, 4, honest(task, 4), spot_check=True)
    assert j.correct and j.details["numpy_error"] < 1e-6 and j.details["rows_checked"] == 200


def test_a_broken_whole_function_or_versions_is_the_tasks_error(folder):
    task = sampled_task(
        folder,
        ("min_count = 100", 'min_count = 100\nwhole = "versions"'),
        ("[baselines]\n", '[baselines]\nversions = "whole"\n'),
    )
    with pytest.raises(TaskError, match=r"^versions \(\[spot_check\] whole\) failed on rows=1000"):
        task.judge(PARAMS, 3, honest(task, 3), spot_check=True)
    with pytest.raises(TaskError, match="^whole raised: TypeError"):
        task.task_versions()


FAST = """SERVED = []


class Quick:
    note = "the quick one"

    def __init__(self):
        self.started = 0

    def start(self):
        self.started += 1

    def __call__(self, x, y, scale, rows, cols):
        if rows == 1:
            return None  # cannot serve: the reference function does
        SERVED.append(x.dtype)
        return (x.float() * scale + y.float()) * 1.0


quick = Quick()
broken = None


def reference(x, y, scale, rows, cols):
    return x * scale + y


def torch_scale_add(x, y, out, scale, rows, cols):
    out.copy_(x * scale + y)
"""


def test_a_fast_reference_is_tried_first_and_the_reference_serves_where_it_cannot(tmp_path):
    torch = pytest.importorskip("torch")
    folder = scaffold("demo_gpu", tmp_path, target="cuda-sm90")
    edited(folder, ('function = "reference"', 'function = "reference"\nfast = "quick"'), reference=FAST)
    task = folder_task(load_spec(folder), device="cpu")
    params = {"rows": 7, "cols": 33, "scale": 0.5}
    inputs = task.make_inputs(params, 2)
    ref = task.reference_outputs(params, inputs)
    module = task.module()
    assert module.SERVED == [inputs["x"].dtype]  # the inputs in their own dtype, not the reference's copies
    assert ref["out"].dtype == torch.float32  # at its own precision (the function's: float64)
    small = {"rows": 1, "cols": 1, "scale": 2.0}
    assert task.reference_outputs(small, task.make_inputs(small, 2))["out"].dtype == torch.float64
    task.parent_prepare()  # the judge on the CPU: nothing to prepare
    assert module.quick.started == 0
    assert task.reference_note() == "reference.py:reference on float64 copies of the inputs (cpu)"
    gpu = folder_task(load_spec(folder), device="cuda")
    assert gpu.reference_note() == "the quick one"
    edited(folder, ('fast = "quick"', 'fast = "broken"'))
    with pytest.raises(TaskError, match="has no callable 'broken'"):
        folder_task(load_spec(folder), device="cpu").reference_outputs(params, inputs)
