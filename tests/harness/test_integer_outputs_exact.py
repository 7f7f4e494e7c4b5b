"""An integer output (an index, a count, a mask) is judged exactly, element by element, whatever the tolerance
rule: KernelBench level 1 #51's argmax with 8 indices off by one had a relative L2 error of 6.6e-6 and passed
a 1e-5 bound on an H200 (issue 38). The numpy comparison (the cpu target), the torch one (cuda-sm90, here on
CPU tensors) and a cpu task's judge, each with a few wrong indices among many right ones."""

import numpy as np
import pytest

from gpu_harness.tasks import folder_task
from gpu_harness.taskspec import load_spec
from gpu_harness.verdict import compare_numpy, judge_outputs

ROWS, COLS = 1000, 257


def _argmax_with_off_by_one(ref):
    """The reference's indices, 8 of them one further along the row: the first 8 rows whose index is at least
    100 (so that even KernelBench's own atol = rtol = 1e-2 passes them: 1 <= 0.01 + 0.01 x 100). Returns the
    candidate and the first row changed."""
    rows = [r for r in range(len(ref)) if 100 <= ref[r] < COLS - 1][:8]
    cand = ref.copy()
    cand[rows] += 1
    return cand, rows[0]


def _indices(seed=0):
    return np.random.default_rng(seed).standard_normal((ROWS, COLS)).argmax(axis=1).astype(np.int64)


def test_a_few_wrong_indices_fail_the_numpy_comparison_however_loose_the_bound():
    ref = _indices()
    cand, first = _argmax_with_off_by_one(ref)
    assert compare_numpy("idx", cand, ref).rel_error < 1e-3  # what a relative norm sees: almost nothing
    ok, reason = judge_outputs([compare_numpy("idx", cand, ref)], {"idx": 1e-3})
    assert not ok
    assert "8 elements differ" in reason and "judged exactly" in reason
    assert f"first at index ({first}): {cand[first]}, the reference {ref[first]}" in reason
    assert judge_outputs([compare_numpy("idx", ref.copy(), ref)], {"idx": 0.0}) == (True, None)


def test_a_mask_is_judged_exactly_and_names_its_first_wrong_element_by_its_index():
    ref = np.zeros((4, 5, 6), dtype=np.uint8)
    ref[1, 2, 3] = 1
    cand = ref.copy()
    cand[2, 0, 5] = 1
    ok, reason = judge_outputs([compare_numpy("mask", cand, ref)], {"mask": 1.0})
    assert not ok and "1 elements differ" in reason and "index (2, 0, 5): 1, the reference 0" in reason


def test_large_int64_values_are_compared_in_their_own_dtype():
    ref = np.array([2**62, 7], dtype=np.int64)
    cand = ref.copy()
    cand[0] += 1  # the same float64 value: a comparison in float64 would see no difference
    ok, reason = judge_outputs([compare_numpy("n", cand, ref)], {"n": 1.0})
    assert not ok and f"index (0): {2**62 + 1}" in reason


def test_a_few_wrong_indices_fail_the_torch_comparison():
    torch = pytest.importorskip("torch")
    from gpu_harness.tasks.cuda_device import compare_torch

    ref = torch.from_numpy(_indices(1))
    cand, first = _argmax_with_off_by_one(ref.numpy())
    cand = torch.from_numpy(cand)
    c = compare_torch("idx", cand, ref)
    assert c.rel_error < 1e-3
    ok, reason = judge_outputs([c], {"idx": 1e-3})
    assert not ok and "8 elements differ" in reason
    assert f"first at index ({first}): {int(cand[first])}, the reference {int(ref[first])}" in reason
    big = torch.tensor([[2**62, 1]], dtype=torch.int64)
    ok, reason = judge_outputs([compare_torch("n", big + torch.tensor([[1, 0]]), big)], {"n": 1.0})
    assert not ok and f"index (0, 0): {2**62 + 1}" in reason
    assert judge_outputs([compare_torch("idx", ref.clone(), ref)], {"idx": 0.0}) == (True, None)


ARGMAX_REFERENCE = """import numpy as np


def reference(x, rows, cols):
    return x.argmax(axis=1).astype(np.int64)


def numpy_argmax(x, idx, rows, cols):
    idx[...] = x.argmax(axis=1)
"""

RULES = {
    "KernelBench's own allclose": "atol = 1e-2\nrtol = 1e-2",
    "a relative L2 bound": "rel_l2 = 1e-3",
    "a baseline's error plus a floor": 'baseline = "numpy"\nfactor = 2.0\nfloor = 1e-3',
}


ARGMAX_TOML = """description = "idx[r] = argmax of row r of x"
target = "cpu"

[kernel]
symbol = "kseek_argmax_rows"

[[args]]
name = "x"
kind = "input"
dtype = "float32"
shape = ["rows", "cols"]
init = { dist = "normal", mean = 0.0, std = 1.0 }

[[args]]
name = "idx"
kind = "output"
dtype = "int64"
shape = ["rows"]

[[args]]
name = "rows"
kind = "scalar"
dtype = "int32"
value = "rows"

[[args]]
name = "cols"
kind = "scalar"
dtype = "int32"
value = "cols"

[reference]
function = "reference"

[scenarios]
id = "r{rows}_c{cols}"
list = [{ rows = 1000, cols = 257 }]
quick = ["r1000_c257"]

[formulas]
flops = "rows*cols"

[tolerance]
RULE

[baselines]
default = ["numpy"]
numpy = { function = "numpy_argmax" }

[goal]
baseline = "numpy"
speedup = 1.0
"""


def _argmax_task(tmp_path, rule: str):
    """A cpu task: idx[r] = argmax of row r of x (int64), judged by `rule`."""
    folder = tmp_path / "argmax_rows"
    folder.mkdir()
    (folder / "task.toml").write_text(ARGMAX_TOML.replace("RULE", rule))
    (folder / "reference.py").write_text(ARGMAX_REFERENCE)
    return folder_task(load_spec(folder))


@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_a_cpu_task_fails_an_argmax_with_eight_indices_off_by_one_whatever_its_rule(tmp_path, rule):
    task = _argmax_task(tmp_path, rule)
    params = {"rows": ROWS, "cols": COLS}
    ref = task.reference_outputs(params, task.make_inputs(params, 7))["idx"]
    assert task.judge(params, 7, {"idx": ref.copy()}).correct
    cand, first = _argmax_with_off_by_one(ref)
    j = task.judge(params, 7, {"idx": cand})
    assert not j.correct
    assert "idx: 8 elements differ from the reference" in j.reason and f"first at index ({first})" in j.reason
