"""A rule per output ([tolerance.<output>]) and the baseline rule's further choices (baselines tried in turn,
a sanity bound, numbers chosen by a scenario symbol, measure = "once"), and function baselines that return
their outputs, may refuse a configuration or need a module: what attention_fwd's judge does (O: 2 x cuDNN's
own error on seed a + a floor per dtype, cuDNN's flash fallback where it cannot run; LSE: a fixed bound),
written as data. The spec's problems (`task check`), then the generic judge on the cpu target's arrays."""

import math

import numpy as np
import pytest

from gpu_harness.tasks import TaskError, folder_task
from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import ByScenario, TaskSpecError, Tolerance, load_spec

from .conftest import edit_task_folder as edited

PARAMS = {"rows": 7, "cols": 33, "scale": 0.5}
UNIFORM = '[tolerance]\nbaseline = "numpy"\nfactor = 2.0\nfloor = 1e-6'
TWO_OUTPUTS = (
    '[[args]]\nname = "scale"',
    '[[args]]\nname = "out2"\nkind = "output"\ndtype = "float32"\nshape = ["rows", "cols"]\n\n[[args]]\nname = "scale"',
)
# out: the first usable of (refuser, noisy, good), on seed a, held after; out2: a fixed bound
PER_OUTPUT = """[tolerance.out]
baseline = ["refuser", "noisy", "good"]
factor = 2.0
floor = { by = "scale", "0.5" = 1e-4, "2.0" = 1e-5 }
default_error = 1e-3
sanity = 4.0
measure = "once"

[tolerance.out2]
rel_l2 = 1e-3"""
BASELINES = (
    '[baselines]\ndefault = ["numpy"]\nnumpy = { function = "numpy_scale_add" }',
    '[baselines]\ndefault = ["numpy"]\nnumpy = { function = "numpy_scale_add" }\n'
    'refuser = { function = "refuser", may_refuse = true }\n'
    'noisy = { function = "noisy", may_refuse = true }\n'
    'good = { function = "good", description = "returns its out, 1.001 x the reference" }',
)
REFERENCE = """import numpy as np


def reference(x, y, scale, rows, cols):
    return x * scale + y, y


def numpy_scale_add(x, y, out, out2, scale, rows, cols):
    out[...] = x * scale + y
    out2[...] = y


def refuser(**kw):
    raise RuntimeError("this configuration is not supported")


def noisy(x, y, scale, **kw):
    return {"out": (x * scale + y) * np.float32(1.5)}  # 0.5 relative: above sanity x default_error


def good(x, y, scale, **kw):
    return {"out": (x * scale + y) * np.float32(1.001)}  # returned, out2 not given: not needed for out's rule
"""


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def attention_like(folder, *more, reference=REFERENCE):
    return edited(folder, TWO_OUTPUTS, (UNIFORM, PER_OUTPUT), BASELINES, *more, reference=reference)


def problems(folder, *edits):
    edited(folder, *edits)
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    return [(p.field, p.message) for p in info.value.problems]


def honest(task, params, seed):
    ref = task.reference_outputs(params, task.make_inputs(params, seed))
    return {name: ref[name].astype(np.float32) for name in ref}


# ---- the spec ----


def test_a_rule_per_output_is_read_with_its_choices(folder):
    spec = load_spec(attention_like(folder))
    assert spec.tolerance is None and list(spec.tolerances) == ["out", "out2"]
    out = spec.tolerances["out"]
    assert (out.baseline, out.fallbacks, out.baselines) == ("refuser", ("noisy", "good"), ("refuser", "noisy", "good"))
    assert (out.factor, out.default_error, out.sanity, out.measure) == (2.0, 1e-3, 4.0, "once")
    assert isinstance(out.floor, ByScenario) and out.floor_on(PARAMS) == 1e-4 and out.floor_on({"scale": 2.0}) == 1e-5
    assert spec.tolerances["out2"] == Tolerance("rel_l2", rel_l2=1e-3)
    assert spec.describe_tolerance() == (
        "out: 2 x refuser's (else noisy's) (else good's) own error on seed a's inputs + (0.5 0.0001, 2.0 1e-05); "
        "out2: relative L2 error <= 0.001"
    )
    assert spec.baselines["refuser"].may_refuse and not spec.baselines["good"].may_refuse
    assert spec.baselines["good"].describe(folder) == "returns its out, 1.001 x the reference"


def test_one_rule_for_every_output_is_as_before(folder):
    spec = load_spec(edited(folder, TWO_OUTPUTS))
    assert spec.tolerance == Tolerance("baseline", baseline="numpy", factor=2.0, floor=1e-6)
    assert spec.tolerances == {"out": spec.tolerance, "out2": spec.tolerance}
    assert spec.tolerance.measure == "each" and spec.tolerance.fallbacks == () and spec.tolerance.sanity is None


@pytest.mark.parametrize(
    "old, new, want",
    [
        ("[tolerance.out2]\nrel_l2 = 1e-3", "[tolerance.lse]\nrel_l2 = 1e-3",
         [("tolerance.lse", "'lse' is not an output (outputs: out, out2)"),
          ("tolerance", "no rule for output(s) out2: each output needs one")]),
        ("[tolerance.out]\n", "[tolerance]\nrel_l2 = 1.0\n\n[tolerance.out]\n",
         [("tolerance.rel_l2", "either one rule for every output or a table per output ([tolerance.<output>]), not both")]),
        ("[tolerance.out2]\nrel_l2 = 1e-3", '[tolerance.out2]\nbaseline = "good"\nmeasure = "once"',
         [("tolerance", 'measure = "once" on out, out2: one output at most (its bound is the one seed b and the '
           "timed calls are held to)")]),
        ('measure = "once"', 'measure = "always"',
         [("tolerance.out.measure", "'always': \"each\" (on every output judged) or \"once\" (on seed a, then held)")]),
        ("sanity = 4.0", "sanity = 0.5",
         [("tolerance.out.sanity", "below 1: a baseline as good as default_error would be refused")]),
        ("sanity = 4.0", "sanity = -1",
         [("tolerance.out.sanity", "expected a number >= 0, got -1"),
          ("tolerance.out.sanity", "below 1: a baseline as good as default_error would be refused")]),
        ('"2.0" = 1e-5 }', '"3.0" = 1e-5 }',
         [("tolerance.out.floor", 'scale = 2.0 (scenario r1_c1_s2.0) has no choice (the mapping gives 0.5, 3.0)')]),
        ('floor = { by = "scale"', 'floor = { by = "size"',
         [("tolerance.out.floor", "by = 'size' is no scenario symbol (known: rows, cols, scale)")]),
        ('"0.5" = 1e-4', '"0.5" = -1e-4',
         [("tolerance.out.floor", "0.5: expected a number >= 0, got -0.0001")]),
        ('["refuser", "noisy", "good"]', '["refuser", "naive"]',
         [("tolerance.out.baseline", "'naive' is not a function baseline (known: numpy, refuser, noisy, good)")]),
        ('["refuser", "noisy", "good"]', "[]",
         [("tolerance.out.baseline", "a baseline's name, or a list of names tried in turn"),
          ("tolerance.out.baseline", "'' is not a function baseline (known: numpy, refuser, noisy, good)")]),
        ("rel_l2 = 1e-3", "rel_l2 = 1e-3\nfactor = 2.0",
         [("tolerance.out2.factor", "not used with this rule (its fields: rel_l2)")]),
        ("[tolerance.out2]\nrel_l2 = 1e-3", "[tolerance.out2]",
         [("tolerance.out2", "give baseline (+ factor, floor), rel_l2, or atol/rtol")]),
    ],
)  # fmt: skip
def test_task_check_names_each_bad_rule(folder, old, new, want):
    attention_like(folder)
    assert problems(folder, (old, new)) == want


@pytest.mark.parametrize(
    "entry, want",
    [
        ('refuser = { function = "refuser", may_refuse = 1 }', [("baselines.refuser.may_refuse", "true or false")]),
        ('refuser = { function = "refuser", requires = "flash attn" }',
         [("baselines.refuser.requires", 'module names, e.g. ["flash_attn_interface"], or alternatives: [["flash_attn_interface", "fa3_fwd_interface"]]')]),
        ('refuser = { function = "refuser", description = 3 }', [("baselines.refuser.description", "a line of text")]),
        ('refuser = { kernel = "kernel.cpp", may_refuse = true }',
         [("baselines.refuser", "requires and may_refuse are a function baseline's"),
          ("tolerance.out.baseline", "'refuser' is not a function baseline (known: numpy, noisy, good)")]),
    ],
)  # fmt: skip
def test_task_check_names_each_bad_baseline_field(folder, entry, want):
    attention_like(folder)
    assert problems(folder, ('refuser = { function = "refuser", may_refuse = true }', entry)) == want


# ---- judging ----


def test_seed_a_sets_outs_bound_from_the_first_usable_baseline_and_out2_keeps_its_own(folder):
    task = folder_task(load_spec(attention_like(folder)))
    inputs = task.make_inputs(PARAMS, 5)
    ref = task.reference_outputs(PARAMS, inputs)
    good = float(np.linalg.norm(ref["out"] * 0.001) / np.linalg.norm(ref["out"]))
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    # refuser raised (may_refuse), noisy is above 4 x 1e-3: good's error sets the bound
    assert j.correct and j.details["vendor"] == "good" and j.details["vendor_error"] == pytest.approx(good, rel=1e-3)
    assert j.tolerance == 2.0 * j.details["vendor_error"] + 1e-4
    assert j.error < 1e-6 and j.details["out2_error"] < 1e-6 and task.judging.headline_output() == "out"
    held = task.judge(PARAMS, 6, honest(task, PARAMS, 6), tolerance=1e-9)
    assert held.tolerance == 1e-9 and not held.correct and held.details["vendor"] is None
    assert held.reason.startswith("out: relative error")
    assert task.judging.held_outputs() == ("out",)


def test_the_second_output_fails_by_its_own_rule(folder):
    task = folder_task(load_spec(attention_like(folder)))
    outs = honest(task, PARAMS, 5)
    outs["out2"] = outs["out2"] * np.float32(1.002)  # 2e-3 > out2's 1e-3, though far under out's bound
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and j.reason.startswith("out2: relative error 2.0") and "above tolerance 1.000e-03" in j.reason
    assert j.details["out2_error"] == pytest.approx(2e-3, rel=1e-2) and j.error < 1e-6
    outs["out2"][0, 0] = np.nan
    assert "out2: 1 of 231 elements are NaN/Inf" in task.judge(PARAMS, 5, outs).reason


def test_with_no_usable_baseline_the_default_error_sets_the_bound(folder):
    attention_like(folder, ('["refuser", "noisy", "good"]', '["refuser", "noisy"]'))
    task = folder_task(load_spec(folder))
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    assert (j.details["vendor"], j.details["vendor_error"]) == (None, None)
    assert j.tolerance == 2.0 * 1e-3 + 1e-4


def test_without_sanity_a_large_error_is_used(folder):
    attention_like(folder, ("sanity = 4.0\n", ""))
    task = folder_task(load_spec(folder))
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    assert j.details["vendor"] == "noisy" and j.details["vendor_error"] == pytest.approx(0.5, rel=1e-5)


def test_a_baseline_not_marked_may_refuse_that_raises_is_the_tasks_error(folder):
    attention_like(
        folder, ('refuser = { function = "refuser", may_refuse = true }', 'refuser = { function = "refuser" }')
    )
    task = folder_task(load_spec(folder))
    with pytest.raises(TaskError, match="^baseline refuser raised on rows=7, cols=33, scale=0.5: RuntimeError"):
        task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    with pytest.raises(TaskError, match="^baseline refuser raised"):
        task.self_check()


def test_a_baseline_without_the_output_its_rule_needs_is_skipped(folder):
    reference = REFERENCE.replace('return {"out": (x * scale + y) * np.float32(1.001)}', 'return {"out2": y}')
    attention_like(folder, reference=reference)
    task = folder_task(load_spec(folder))
    assert task.judge(PARAMS, 5, honest(task, PARAMS, 5)).details["vendor"] is None


@pytest.mark.parametrize(
    "returns, says",
    [("(x,)", r"^baseline good returned 1 values for 2 output\(s\)$"),
     ("x", "^baseline good returned one value for 2 outputs: return a dict by name$"),
     ('{"o": x}', r"^baseline good returned o: not outputs \(out, out2\)$"),
     ('{"out": x[:3]}', r"^baseline good returned out as shape \(3, 33\), the ABI says \(7, 33\) on rows=7"),
     ('{"out": 1.0}', r"^baseline good returned out as float, the ABI says \(7, 33\)")],
)  # fmt: skip
def test_what_a_baseline_returns_is_checked_against_the_abi(folder, returns, says):
    reference = REFERENCE.replace('return {"out": (x * scale + y) * np.float32(1.001)}', f"return {returns}")
    task = folder_task(load_spec(attention_like(folder, reference=reference)))
    with pytest.raises(TaskError, match=says):
        task.baseline_outputs("good", PARAMS, task.make_inputs(PARAMS, 1))


def test_a_returned_tuple_is_in_abi_order_and_in_place_writes_are_the_outputs(folder):
    reference = REFERENCE.replace('return {"out": (x * scale + y) * np.float32(1.001)}', "return y * 2, y * 3")
    task = folder_task(load_spec(attention_like(folder, reference=reference)))
    inputs = task.make_inputs(PARAMS, 1)
    got = task.baseline_outputs("good", PARAMS, inputs)
    assert np.array_equal(got["out"], inputs["y"] * 2) and np.array_equal(got["out2"], inputs["y"] * 3)
    wrote = task.baseline_outputs("numpy", PARAMS, inputs)
    assert np.array_equal(wrote["out2"], inputs["y"])


def test_the_self_check_reports_a_refusal_and_skips_what_does_not_import(folder):
    attention_like(
        folder,
        ('noisy = { function = "noisy", may_refuse = true }',
         'noisy = { function = "noisy", requires = ["kseek_no_such_module"] }'),
    )  # fmt: skip
    task = folder_task(load_spec(folder))
    facts = task.self_check()
    assert facts["refused"] == {"refuser": "baseline refuser raised on rows=1, cols=1, scale=2.0: RuntimeError: "
                                "this configuration is not supported (reference.py, line 14)"}  # fmt: skip
    note = "kseek_no_such_module does not import here (ModuleNotFoundError)"
    assert task.baseline_availability(["noisy", "good", "cuda"]) == {
        "noisy": note,
        "good": None,
        "cuda": "unknown baseline 'cuda' (known: numpy, refuser, noisy, good)",
    }
    inputs = task.make_inputs(PARAMS, 1)
    calls = task.baseline_callables(["noisy", "good"], PARAMS, inputs, {})
    assert calls["noisy"] == note and callable(calls["good"])
    assert calls["good"]()["out"].shape == (7, 33)  # the child times the call; what it returns is not judged


def test_a_measured_each_rule_per_output_measures_every_judgement(folder):
    attention_like(folder, ('measure = "once"', 'measure = "each"'))
    task = folder_task(load_spec(folder))
    assert task.judging.held_outputs() == ()
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5), tolerance=1e-9)  # nothing held: the bound is measured
    assert j.correct and "good_error" in j.details and j.tolerance > 1e-9
    assert math.isclose(j.tolerance, 2.0 * j.details["good_error"] + 1e-4)


# ---- an allclose rule for one output beside a baseline rule for another ----

ALLCLOSE_OUT2 = ("[tolerance.out2]\nrel_l2 = 1e-3", "[tolerance.out2]\natol = 1e-3\nrtol = 1e-2")


def test_an_allclose_output_passes_within_atol_plus_rtol_and_reports_its_worst_ratio(folder):
    task = folder_task(load_spec(attention_like(folder, ALLCLOSE_OUT2)))
    inputs = task.make_inputs(PARAMS, 5)
    ref = task.reference_outputs(PARAMS, inputs)
    outs = honest(task, PARAMS, 5)
    # one element off by half the allowance: allclose's worst ratio is 0.5 of atol + rtol |ref|
    allowance = 1e-3 + 1e-2 * abs(float(ref["out2"][3, 4]))
    outs["out2"][3, 4] = np.float32(float(ref["out2"][3, 4]) + 0.5 * allowance)
    j = task.judge(PARAMS, 5, outs)
    assert j.correct, j.reason
    assert j.details["out2_error"] == pytest.approx(0.5, rel=1e-2)
    assert task.judging.headline_output() == "out" and j.error < 1e-6  # the headline is out's, held by its rule


def test_an_allclose_output_fails_on_one_element_beyond_atol_plus_rtol(folder):
    task = folder_task(load_spec(attention_like(folder, ALLCLOSE_OUT2)))
    inputs = task.make_inputs(PARAMS, 5)
    ref = task.reference_outputs(PARAMS, inputs)
    outs = honest(task, PARAMS, 5)
    allowance = 1e-3 + 1e-2 * abs(float(ref["out2"][2, 9]))
    outs["out2"][2, 9] = np.float32(float(ref["out2"][2, 9]) + 3.0 * allowance)  # 3x: the rel. L2 stays tiny
    j = task.judge(PARAMS, 5, outs)
    assert j.correct is False
    assert j.reason == "out2: some elements differ by more than 0.001 + 0.01 x |ref| (worst x3)"
    assert j.details["out2_error"] == pytest.approx(3.0, rel=1e-2)


def test_an_allclose_output_is_still_checked_for_nan_first(folder):
    task = folder_task(load_spec(attention_like(folder, ALLCLOSE_OUT2)))
    outs = honest(task, PARAMS, 5)
    outs["out2"][0, 0] = np.nan
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and "out2: 1 of 231 elements are NaN/Inf" in j.reason


def test_the_first_failing_output_gives_the_reason_and_later_ones_are_still_measured(folder):
    task = folder_task(load_spec(attention_like(folder, ALLCLOSE_OUT2)))
    inputs = task.make_inputs(PARAMS, 5)
    ref = task.reference_outputs(PARAMS, inputs)
    outs = honest(task, PARAMS, 5)
    outs["out"] = outs["out"] * np.float32(1.5)  # out fails its baseline rule first
    allowance = 1e-3 + 1e-2 * abs(float(ref["out2"][1, 1]))
    outs["out2"][1, 1] = np.float32(float(ref["out2"][1, 1]) + 2.0 * allowance)
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and j.reason.startswith("out: relative error")
    assert j.details["out2_error"] == pytest.approx(2.0, rel=1e-2)  # measured though out already failed


def test_an_allclose_output_far_off_is_refused_by_allclose_not_by_a_relative_error_bound(folder):
    # allclose bounds each element, not the output's relative L2 error: one 4x that wrong must still say so
    task = folder_task(load_spec(attention_like(folder, ALLCLOSE_OUT2)))
    outs = honest(task, PARAMS, 5)
    outs["out2"] = outs["out2"] * np.float32(-3.0)  # relative L2 error 4
    j = task.judge(PARAMS, 5, outs)
    assert j.correct is False
    assert j.reason.startswith("out2: some elements differ by more than 0.001 + 0.01 x |ref| (worst x")


# ---- two outputs at the judge's edges: each test here fails with a change to data_task.py that let a wrong output
# pass or blamed the candidate for the task (an independent mutation run, issue 34; docs/testing.md) ----

EDGES_REFERENCE = """import numpy as np


def reference(x, y, scale, rows, cols):
    return x * scale + y, y


def numpy_scale_add(x, y, out, out2, scale, rows, cols):
    out[...] = x * scale + y
    out2[...] = y


def out_only(x, y, scale, **kw):
    return {"out": (x * scale + y) * np.float32(1.001)}


def both(x, y, scale, **kw):
    return {"out": (x * scale + y) * np.float32(1.001), "out2": y * np.float32(1.004)}


def poisoned(x, y, scale, rows, **kw):
    out = (x * scale + y) * np.float32(1.03)
    if rows > 1:  # a configuration the self check (the smallest scenario) does not see
        out[0, 0] = np.nan
    return {"out": out}


def poisoned_out2(x, y, scale, rows, **kw):
    out2 = y.copy()
    if rows > 1:
        out2[0, 0] = np.nan
    return {"out": (x * scale + y) * np.float32(1.03), "out2": out2}


def noisy(x, y, scale, **kw):
    return {"out": (x * scale + y) * np.float32(1.5)}


def good(x, y, scale, **kw):
    return {"out": (x * scale + y) * np.float32(1.001)}


def good_out2(x, y, **kw):
    return {"out2": y * np.float32(1.001)}
"""
EDGES_BASELINES = (
    BASELINES[0],
    BASELINES[0] + "\n"
    + "\n".join(f'{name} = {{ function = "{name}", may_refuse = true }}'
                for name in ("out_only", "both", "poisoned", "poisoned_out2", "noisy", "good", "good_out2")),
)  # fmt: skip


def two_outputs(folder, tolerance):
    """The task of two outputs (out = x * scale + y, out2 = y) judged under `tolerance` (task.toml's text)."""
    edited(folder, TWO_OUTPUTS, (UNIFORM, tolerance), EDGES_BASELINES, reference=EDGES_REFERENCE)
    return folder_task(load_spec(folder))


def off_by(outs, name, factor):
    """The outputs with `name` scaled by `factor`: its relative L2 error is |factor - 1|."""
    return {**outs, name: outs[name] * np.float32(factor)}


@pytest.mark.parametrize("wrong", ["out", "out2"])
def test_one_allclose_rule_over_two_outputs_fails_a_wrong_output_beside_a_right_one(folder, wrong):
    task = two_outputs(folder, "[tolerance]\natol = 1e-3\nrtol = 1e-2")
    ref = task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 5))
    outs = honest(task, PARAMS, 5)
    allowance = 1e-3 + 1e-2 * abs(float(ref[wrong][2, 9]))
    outs[wrong][2, 9] = np.float32(float(ref[wrong][2, 9]) + 3.0 * allowance)
    j = task.judge(PARAMS, 5, outs)
    assert j.correct is False and j.error == pytest.approx(3.0, rel=1e-2)  # the worst output's ratio, not the best
    assert j.reason == "some elements differ by more than 0.001 + 0.01 x |ref| (worst x3)"
    assert task.judge(PARAMS, 5, honest(task, PARAMS, 5)).correct


def test_a_lone_baseline_over_its_sanity_bound_sets_no_bound_the_default_error_does(folder):
    task = two_outputs(folder, PER_OUTPUT.replace('["refuser", "noisy", "good"]', '"noisy"'))
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    # noisy's 0.5 is above 4 x default_error: it cannot do this scenario, whether it is tried first or alone
    assert (j.details["vendor"], j.details["vendor_error"]) == (None, None)
    assert j.tolerance == 2.0 * 1e-3 + 1e-4
    wrong = task.judge(PARAMS, 5, off_by(honest(task, PARAMS, 5), "out", 1.1))
    assert not wrong.correct and wrong.reason.startswith("out: relative error 1.0")


def test_seed_b_holds_the_held_output_to_its_own_bound_when_it_is_not_the_first_output(folder):
    rules = '[tolerance.out]\nrel_l2 = 0.1\n\n[tolerance.out2]\nbaseline = "good_out2"\nfactor = 2.0\nfloor = 1e-6\n'
    task = two_outputs(folder, rules + 'measure = "once"')
    assert task.judging.held_outputs() == ("out2",) and task.judging.headline_output() == "out2"
    seed_a = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    assert seed_a.correct and seed_a.details["vendor"] == "good_out2"
    assert seed_a.tolerance == 2.0 * seed_a.details["vendor_error"] + 1e-6  # out2's bound, not out's 0.1
    # seed b gets seed a's bound back, as the evaluation gives it: out2 at 1e-2 is five times over its own bound
    seed_b = task.judge(PARAMS, 6, off_by(honest(task, PARAMS, 6), "out2", 1.01), tolerance=seed_a.tolerance)
    assert not seed_b.correct and seed_b.reason.startswith("out2: relative error 1.0")


def test_a_baseline_short_of_an_output_is_skipped_and_the_next_ones_worst_output_sets_the_bound(folder):
    task = two_outputs(folder, '[tolerance]\nbaseline = ["out_only", "both"]\nfactor = 2.0\nfloor = 1e-6')
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    # out_only gives no out2: the task's gap, skipped (never a KeyError, which the evaluation would blame on the
    # child); both's error is its worse output's, out2's 4e-3 (its out is 1e-3 off)
    assert j.correct and list(j.details) == ["both_error"]
    assert j.details["both_error"] == pytest.approx(4e-3, rel=1e-3)
    assert j.tolerance == 2.0 * j.details["both_error"] + 1e-6
    assert task.judge(PARAMS, 5, off_by(honest(task, PARAMS, 5), "out2", 1.006)).correct  # within 2 x 4e-3


def test_a_lone_baseline_short_of_an_output_is_the_tasks_error(folder):
    task = two_outputs(folder, '[tolerance]\nbaseline = "out_only"\nfactor = 2.0\nfloor = 1e-6')
    with pytest.raises(TaskError, match="^baseline out_only gives no out2$"):
        task.judge(PARAMS, 5, honest(task, PARAMS, 5))


def test_a_baseline_that_leaves_nan_sets_no_bound_the_next_one_does(folder):
    rule = PER_OUTPUT.replace('["refuser", "noisy", "good"]', '["poisoned", "good"]')
    task = two_outputs(folder, rule.replace("default_error = 1e-3", "default_error = 1e-2"))
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    # poisoned's finite elements are 3e-2 off, within sanity (4 x 1e-2), but it left a NaN: good's 1e-3 counts
    assert j.details["vendor"] == "good" and j.details["vendor_error"] == pytest.approx(1e-3, rel=1e-3)
    wrong = task.judge(PARAMS, 5, off_by(honest(task, PARAMS, 5), "out", 1.02))
    assert not wrong.correct and wrong.reason.startswith("out: relative error 2.0")


def test_a_baseline_that_leaves_nan_in_one_of_two_outputs_sets_no_bound_the_next_one_does(folder):
    rule = '[tolerance]\nbaseline = ["poisoned_out2", "both"]\nfactor = 2.0\nfloor = 1e-6\ndefault_error = 1e-2'
    task = two_outputs(folder, rule + "\nsanity = 4.0")
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    # poisoned_out2: out 3e-2 off (within sanity), out2 exact but for one NaN; both's worse output (4e-3) counts
    assert list(j.details) == ["both_error"] and j.details["both_error"] == pytest.approx(4e-3, rel=1e-3)
    wrong = task.judge(PARAMS, 5, off_by(honest(task, PARAMS, 5), "out", 1.02))
    assert not wrong.correct and wrong.reason.startswith("out: relative error 2.0")


# ---- a ceiling, a default error chosen by the scenario, one rule held for every output (mutants that survived) ----


def test_a_ceiling_caps_the_bound_a_loose_baseline_would_set(folder):
    attention_like(folder, ("sanity = 4.0", "sanity = 4.0\nceiling = 5e-4"))
    task = folder_task(load_spec(folder))
    honest_j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    assert honest_j.correct and honest_j.details["vendor"] == "good"  # 2 x 1e-3 + 1e-4 uncapped, 5e-4 capped
    assert honest_j.tolerance == 5e-4
    outs = honest(task, PARAMS, 5)
    outs["out"] = outs["out"] * np.float32(1.001)  # 1e-3: inside the uncapped bound, beyond the ceiling
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and j.reason.startswith("out: relative error 1.0") and "above tolerance 5.000e-04" in j.reason


def test_a_default_error_chosen_by_the_scenario_sets_the_bound_where_no_baseline_is_usable(folder):
    attention_like(
        folder,
        ('["refuser", "noisy", "good"]', '["refuser", "noisy"]'),
        ("default_error = 1e-3", 'default_error = { by = "scale", "0.5" = 1e-3, "2.0" = 1e-2 }'),
    )
    task = folder_task(load_spec(folder))
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))  # scale 0.5: its default error, 1e-3, and its floor, 1e-4
    assert j.details["vendor"] is None and j.tolerance == pytest.approx(2.0 * 1e-3 + 1e-4)


@pytest.mark.parametrize(
    "rule, held",
    [
        (UNIFORM + '\nmeasure = "once"', ("out", "out2")),  # measured on seed a, then held for every output
        (UNIFORM, ()),  # measured on each output judged: nothing held
        ("[tolerance]\nrel_l2 = 1e-3", ("out", "out2")),  # a fixed bound: the rule's own, given back
    ],
)
def test_one_rule_for_every_output_holds_them_all_when_measured_once_or_fixed(folder, rule, held):
    task = folder_task(load_spec(edited(folder, TWO_OUTPUTS, (UNIFORM, rule), BASELINES, reference=REFERENCE)))
    assert task.judging.held_outputs() == held
    j = task.judge(PARAMS, 6, honest(task, PARAMS, 6), tolerance=1e-12)  # seed b, given seed a's bound
    assert j.correct == (not held)  # a held bound of 1e-12 fails float32's rounding; a measured one passes


def test_baseline_outputs_computed_ahead_are_the_ones_a_bound_is_measured_on(folder):
    # The judge ahead (judge_ahead.py) computes a rule's baseline on seed a's inputs while the child runs and hands
    # its outputs over: the bound comes from those, and the baseline is not called again (here refuser, which
    # raises when called, gives outputs 2e-3 off: its error sets out's bound).
    task = folder_task(load_spec(attention_like(folder)))
    inputs = task.make_inputs(PARAMS, 5)
    ref = task.reference_outputs(PARAMS, inputs)
    ahead = {"refuser": {"out": (ref["out"] * 1.002).astype(np.float32)}}
    j = task.judging.judge_against(PARAMS, inputs, ref, honest(task, PARAMS, 5), first_baselines=ahead)
    assert j.correct and j.details["vendor"] == "refuser"
    assert j.details["vendor_error"] == pytest.approx(2e-3, rel=1e-3)
    assert j.tolerance == pytest.approx(2.0 * 2e-3 + 1e-4, rel=1e-5)


def test_one_measured_rule_uses_the_baseline_outputs_computed_ahead_for_every_output(folder):
    task = folder_task(load_spec(edited(folder, TWO_OUTPUTS, BASELINES, reference=REFERENCE)))
    inputs = task.make_inputs(PARAMS, 5)
    ref = task.reference_outputs(PARAMS, inputs)
    ahead = {"numpy": {name: (ref[name] * 1.001).astype(np.float32) for name in ("out", "out2")}}
    j = task.judging.judge_against(PARAMS, inputs, ref, honest(task, PARAMS, 5), first_baselines=ahead)
    assert j.correct and j.details["numpy_error"] == pytest.approx(1e-3, rel=1e-3)
    assert j.tolerance == pytest.approx(2.0 * 1e-3 + 1e-6, rel=1e-5)  # UNIFORM: 2 x numpy's own error + 1e-6
