"""`task import-kernelbench` (gpu_harness/kernelbench.py): KernelBench-format problems written for these tests
(tests/harness/kernelbench_problems/) become cuda-sm90 task folders that load_spec accepts, whose reference.py,
on inputs made per the spec (CPU torch), equals the problem's own Model with the same weights loaded, whose
eager baseline writes the outputs; the problems it cannot import are refused naming why, leaving nothing."""

import importlib.util
import inspect
import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpu_harness.kernelbench import KernelBenchImportError, default_name, import_kernelbench
from gpu_harness.taskspec import TaskSpecError, load_spec

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = Path(__file__).resolve().parent / "kernelbench_problems"
IMPORTABLE = [
    "elementwise_relu",
    "sum_over_dim",
    "matmul_two_inputs",
    "conv_bias_relu",
    "linear_scale_gelu",
    "batchnorm_buffers",
    "item_in_forward",
    "reshape_by_four",
    "size_named_case",
]
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "uint8": torch.uint8}
_fresh = itertools.count()


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"kbtest_{name}_{next(_fresh)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """Each importable problem imported once (the probe is a child process that imports torch)."""
    parent = tmp_path_factory.mktemp("kbtasks")
    cache = {}

    def get(problem):
        if problem not in cache:
            cache[problem] = import_kernelbench(PROBLEMS / f"{problem}.py", parent=parent)
        return cache[problem]

    return get


def _make_inputs(spec, ref, params, seed):
    """Every input as the spec says (its init function, a CPU generator), and every scalar's value."""
    args = {}
    for i, a in enumerate(spec.args):
        if a.kind == "input":
            gen = torch.Generator("cpu").manual_seed(seed * 1000 + i)
            args[a.name] = getattr(ref, a.init.function)(gen, spec.shape(a, params), params)
        elif a.kind == "scalar":
            v = a.value(params)
            args[a.name] = int(v) if a.dtype.startswith("int") else float(v)
    return args


def _copies(spec, args):
    """What the harness gives the reference: float tensors as float32 copies ([reference] precision)."""
    assert spec.reference_precision == "float32"
    return {n: (v.to(torch.float32) if isinstance(v, torch.Tensor) and v.is_floating_point() else v) for n, v in
            args.items()}  # fmt: skip


def _original_outputs(problem: str, spec, args) -> tuple:
    """The problem's own Model, built from get_init_inputs(), with the task's weight inputs loaded by their
    dotted names (conv.weight <- conv_weight), run on the task's inputs in forward's order."""
    module = _load(PROBLEMS / f"{problem}.py", problem)
    model = module.Model(*module.get_init_inputs())
    state = {k: args[k.replace(".", "_")] for k in model.state_dict()}
    model.load_state_dict(state)
    names = list(inspect.signature(module.Model.forward).parameters)[1:]
    bools = {a.name for a in spec.inputs if a.dtype == "uint8"}
    forward = [args[n].bool() if n in bools else args[n] for n in names if n in args]
    with torch.no_grad():
        out = model(*forward)
    out = (out,) if isinstance(out, torch.Tensor) else tuple(out)
    return tuple(o.to(torch.uint8) if o.dtype == torch.bool else o for o in out)


def _reference(folder: Path):
    return _load(folder / "reference.py", folder.name)


@pytest.mark.parametrize("problem", IMPORTABLE)
def test_an_imported_problem_is_a_valid_cuda_task_whose_reference_is_the_model(tasks, problem):
    done = tasks(problem)
    spec = load_spec(done.folder)  # no problems: it would raise TaskSpecError
    assert spec.target.name == "cuda-sm90" and spec.starting_kernel is None
    assert spec.symbol == f"kseek_{done.folder.name}" and spec.reference_precision == "float32"
    assert (done.folder / "problem.py").read_bytes() == (PROBLEMS / f"{problem}.py").read_bytes()
    assert spec.tolerance.rule == "baseline" and spec.tolerance.baselines == ("float64", "eager")
    assert spec.tolerance.ceiling == 1e-2 and spec.baselines["float64"].may_refuse
    assert spec.baselines["eager"].function == "eager" and not spec.baselines["eager"].warm
    assert spec.baselines["compiled"].function == "compiled" and spec.baselines["compiled"].warm
    assert (spec.goal_baseline, spec.goal_speedup) == ("best_library", 1.0)  # the faster of eager and compile
    assert spec.baselines["eager"].library and spec.baselines["compiled"].library
    assert spec.quick_ids and set(spec.quick_ids) <= {sc.id for sc in spec.scenarios}
    ref = _reference(done.folder)
    for k, sc in enumerate(spec.scenarios):
        args = _make_inputs(spec, ref, sc.params, seed=k)
        for a in spec.inputs:
            assert tuple(args[a.name].shape) == spec.shape(a, sc.params), (sc.id, a.name)
            assert args[a.name].dtype == TORCH_DTYPES[a.dtype], (sc.id, a.name)
        got = ref.reference(**_copies(spec, args))
        want = _original_outputs(problem, spec, _copies(spec, args))
        assert list(got) == [o.name for o in spec.outputs]
        for o, w in zip(spec.outputs, want, strict=True):
            assert tuple(got[o.name].shape) == spec.shape(o, sc.params) == tuple(w.shape), (sc.id, o.name)
            torch.testing.assert_close(got[o.name], w, rtol=0, atol=0)
        outs = {o.name: torch.full(spec.shape(o, sc.params), -7).to(TORCH_DTYPES[o.dtype]) for o in spec.outputs}
        for o in outs.values():
            if o.is_floating_point():
                o.fill_(math.nan)
        ref.eager(**args, **outs)
        for o, w in zip(spec.outputs, want, strict=True):
            torch.testing.assert_close(outs[o.name], w.to(outs[o.name].dtype), rtol=1e-6, atol=1e-6)
        ref.float64(**args, **outs)  # the model in float64, rounded to the outputs' dtype: close to float32's
        for o, w in zip(spec.outputs, want, strict=True):
            torch.testing.assert_close(outs[o.name], w.to(outs[o.name].dtype), rtol=1e-4, atol=1e-5)


def test_inputs_are_made_again_bit_for_bit_from_the_same_seed_and_differ_on_another(tasks):
    done = tasks("conv_bias_relu")
    spec, ref = load_spec(done.folder), _reference(done.folder)
    params = spec.scenarios[0].params
    a, b, c = (_make_inputs(spec, ref, params, seed) for seed in (3, 3, 4))
    for arg in spec.inputs:
        assert torch.equal(a[arg.name], b[arg.name]), arg.name
        assert not torch.equal(a[arg.name], c[arg.name]), arg.name


def test_weights_follow_the_models_own_initialisation(tasks):
    """conv.weight: PyTorch's default (kaiming uniform, bound 1/sqrt(fan_in)); the problem's own bias:
    torch.randn(bias_shape) * 0.02. Many draws pooled, so the statistics are tight."""
    done = tasks("conv_bias_relu")
    spec, ref = load_spec(done.folder), _reference(done.folder)
    params = spec.scenarios[0].params
    shapes = {a.name: spec.shape(a, params) for a in spec.inputs}
    weights = torch.cat([ref.make_conv_weight(torch.Generator().manual_seed(s), shapes["conv_weight"], params).ravel()
                         for s in range(40)])  # fmt: skip
    bound = 1 / math.sqrt(3 * 3 * 3)
    assert weights.abs().max() <= bound and weights.abs().max() > 0.95 * bound
    assert abs(weights.std().item() - bound / math.sqrt(3)) < 0.05 * bound
    bias = torch.cat([ref.make_bias(torch.Generator().manual_seed(s), shapes["bias"], params).ravel()
                      for s in range(200)])  # fmt: skip
    assert abs(bias.std().item() - 0.02) < 0.003 and abs(bias.mean().item()) < 0.003


def test_dimensions_are_named_after_the_problems_sizes_and_the_free_ones_scaled(tasks):
    spec = load_spec(tasks("conv_bias_relu").folder)
    shapes = {a.name: a.shape for a in spec.args if a.is_tensor}
    assert shapes == {
        "x": ("batch_size", "in_channels", "height", "width"),  # height == width == 12, told apart
        "bias": ("out_channels", 1, 1),
        "conv_weight": ("out_channels", "in_channels", "kernel_size", "kernel_size"),
        "conv_bias": ("out_channels",),
        "out": ("batch_size", "out_channels", "out_dim2", "out_dim3"),
    }
    assert spec.abi().startswith(
        'extern "C" int kseek_conv_bias_relu(const float* x, const float* bias, const float* conv_weight, '
        "const float* conv_bias, float* out, int64_t batch_size, int64_t in_channels, int64_t height"
    )
    cases = {sc.params["case"]: sc.params for sc in spec.scenarios}
    assert list(cases) == ["main", "half", "odd", "double"]
    assert [(p["batch_size"], p["height"], p["width"]) for p in cases.values()] == [
        (4, 12, 12), (2, 6, 6), (3, 9, 9), (8, 12, 12)]  # fmt: skip
    for p in cases.values():  # what no parameter depends on scales; the rest stays the problem's
        assert (p["in_channels"], p["out_channels"], p["kernel_size"]) == (3, 8, 3)
        assert p["out_dim2"] == p["height"] - 2 and p["out_dim3"] == p["width"] - 2
        assert p["kb_flops"] == 2 * p["batch_size"] * 8 * p["out_dim2"] * p["out_dim3"] * 3 * 3 * 3
    assert [sc.id for sc in spec.scenarios][0] == "main_batch_size4_height12_width12"
    assert "double" not in " ".join(spec.quick_ids) and len(spec.quick_ids) == 3


def test_equal_sizes_of_a_reduction_are_told_apart_and_the_kept_dimension_is_a_number(tasks):
    spec = load_spec(tasks("sum_over_dim").folder)
    assert {a.name: a.shape for a in spec.args if a.is_tensor} == {
        "x": ("batch_size", "rows", "cols"),
        "out": ("batch_size", 1, "cols"),
    }
    assert [a.name for a in spec.scalars] == ["batch_size", "rows", "cols"]  # reduce_dim is the model's own


def test_a_matmul_of_two_inputs_scales_every_size_and_counts_its_flops(tasks):
    spec = load_spec(tasks("matmul_two_inputs").folder)
    assert {a.name: a.shape for a in spec.args if a.is_tensor} == {"A": ("M", "K"), "B": ("K", "N"), "out": ("M", "N")}
    for sc in spec.scenarios:
        p = sc.params
        assert spec.flops(p) == 2 * p["M"] * p["N"] * p["K"]
    assert [(sc.params["M"], sc.params["K"], sc.params["N"]) for sc in spec.scenarios] == [
        (24, 40, 16), (12, 20, 8), (19, 31, 13), (48, 40, 16)]  # fmt: skip


def test_an_elementwise_problem_counts_one_operation_per_element(tasks):
    spec = load_spec(tasks("elementwise_relu").folder)
    for sc in spec.scenarios:
        assert spec.flops(sc.params) == sc.params["batch_size"] * sc.params["dim"]


def test_the_docs_goal_and_default_baselines_are_the_ones_an_import_writes(tasks):
    # docs/tasks.md once said `[goal] baseline = "eager"` where the import writes best_library
    spec = load_spec(tasks("elementwise_relu").folder)
    doc = " ".join((REPO / "docs" / "tasks.md").read_text().split())
    default = ", ".join(f'"{b}"' for b in spec.default_baselines)
    goal = f'`[goal] baseline = "{spec.goal_baseline}", speedup = {spec.goal_speedup}`'
    assert f"`[baselines] default = [{default}]`, {goal}" in doc


def test_a_keyword_only_argument_with_a_default_keeps_it_and_the_doc_says_so(tasks):
    # docs/tasks.md once said any keyword-only argument is refused; the probe refuses only one without a default
    spec = load_spec(tasks("keyword_only_with_default").folder)
    assert [a.name for a in spec.args if a.is_tensor] == ["x", "out"]
    doc = " ".join((REPO / "docs" / "tasks.md").read_text().split())
    assert "takes a keyword-only argument without a default" in doc


def test_scalar_inputs_are_fixed_scalars_and_buffers_are_inputs(tasks):
    done = tasks("linear_scale_gelu")
    spec = load_spec(done.folder)
    alpha = next(a for a in spec.args if a.name == "alpha")
    assert alpha.kind == "scalar" and alpha.dtype == "float64" and alpha.value({}) == 0.25
    assert [a.name for a in spec.inputs] == ["x", "linear_weight", "linear_bias", "shift"]
    assert "scale" not in {a.name for a in spec.args}  # a constructor argument: part of the model
    assert "0.5" in spec.description
    p = spec.scenarios[0].params
    assert spec.flops(p) == 2 * p["batch_size"] * 32 * 16


def test_bool_tensors_travel_as_uint8_and_int_buffers_keep_their_dtype(tasks):
    done = tasks("batchnorm_buffers")
    spec = load_spec(done.folder)
    kinds = {a.name: (a.kind, a.dtype, a.shape) for a in spec.args if a.is_tensor}
    assert kinds["mask"] == ("input", "uint8", ("batch_size", "features"))
    assert kinds["bn_num_batches_tracked"] == ("input", "int64", ())
    assert kinds["out1"] == ("output", "uint8", ("batch_size", "features"))
    assert any("running_mean" in n for n in done.plan.notes)


def test_a_model_the_meta_device_cannot_trace_keeps_only_its_main_scenario_and_says_so(tasks):
    done = tasks("item_in_forward")
    spec = load_spec(done.folder)
    assert [sc.params["case"] for sc in spec.scenarios] == ["main"] and spec.quick_ids == ("main",)
    assert {a.name: a.shape for a in spec.args if a.is_tensor} == {"x": ("batch_size", "dim"),
                                                                   "out": ("batch_size", "dim")}  # fmt: skip
    assert any("meta device" in n and "main scenario" in n for n in done.plan.notes)


def test_a_scaled_scenario_the_model_cannot_run_is_dropped_with_a_note(tasks):
    done = tasks("reshape_by_four")
    spec = load_spec(done.folder)
    assert [sc.params["case"] for sc in spec.scenarios] == ["main", "half", "double"]
    assert any(n.startswith("scenario odd (batch_size = 5, dim = 13) dropped: RuntimeError") for n in done.plan.notes)
    out = spec.outputs[0]
    assert out.shape == ("batch_size", "out_dim1")  # no size of the problem is dim / 4: a symbol of its own
    for sc in spec.scenarios:
        assert sc.params["out_dim1"] == sc.params["dim"] // 4


def test_names_that_clash_or_are_c_keywords_get_a_suffix(tasks):
    done = tasks("name_clashes")
    spec, ref = load_spec(done.folder), _reference(done.folder)
    assert [(a.name, a.kind) for a in spec.args] == [
        ("weight", "input"), ("weight_2", "input"), ("out", "output"), ("double_2", "scalar"), ("shift", "scalar"),
        ("batch_size", "scalar"), ("dim", "scalar")]  # fmt: skip
    shift = next(a for a in spec.args if a.name == "shift")
    assert shift.dtype == "int64" and shift.value({}) == 2
    params = spec.scenarios[0].params
    args = _make_inputs(spec, ref, params, seed=2)
    got = ref.reference(**_copies(spec, args))["out"]
    assert torch.equal(got, torch.roll(args["weight"] * args["weight_2"] * 1.5, 2, 1))


def test_names_that_are_cpp_keywords_python_allows_or_cuda_types_get_a_suffix_too():
    # a forward(self, true, nullptr) once imported as `const float* true, const float* nullptr`, whose stub did
    # not compile (task check failed on the importer's own folder)
    from gpu_harness.problem_import import c_name

    taken: set[str] = set()
    names = [c_name(n, taken) for n in ("true", "nullptr", "cudaStream_t", "from", "x")]
    assert names == ["true_2", "nullptr_2", "cudaStream_t_2", "from_2", "x"]


def test_a_size_named_like_the_importers_own_values_pushes_them_aside(tasks):
    spec = load_spec(tasks("size_named_case").folder)
    assert spec.inputs[0].shape == ("case", "kb_flops") and spec.flops.text == "kb_flops_2"
    main = spec.scenarios[0]
    assert main.id == "main_case6_kb_flops10" and main.params["case_2"] == "main"
    assert main.params["kb_flops_2"] == 60


def test_a_gpu_sized_problem_is_checked_on_cpu_at_reduced_sizes_kept_as_scenario_small(tasks):
    done = tasks("gpu_sized_softplus")  # level-1 sizes: a CPU run at them would need 12 GiB
    spec = load_spec(done.folder)
    main = spec.scenarios[0].params
    assert (main["batch_size"], main["dim"], main["kb_flops"]) == (4096, 393216, 4096 * 393216)
    assert [sc.params["case"] for sc in spec.scenarios] == ["main", "half", "odd", "double", "small"]
    small = spec.scenarios[-1]
    assert (small.params["batch_size"], small.params["dim"]) == (64, 6144) and small.id not in spec.quick_ids
    assert spec.smallest_scenario().id == small.id  # where `task check` runs the reference
    assert done.plan.notes == [
        "the data checks ran on CPU at batch_size = 64, dim = 6144 (the problem's sizes, reduced: scenario small)"
    ]


def test_a_scenario_beyond_a_tasks_size_is_dropped_with_a_note(tmp_path):
    done = import_kernelbench(PROBLEMS / "double_beyond_a_scenario.py", parent=tmp_path)  # 96 GiB; doubled 192
    assert [sc.params["case"] for sc in load_spec(done.folder).scenarios] == ["main", "half", "odd", "small"]
    assert "scenario double dropped: its tensors take 192 GiB, more than 128 GiB" in done.plan.notes


def test_the_compiled_baseline_writes_the_outputs(tasks):
    done = tasks("elementwise_relu")
    spec, ref = load_spec(done.folder), _reference(done.folder)
    for sc in spec.scenarios[:2]:  # a second shape: the same compiled model, fresh weights and inputs
        args = _make_inputs(spec, ref, sc.params, seed=1)
        out = torch.full(spec.shape(spec.outputs[0], sc.params), math.nan)
        ref.compiled(**args, out=out)
        assert torch.equal(out, torch.relu(args["x"]))


@pytest.mark.parametrize(
    "problem, says",
    [
        ("tuple_of_unknown_arity", "returns a tuple of unknown arity: 3 outputs at the problem's sizes"),
        ("list_of_unknown_arity", "returns a list of unknown arity"),
        ("data_dependent_shape", "data-dependent output shape"),
        ("raises_at_import", "raises_at_import.py fails to import: KeyError: 'batch_size' (line 7)"),
        ("no_get_inputs", "no_get_inputs.py defines no get_inputs"),
        ("dropout_training", "the forward is not deterministic"),
        ("keyword_only", "Model.forward has a keyword-only argument 'scale'"),
        ("string_input", "get_inputs()[1] is a str: only tensors, ints and floats"),
        ("forward_fails", "forward_fails.py: building the model or running its forward fails: RuntimeError: mat1"),
        ("returns_dict", "the forward returns a dict: only a tensor or a tuple/list of tensors"),
        ("complex_input", "get_inputs()[0] has dtype torch.complex64, which a task cannot hold"),
        (
            "beyond_a_scenario",
            "beyond_a_scenario.py: its tensors take 512 GiB at its sizes, more than a task's"
            " scenario may (128 GiB): make its sizes smaller",
        ),
        (
            "untraceable_beyond_a_scenario",
            "untraceable_beyond_a_scenario.py: its inputs and weights take 256 GiB at its sizes, more than a task's"
            " scenario may (128 GiB): make its sizes smaller",
        ),
    ],
)
def test_what_cannot_be_imported_is_refused_naming_why_and_leaves_nothing(tmp_path, problem, says):
    with pytest.raises(KernelBenchImportError) as e:
        import_kernelbench(PROBLEMS / f"{problem}.py", parent=tmp_path)
    assert says in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_a_problem_that_hangs_is_stopped_by_the_time_limit(tmp_path):
    with pytest.raises(KernelBenchImportError, match=r"hangs_at_import.py did not finish within 3 s"):
        import_kernelbench(PROBLEMS / "hangs_at_import.py", parent=tmp_path, timeout_s=3)
    assert list(tmp_path.iterdir()) == []


def test_default_names_are_task_names():
    assert default_name(Path("19_ReLU.py")) == "kb_19_relu"
    assert default_name(Path("Conv2d+ReLU.py")) == "conv2d_relu"
    assert default_name(Path("level2/56_Matmul_Sigmoid_Sum.py")) == "kb_56_matmul_sigmoid_sum"


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "gpu_harness", "task", "import-kernelbench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_cli_writes_the_folder_and_refuses_with_exit_2(tmp_path):
    ok = _cli(str(PROBLEMS / "matmul_two_inputs.py"), "--name", "kb_mm", "--dir", str(tmp_path))
    assert ok.returncode == 0, ok.stderr
    assert f"wrote {tmp_path / 'kb_mm'}/" in ok.stdout and "main, half, odd, double" in ok.stdout
    assert load_spec(tmp_path / "kb_mm").name == "kb_mm"
    again = _cli(str(PROBLEMS / "matmul_two_inputs.py"), "--name", "kb_mm", "--dir", str(tmp_path))
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = _cli(str(PROBLEMS / "data_dependent_shape.py"), "--dir", str(tmp_path))
    assert bad.returncode == 2 and "error: data-dependent output shape" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb_mm"]  # no half-written folder
    name = _cli(str(PROBLEMS / "matmul_two_inputs.py"), "--name", "Bad-Name", "--dir", str(tmp_path))
    assert name.returncode == 2 and "lowercase" in name.stderr
    missing = _cli(str(tmp_path / "nothing.py"), "--dir", str(tmp_path))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_reference_precision_is_checked(tmp_path):
    from gpu_harness.taskscaffold import scaffold

    folder = scaffold("demo_op", tmp_path)
    assert load_spec(folder).reference_precision == "float64"
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace('function = "reference"', 'function = "reference"\nprecision = "fp16"'))
    with pytest.raises(TaskSpecError, match=r"reference.precision: 'fp16': expected one of float64, float32"):
        load_spec(folder)
