"""What an imported problem is judged against (issue 38 item 5; docs/tasks.md, "What an imported problem is judged
against"), on KernelBench imports: a signed float input is scaled and shifted, so a kernel that copies it cannot
pass as its normalisation, and an input whose meaning scaling would break keeps its own distribution; the model's
weights are bound strictly (a missing or an extra one is refused); the task says so. The gpu-mode and
FlashInfer-Bench imports apply the same helpers (tests/harness/test_gpumode_flashinfer_import.py)."""

import pytest
import torch

from gpu_harness.imported_inputs import affine, strict_names
from gpu_harness.kernelbench import import_kernelbench
from gpu_harness.taskspec import load_spec

from .test_kernelbench_import import PROBLEMS, _copies, _make_inputs, _reference


def _rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_a_copy_cannot_pass_as_the_normalisation_of_an_imported_problems_input(tmp_path):
    done = import_kernelbench(PROBLEMS / "layer_norm_rows.py", parent=tmp_path)
    spec, ref = load_spec(done.folder), _reference(done.folder)
    assert ref.SCALED == ("x",) and done.plan.scaled == ["x"]
    for k, sc in enumerate(spec.scenarios):
        args = _make_inputs(spec, ref, sc.params, seed=k)
        x = args["x"]
        assert abs(float(x.mean())) > 0.4 or abs(float(x.std()) - 1) > 0.3, (sc.id, float(x.mean()), float(x.std()))
        want = ref.reference(**_copies(spec, args))["out"]
        # a standard normal row copied is within about 1e-2 of its LayerNorm; scaled and shifted, far from it
        assert _rel_l2(x, want) > 10 * spec.tolerance.ceiling, sc.id


def test_scale_and_shift_follow_the_seed_and_differ_per_input_and_scenario():
    assert affine(7, "x", {"n": 4}) == affine(7, "x", {"n": 4})
    draws = {affine(seed, name, {"n": n}) for seed in (1, 2) for name in ("x", "y") for n in (4, 8)}
    assert len(draws) == 8
    for scale, shift in draws:
        assert (0.35 <= scale <= 0.71 or 1.41 <= scale <= 2.83) and 0.5 <= abs(shift) <= 2.0


def test_an_input_whose_meaning_scaling_would_break_keeps_the_problems_distribution(tmp_path):
    done = import_kernelbench(PROBLEMS / "domain_bound_inputs.py", parent=tmp_path)
    ref = _reference(done.folder)
    assert ref.SCALED == () and done.plan.scaled == []  # x: sqrt(x + 4) turns NaN; p: never negative
    assert any("get_inputs()[0] not scaled and shifted" in n for n in done.plan.notes), done.plan.notes


def test_an_imported_tasks_weights_are_bound_strictly(tmp_path):
    done = import_kernelbench(PROBLEMS / "conv_bias_relu.py", parent=tmp_path)
    spec = load_spec(done.folder)
    args = _copies(spec, _make_inputs(spec, _reference(done.folder), spec.scenarios[0].params, seed=1))

    missing = _reference(done.folder)  # a table that forgets a weight: the model would keep its own conv.bias
    missing.WEIGHTS = {k: v for k, v in missing.WEIGHTS.items() if v != "conv.bias"}
    with pytest.raises(ValueError, match=r"missing conv\.bias \(compared strictly"):
        missing.reference(**args)

    extra = _reference(done.folder)  # a weight the model does not have
    extra.WEIGHTS = {**extra.WEIGHTS, "ghost": "conv.ghost"}
    extra.ARGS = (*extra.ARGS, "ghost")
    with pytest.raises(ValueError, match=r"extra conv\.ghost"):
        extra.reference(**args, ghost=args["conv_bias"])

    with pytest.raises(ValueError, match=r"the call's arguments against the task's: extra stray"):
        _reference(done.folder).reference(**args, stray=args["conv_bias"])
    given = dict(args)
    del given["conv_weight"]
    with pytest.raises(ValueError, match=r"missing conv_weight"):
        _reference(done.folder).reference(**given)


def test_strict_names_says_what_is_missing_and_what_is_extra():
    strict_names(["a", "b"], ["b", "a"], "x")
    with pytest.raises(ValueError, match=r"^w: missing c; extra d \(compared strictly"):
        strict_names(["a", "d"], ["a", "c"], "w")


def test_the_imported_task_states_its_defences(tmp_path):
    done = import_kernelbench(PROBLEMS / "elementwise_relu.py", parent=tmp_path)
    toml = (done.folder / "task.toml").read_text()
    assert "so a\n# copy cannot pass as a normalisation" in toml and "compared strictly" in toml
    assert "from the reference's own error against the problem in float64" in toml
