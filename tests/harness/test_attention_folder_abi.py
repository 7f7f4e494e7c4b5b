"""attention_fwd's ABI and input recipe as its folder writes them (a dtype and a scalar chosen by the scenario's
`dtype`, `causal` mapped to 0/1, a stream argument, the commented declaration as abi_text, normal draws in the
tensor's own dtype): the folder task binds, calls and feeds a kernel exactly as the class task did (its
argtypes, its call, torch.randn in the dtype, q, k, v from one generator), on the CPU and, where there is one,
on the GPU's generator."""

import ctypes

import pytest

from gpu_harness.tasks.attention_fwd import attention_task
from gpu_harness.tasks.attention_fwd import scenario as _sc

from .test_attention_pinned import INPUT_CASES as PINNED_CASES

torch = pytest.importorskip("torch")

# the pinned cases, and sizes that are no multiple of 16: torch's CPU sampler draws a half type's tail otherwise
# than float32's (a float32 draw rounded would pass the pinned cases alone)
INPUT_CASES = [*PINNED_CASES, (("bf16", 1, 7, 9, 3, 1, 5, False), 99), (("fp16", 2, 3, 3, 1, 1, 7, True), 5)]
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
VP, CI = ctypes.c_void_p, ctypes.c_int


@pytest.fixture(scope="module", params=DEVICES)
def task(request):
    return attention_task(device=request.param)


def test_agents_are_shown_the_commented_declaration(task):
    assert task.abi.startswith('extern "C" int kseek_attention_fwd(\n    const void* q, const void* k, const void* v,')
    assert "int dtype,                                    // 0 = bf16, 1 = fp16" in task.abi
    assert task.abi.endswith(
        "cudaStream_t stream);                         // 0 on success; non-zero: configuration not supported"
    )
    assert "cudaStream_t stream" in task.spec.declaration()  # the stub kernel's, generated


@pytest.mark.parametrize(("shape", "seed"), INPUT_CASES)
def test_a_seed_makes_the_class_tasks_inputs_bit_for_bit(task, shape, seed):
    params = _sc(*shape).params
    mine = task.make_inputs(params, seed)
    g = torch.Generator(device=task.judge_device())
    g.manual_seed(seed)
    dt = torch.bfloat16 if params["dtype"] == "bf16" else torch.float16
    B, Sq, Sk, Hq, Hkv, D = (params[n] for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim"))
    shapes = {"q": (B, Sq, Hq, D), "k": (B, Sk, Hkv, D), "v": (B, Sk, Hkv, D)}
    assert list(mine) == ["q", "k", "v"]
    for name, want_shape in shapes.items():
        want = torch.randn(want_shape, generator=g, device=task.judge_device(), dtype=dt)
        assert mine[name].dtype == dt and torch.equal(mine[name].view(torch.int16), want.view(torch.int16)), name


@pytest.mark.parametrize(("shape", "seed"), INPUT_CASES)
def test_the_kernel_is_bound_and_called_with_the_class_tasks_arguments(task, shape, seed):
    params = _sc(*shape).params

    class Lib:
        kseek_attention_fwd = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)

    assert task.bind(Lib).argtypes == [VP, VP, VP, VP, VP, CI, CI, CI, CI, CI, CI, CI, CI, ctypes.c_float, VP]
    inputs, outputs = task.make_inputs(params, seed), task.new_outputs(params)
    calls = []
    assert task.invoke(lambda *a: calls.append(a) or 0, inputs, outputs, params) == 0
    dims = [params[n] for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim")]
    pointers = [inputs[n].data_ptr() for n in "qkv"] + [outputs[n].data_ptr() for n in ("o", "lse")]
    dtype_code, causal = {"bf16": 0, "fp16": 1}[params["dtype"]], int(params["causal"])
    assert calls == [(*pointers, *dims, dtype_code, causal, params["softmax_scale"], None)]  # stream 0
    dt = torch.bfloat16 if params["dtype"] == "bf16" else torch.float16
    B, Sq, Hq, D = dims[0], dims[1], dims[3], dims[5]
    assert {n: (t.dtype, tuple(t.shape)) for n, t in outputs.items()} == {
        "o": (dt, (B, Sq, Hq, D)),
        "lse": (torch.float32, (B, Hq, Sq)),
    }
    assert bool(outputs["o"].isnan().all()) and bool(outputs["lse"].isnan().all())  # poisoned
