"""The generic cuda-sm90 task (gpu_harness/tasks/data_cuda.py) on machines without a GPU: its judge's side
(inputs from seeds, the reference, the tolerance rules, the output checks) runs on torch's CPU tensors with
device="cpu"; the child's side (the kernel, CUDA events, the device exchange) needs the H200 and is covered
by gpu_validation.py there."""

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from gpu_harness.build import build  # noqa: E402
from gpu_harness.tasks import TaskError, folder_task  # noqa: E402
from gpu_harness.tasks.cuda_device import DeviceOutputs, identical_tensors  # noqa: E402
from gpu_harness.taskscaffold import scaffold  # noqa: E402
from gpu_harness.taskspec import TaskSpecError, load_spec  # noqa: E402

from .conftest import needs_nvcc  # noqa: E402

PARAMS = {"rows": 7, "cols": 33, "scale": 0.5}


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_gpu", tmp_path, target="cuda-sm90")


def task_of(folder, **edits):
    """The folder's task after replacing text in task.toml (old -> new)."""
    path = folder / "task.toml"
    text = path.read_text()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    return folder_task(load_spec(folder), device="cpu")


def honest(task, params, seed):
    """What a correct kernel writes: the reference, rounded to the outputs' dtype."""
    inputs = task.make_inputs(params, seed)
    ref = task.reference_outputs(params, inputs)
    outs = task.new_outputs(params)
    for name, t in outs.items():
        t.copy_(ref[name].to(t.dtype))
    return outs


def test_the_scaffold_for_cuda_is_a_torch_task_with_a_cu_stub(folder):
    task = folder_task(load_spec(folder), device="cpu")
    assert task.target == "cuda-sm90" and task.language == "cuda" and task.needs_gpu
    assert task.starting_kernel.name == "kernel.cu"
    assert task.default_baselines == ("torch",)


def test_inputs_are_a_function_of_the_seed_alone(folder):
    task = folder_task(load_spec(folder), device="cpu")
    a, again, other = (task.make_inputs(PARAMS, s) for s in (11, 11, 12))
    assert set(a) == {"x", "y"} and a["x"].shape == (7, 33) and a["x"].dtype == torch.float32
    assert identical_tensors(a["x"], again["x"]) and identical_tensors(a["y"], again["y"])
    assert not torch.equal(a["x"], other["x"])
    assert float(a["y"].min()) >= -1.0 and float(a["y"].max()) <= 1.0  # uniform in [-1, 1)


def test_outputs_start_poisoned(folder):
    task = task_of(folder)
    out = task.new_outputs(PARAMS)["out"]
    assert out.shape == (7, 33) and bool(out.isnan().all())


def test_an_honest_output_passes_and_the_tolerance_comes_from_the_torch_baseline(folder):
    task = task_of(folder)
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    assert j.correct, j.reason
    assert "torch_error" in j.details and j.tolerance == pytest.approx(2.0 * j.details["torch_error"] + 1e-6)


def test_an_unwritten_element_fails_as_poison(folder):
    task = task_of(folder)
    outs = honest(task, PARAMS, 5)
    outs["out"][3, 4] = float("nan")
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and "NaN/Inf where the reference is finite" in j.reason


def test_an_output_of_another_seed_fails(folder):
    task = task_of(folder)
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 6))
    assert not j.correct and "above tolerance" in j.reason


def test_a_precision_cut_is_above_tolerance(folder):
    task = task_of(folder)
    outs = honest(task, PARAMS, 5)
    outs["out"].copy_(outs["out"].to(torch.bfloat16).float())  # 8 bits of mantissa instead of 24
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and "above tolerance" in j.reason


def test_a_wrong_dtype_or_shape_is_named(folder):
    task = task_of(folder)
    j = task.judge(PARAMS, 5, {"out": honest(task, PARAMS, 5)["out"].double()})
    assert not j.correct and "float64" in j.reason and "float32" in j.reason
    j = task.judge(PARAMS, 5, {"out": torch.zeros(7, 32)})
    assert not j.correct and "(7, 32)" in j.reason
    j = task.judge(PARAMS, 5, {})
    assert not j.correct and "missing" in j.reason


def test_bfloat16_outputs_are_judged_against_the_float64_reference(folder):
    task = task_of(folder, **{'dtype = "float32"\nshape = ["rows", "cols"]\n\n[[args]]\nname = "scale"': (
        'dtype = "bfloat16"\nshape = ["rows", "cols"]\n\n[[args]]\nname = "scale"')})  # fmt: skip
    assert task.abi.startswith('extern "C" int kseek_demo_gpu(const float* x, const float* y, __nv_bfloat16* out')
    outs = honest(task, PARAMS, 3)
    assert outs["out"].dtype == torch.bfloat16
    j = task.judge(PARAMS, 3, outs)
    assert j.correct, j.reason


def test_the_allclose_rule_names_the_worst_element(folder):
    task = task_of(folder, **{'baseline = "torch"\nfactor = 2.0\nfloor = 1e-6': "atol = 1e-3\nrtol = 1e-3"})
    outs = honest(task, PARAMS, 1)
    assert task.judge(PARAMS, 1, outs).correct
    outs["out"][0, 0] += 0.5
    j = task.judge(PARAMS, 1, outs)
    assert not j.correct and "differ by more than" in j.reason and j.error > 100


def test_a_float32_reference_gets_float32_copies(folder):
    (folder / "reference.py").write_text(
        "def reference(x, y, scale, rows, cols):\n"
        "    assert x.dtype.is_floating_point and str(x.dtype) == 'torch.float32', x.dtype\n"
        "    return x * scale + y\n\n\n"
        "def torch_scale_add(x, y, out, scale, rows, cols):\n"
        "    out.copy_(x * scale + y)\n"
    )
    task = task_of(folder, **{'function = "reference"  #': 'function = "reference"\nprecision = "float32"  #'})
    assert task.judge(PARAMS, 2, honest(task, PARAMS, 2)).correct


def test_an_unknown_reference_precision_is_a_spec_problem(folder):
    with pytest.raises(TaskSpecError, match="reference.precision"):
        task_of(folder, **{'function = "reference"  #': 'function = "reference"\nprecision = "float8"  #'})


def test_a_reference_that_returns_numpy_or_raises_is_the_tasks_error(folder):
    task = task_of(folder)
    (folder / "reference.py").write_text(
        "def reference(x, y, scale, rows, cols):\n    return (x * scale + y).numpy()\n\n\n"
        "def torch_scale_add(x, y, out, scale, rows, cols):\n    out.copy_(x)\n"
    )
    with pytest.raises(TaskError, match="not a torch tensor"):
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 1))
    task = task_of(folder)
    (folder / "reference.py").write_text("def reference(x, y, scale, rows, cols):\n    raise RuntimeError('broken')\n")
    with pytest.raises(TaskError, match=r"reference raised .*broken \(reference.py, line 2\)"):
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 1))


def test_an_input_made_by_a_function_gets_a_torch_generator(folder):
    (folder / "reference.py").write_text(
        "import torch\n\n\n"
        "def make_x(generator, shape, params):\n"
        "    assert isinstance(generator, torch.Generator)\n"
        "    return torch.rand(shape, generator=generator, device=generator.device) + 10.0\n\n\n"
        "def reference(x, y, scale, rows, cols):\n    return x * scale + y\n\n\n"
        "def torch_scale_add(x, y, out, scale, rows, cols):\n    out.copy_(x * scale + y)\n"
    )
    task = task_of(folder, **{'init = { dist = "normal", mean = 0.0, std = 1.0 }': 'init = { function = "make_x" }'})
    x = task.make_inputs(PARAMS, 4)["x"]
    assert float(x.min()) >= 10.0 and x.dtype == torch.float32
    assert identical_tensors(x, task.make_inputs(PARAMS, 4)["x"])


def test_a_function_that_makes_the_wrong_shape_is_the_tasks_error(folder):
    (folder / "reference.py").write_text(
        "import torch\n\n\ndef make_x(generator, shape, params):\n    return torch.zeros(3)\n\n\n"
        "def reference(x, y, scale, rows, cols):\n    return x\n"
    )
    task = task_of(folder, **{'init = { dist = "normal", mean = 0.0, std = 1.0 }': 'init = { function = "make_x" }'})
    with pytest.raises(TaskError, match=r"make_x made input x as shape \(3,\)"):
        task.make_inputs(PARAMS, 4)


def test_integer_outputs_are_poisoned_with_an_extreme():
    from gpu_harness.tasks.data_cuda import CudaDataTask

    outs = {"i": torch.zeros(3, dtype=torch.int32), "u": torch.zeros(3, dtype=torch.uint8)}
    CudaDataTask.poison(None, outs)
    assert outs["i"].tolist() == [-(2**31)] * 3 and outs["u"].tolist() == [255] * 3


def test_identical_compares_bits():
    a = torch.tensor([0.0, 1.0])
    assert identical_tensors(a, a.clone())
    assert not identical_tensors(a, torch.tensor([-0.0, 1.0]))  # equal as numbers, not as bits
    assert not identical_tensors(a, a.double())


def test_device_outputs_pack_each_output_on_an_aligned_boundary():
    layout = DeviceOutputs(
        lambda p: [("o", torch.bfloat16, (p["n"], 3)), ("lse", torch.float32, (p["n"],))], ("o", "lse")
    )
    placed = layout._placed({"n": 5})
    assert [(name, offset, nbytes) for name, _, _, offset, nbytes in placed] == [("o", 0, 30), ("lse", 256, 20)]
    assert layout.nbytes({"n": 5}) == 276


def test_task_check_runs_the_torch_reference_on_the_cpu(folder):
    r = subprocess.run(
        [sys.executable, "-m", "gpu_harness", "task", "check", str(folder)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "cuda-sm90" in r.stdout and "ran on r1_c1_s2.0 (cpu)" in r.stdout
    text = (folder / "reference.py").read_text()  # the baseline kept: a function task.toml names must be there
    (folder / "reference.py").write_text(text.replace("return x * scale + y", "return x[:, :0]", 1))
    r = subprocess.run(
        [sys.executable, "-m", "gpu_harness", "task", "check", str(folder)], capture_output=True, text=True
    )
    assert r.returncode == 2 and "task error" in r.stderr and "shape (1, 0), the ABI says (1, 1)" in r.stderr


@needs_nvcc
def test_the_cuda_stub_builds_and_passes_the_dependency_checks(folder):
    b = build(folder / "kernel.cu", "cuda")
    assert b.ok, b.reason


def test_the_baseline_rule_measures_the_baseline_on_each_judged_outputs_own_inputs(folder):
    """Seed b and timed calls are judged against the baseline's error on their own inputs, not the bound seed a's
    inputs gave (docs/tasks.md: "on the same inputs")."""
    task = task_of(folder)
    j = task.judge(PARAMS, 8, honest(task, PARAMS, 8), tolerance=1e-12, spot_check=True)
    assert j.correct, j.reason
    assert j.tolerance == pytest.approx(2.0 * j.details["torch_error"] + 1e-6)


def test_a_fixed_bound_is_kept_for_later_judgements(folder):
    task = task_of(folder, **{'baseline = "torch"\nfactor = 2.0\nfloor = 1e-6': "rel_l2 = 1e-3"})
    assert task.judge(PARAMS, 8, honest(task, PARAMS, 8)).tolerance == 1e-3
    assert task.judge(PARAMS, 8, honest(task, PARAMS, 8), tolerance=2e-3).tolerance == 2e-3
