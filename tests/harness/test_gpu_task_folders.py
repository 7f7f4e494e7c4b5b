"""The built-in GPU task folders (softmax_rows, rmsnorm, gemm_bias_gelu), checked without a GPU: each spec loads,
its kernels declare the ABI the spec generates, and each reference.py runs on small CPU torch tensors, where the
reference, the eager and torch.compile baselines agree, and the tolerance rule passes a correct bf16 computation
while failing a sloppy one. The kernels' builds and the static cheats are in test_compile_checks.py; the
run-time cheats need the H200 (`python -m gpu_harness task cheats <task>`)."""

import importlib.util
import math
import re
import shutil
from pathlib import Path

import pytest

from gpu_harness.taskspec import load_spec
from gpu_harness.verdict import compare_numpy

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
GPU_TASKS = ("softmax_rows", "rmsnorm", "gemm_bias_gelu")
TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
CPU_ELEMENTS = 1_100_000  # scenarios small enough for float64 references on this machine's CPU
CPU_FLOPS = 6e8


def spec_of(task):
    return load_spec(REPO / "tasks" / task)


def module_of(spec):
    mod_spec = importlib.util.spec_from_file_location(f"kseek_test_{spec.name}_reference", spec.reference_path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


def small_scenarios(spec):
    def elements(sc):
        return sum(math.prod(spec.shape(a, sc.params)) for a in spec.inputs)

    return [sc for sc in spec.scenarios if elements(sc) <= CPU_ELEMENTS and spec.flops(sc.params) <= CPU_FLOPS]


def make_inputs(spec, module, params, seed):
    """Inputs as the spec describes them, made on the CPU from a torch generator (the judge makes its own)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    out = {}
    for a in spec.inputs:
        shape, dtype, init = spec.shape(a, params), TORCH_DTYPES[a.dtype], a.init
        if init.dist == "normal":
            x = torch.randn(shape, generator=gen, dtype=torch.float32) * init.b + init.a
        elif init.dist == "function":
            x = getattr(module, init.function)(gen, shape, dict(params))
            assert tuple(x.shape) == shape and x.is_floating_point(), (init.function, x.shape, x.dtype)
        else:
            raise AssertionError(f"{a.name}: a distribution this test does not make ({init.dist})")
        out[a.name] = x.to(dtype).contiguous()
    return out


def scalars(spec, params):
    return {a.name: (int if a.dtype.startswith("int") else float)(a.value(params)) for a in spec.scalars}


def reference_outputs(spec, module, params, inputs):
    copies = {n: x.to(torch.float64) for n, x in inputs.items()}
    got = getattr(module, spec.reference_function)(**copies, **scalars(spec, params))
    outs = spec.outputs
    got = [got[o.name] for o in outs] if isinstance(got, dict) else (list(got) if isinstance(got, tuple) else [got])
    assert len(got) == len(outs)
    return {o.name: g for o, g in zip(outs, got, strict=True)}


def run_baseline(spec, module, name, params, inputs):
    outs = {o.name: torch.full(spec.shape(o, params), math.nan, dtype=TORCH_DTYPES[o.dtype]) for o in spec.outputs}
    got = getattr(module, spec.baselines[name].function)(**inputs, **outs, **scalars(spec, params))
    # a baseline writes the outputs in place or returns them (F.rms_norm, QuACK and cuBLASLt return their own)
    return outs if got is None else {spec.outputs[0].name: got}


def error(out, ref):
    """The harness's own measure: relative L2 error, NaN/Inf counted apart."""
    c = compare_numpy("out", out.to(torch.float64).numpy(), ref.to(torch.float64).numpy())
    assert c.bad_nonfinite == 0, f"{c.bad_nonfinite} NaN/Inf where the reference is finite"
    return c.rel_error


def tolerance(spec, eager_error):
    rule = spec.tolerance
    return rule.factor * eager_error + rule.floor


def one_output(outs):
    (out,) = outs.values()
    return out


# ---- the specs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", GPU_TASKS)
def test_the_spec_loads_with_stable_ids_quick_and_full_sets_and_odd_sizes(task):
    spec = spec_of(task)
    assert spec.target.name == "cuda-sm90" and spec.description
    ids = [sc.id for sc in spec.scenarios]
    assert 15 <= len(ids) <= 30 and len(set(ids)) == len(ids)
    assert 4 <= len(spec.quick_ids) <= 6 and set(spec.quick_ids) <= set(ids)
    sizes = {v for sc in spec.scenarios for v in sc.params.values()}
    assert {v for v in sizes if v > 64 and v % 2} and {v for v in sizes if v >= 4096 and v % 2 == 0}
    for sc in spec.scenarios:
        assert spec.flops(sc.params) > 0 and spec.bytes(sc.params) > 0
        assert all(math.prod(spec.shape(a, sc.params)) < 2**31 for a in spec.args if a.is_tensor)
    assert all(a.dtype == "bfloat16" for a in spec.args if a.is_tensor)
    assert spec.tolerance.rule == "baseline" and spec.tolerance.baseline == "eager"
    assert {"eager", "compile", "naive"} <= set(spec.default_baselines)
    assert spec.baselines["compile"].warm and spec.baselines["naive"].kernel == spec.starting_kernel
    # the goal is the fastest library on each scenario (issue 35), and every library is timed by default
    assert spec.goal_baseline == "best_library" and spec.cheats == REPO / "tasks" / task / "cheats"
    assert spec.libraries and set(spec.libraries) <= set(spec.default_baselines) and "naive" not in spec.libraries


def _declared(source: str, symbol: str) -> str:
    m = re.search(r'extern "C" int ' + symbol + r"\(([^)]*)\)\s*\{", source)
    assert m, f"no definition of {symbol}"
    return " ".join(m.group(1).split())


@pytest.mark.parametrize("task", GPU_TASKS)
def test_the_starting_kernel_and_every_cheat_define_the_abi_the_spec_generates(task):
    spec = spec_of(task)
    want = " ".join(spec.abi().split("(", 1)[1].rsplit(")", 1)[0].split())
    cheats = sorted(spec.cheats.glob("*.cu"))
    assert len(cheats) >= 11
    for path in [spec.starting_kernel, *cheats]:
        text = path.read_text()
        assert _declared(text, spec.symbol) == want, path.name
        if path.parent == spec.cheats:
            assert re.search(r"^// expect: \S", text, re.M), f"{path.name} has no '// expect: <reason>' line"


def test_the_gemm_names_its_layout_and_its_gelu():
    spec = spec_of("gemm_bias_gelu")
    assert "W[n,k]^T" in spec.description and "erf" in spec.description
    assert [a.shape for a in spec.inputs] == [("m", "k"), ("n", "k"), ("n",)]


# ---- the references on the CPU -----------------------------------------------------------------------------


@pytest.mark.parametrize("task", GPU_TASKS)
def test_reference_and_eager_baseline_agree_in_the_abis_shapes(task):
    spec = spec_of(task)
    module = module_of(spec)
    scenarios = small_scenarios(spec)
    assert len(scenarios) >= 3
    for sc in scenarios:
        inputs = make_inputs(spec, module, sc.params, seed=1)
        ref = reference_outputs(spec, module, sc.params, inputs)
        for o in spec.outputs:
            assert tuple(ref[o.name].shape) == spec.shape(o, sc.params) and ref[o.name].dtype == torch.float64
        out = run_baseline(spec, module, "eager", sc.params, inputs)
        for o in spec.outputs:
            assert out[o.name].dtype == TORCH_DTYPES[o.dtype]
            # bf16 outputs: one or two roundings (~1e-3 each), never more, and below the default error
            assert error(out[o.name], ref[o.name]) <= spec.tolerance.default_error, (sc.id, o.name)


@pytest.mark.parametrize("task", GPU_TASKS)
def test_the_reference_depends_on_every_input(task):
    """A reference that ignored an input would let a kernel ignore it too."""
    spec = spec_of(task)
    module = module_of(spec)
    sc = next(s for s in small_scenarios(spec) if min(v for v in s.params.values()) >= 5)
    inputs = make_inputs(spec, module, sc.params, seed=2)
    ref = one_output(reference_outputs(spec, module, sc.params, inputs))
    for name in inputs:
        changed = dict(inputs, **{name: make_inputs(spec, module, sc.params, seed=3)[name]})
        assert error(one_output(reference_outputs(spec, module, sc.params, changed)), ref) > 0.05, name


@pytest.mark.skipif(shutil.which("g++") is None, reason="torch.compile's CPU backend needs a C++ compiler")
@pytest.mark.parametrize("task", GPU_TASKS)
def test_the_compile_baseline_agrees_with_the_reference_on_the_cpu(task):
    spec = spec_of(task)
    module = module_of(spec)
    for sc in small_scenarios(spec)[:2]:  # compiles once per shape: two shapes also cover the recompile
        inputs = make_inputs(spec, module, sc.params, seed=4)
        ref = one_output(reference_outputs(spec, module, sc.params, inputs))
        eager = error(one_output(run_baseline(spec, module, "eager", sc.params, inputs)), ref)
        compiled = error(one_output(run_baseline(spec, module, "compile", sc.params, inputs)), ref)
        assert compiled <= tolerance(spec, eager), (sc.id, compiled, eager)


def test_the_functional_rmsnorm_baseline_agrees_too():
    spec = spec_of("rmsnorm")
    module = module_of(spec)
    sc = next(s for s in spec.scenarios if s.id == "r333_h3333")
    inputs = make_inputs(spec, module, sc.params, seed=5)
    ref = one_output(reference_outputs(spec, module, sc.params, inputs))
    assert error(one_output(run_baseline(spec, module, "functional", sc.params, inputs)), ref) < 3e-3


# ---- the tolerance rule: a correct bf16 kernel passes, a sloppy one fails --------------------------------------


def _cut(x):
    """bf16 with 3 of its 7 mantissa bits kept: what tasks/*/cheats/precision_cut.cu does to an input."""
    return (x.view(torch.int16) & -16).view(torch.bfloat16)


def _truncate(y32):
    """float32 to bf16 by dropping the low bits instead of rounding."""
    return (y32.contiguous().view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)


def _fused(task, inputs, params):
    """A correct kernel's arithmetic: float32 throughout, one rounding to bf16 (returned in float32)."""
    f = {n: x.float() for n, x in inputs.items()}
    if task == "softmax_rows":
        return torch.softmax(f["x"], dim=-1)
    if task == "rmsnorm":
        x, eps = f["x"], scalars(spec_of(task), params)["eps"]
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * f["weight"]
    return torch.nn.functional.gelu(f["a"] @ f["w"].T + f["bias"])


def _first_input(task):
    return {"softmax_rows": "x", "rmsnorm": "x", "gemm_bias_gelu": "a"}[task]


@pytest.mark.parametrize("task", GPU_TASKS)
def test_a_correct_kernel_passes_and_a_precision_cut_fails(task):
    spec = spec_of(task)
    module = module_of(spec)
    for sc in small_scenarios(spec):
        if math.prod(spec.shape(spec.outputs[0], sc.params)) < 200:  # too few elements for statistics
            continue
        inputs = make_inputs(spec, module, sc.params, seed=6)
        ref = one_output(reference_outputs(spec, module, sc.params, inputs))
        tol = tolerance(spec, error(one_output(run_baseline(spec, module, "eager", sc.params, inputs)), ref))
        assert error(_fused(task, inputs, sc.params).to(torch.bfloat16), ref) <= tol, sc.id
        cut = dict(inputs, **{_first_input(task): _cut(inputs[_first_input(task)])})
        assert error(_fused(task, cut, sc.params).to(torch.bfloat16), ref) > 3 * tol, sc.id


def test_softmax_truncating_to_bf16_instead_of_rounding_fails():
    spec = spec_of("softmax_rows")
    module = module_of(spec)
    sc = next(s for s in spec.scenarios if s.id == "r1000_c1000")
    inputs = make_inputs(spec, module, sc.params, seed=7)
    ref = one_output(reference_outputs(spec, module, sc.params, inputs))
    tol = tolerance(spec, error(one_output(run_baseline(spec, module, "eager", sc.params, inputs)), ref))
    assert error(_truncate(_fused("softmax_rows", inputs, sc.params)), ref) > tol


def test_the_tanh_gelu_is_within_the_gemms_tolerance():
    """docs/tasks.md says so: the tanh approximation is 2e-4 from erf's, below one bf16 rounding."""
    spec = spec_of("gemm_bias_gelu")
    module = module_of(spec)
    sc = next(s for s in spec.scenarios if s.id == "m333_n777_k999")
    inputs = make_inputs(spec, module, sc.params, seed=8)
    ref = one_output(reference_outputs(spec, module, sc.params, inputs))
    tol = tolerance(spec, error(one_output(run_baseline(spec, module, "eager", sc.params, inputs)), ref))
    f = {n: x.float() for n, x in inputs.items()}
    tanh = torch.nn.functional.gelu(f["a"] @ f["w"].T + f["bias"], approximate="tanh")
    assert error(tanh.to(torch.bfloat16), ref) <= tol


@pytest.mark.parametrize(
    ("task", "sid"), [("softmax_rows", "r1_c4097"), ("softmax_rows", "r3_c7"), ("gemm_bias_gelu", "m1_n1_k1")]
)
def test_a_correct_kernel_passes_on_every_seed_of_a_scenario_with_few_elements(task, sid):
    """On the H200 a correct softmax failed r1_c4097's timed-call check (3.3e-3 against the 2.2e-3 that seed a's
    inputs set): with few elements carrying the norm, the error moves with the inputs. The judge measures the
    baseline on each output's own inputs; a correct kernel passes whatever the seed."""
    from gpu_harness.tasks import folder_task

    judge = folder_task(spec_of(task), device="cpu")
    params = next(s for s in judge.scenarios() if s.id == sid).params
    first = judge.judge(params, 0, {judge.output_names[0]: _honest(judge, params, 0)})
    for seed in range(1, 13):
        j = judge.judge(params, seed, {judge.output_names[0]: _honest(judge, params, seed)}, tolerance=first.tolerance)
        assert j.correct, (seed, j.reason)


def _honest(judge, params, seed):
    inputs = judge.make_inputs(params, seed)
    return _fused(judge.name, inputs, params).to(torch.bfloat16)
