"""attention_fwd's ABI and input recipe written as a task folder, with the generic features (a dtype and a scalar
chosen by the scenario's `dtype`, `causal` mapped to 0/1, a stream argument, the commented declaration as
abi_text, normal draws in the tensor's own dtype): the folder task binds, calls and feeds a kernel exactly as
the class task does, on the CPU (the judge's side with device="cpu"). What is left for attention to move (its
fused reference, its vendor baselines, the LSE rule) is the task's own, not the spec's."""

import ctypes

import pytest

from gpu_harness.tasks import folder_task
from gpu_harness.tasks.attention_fwd import ABI, AttentionFwd, _sc
from gpu_harness.taskspec import load_spec

from .test_attention_pinned import INPUT_CASES as PINNED_CASES

torch = pytest.importorskip("torch")

DIMS = ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim")
# the pinned cases, and sizes that are no multiple of 16: torch's CPU sampler draws a half type's tail otherwise
# than float32's (a float32 draw rounded would pass the pinned cases alone)
INPUT_CASES = [*PINNED_CASES, (("bf16", 1, 7, 9, 3, 1, 5, False), 99), (("fp16", 2, 3, 3, 1, 1, 7, True), 5)]
# on the H200 the same tests compare the draws of torch's CUDA generator
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
BY_DTYPE = 'dtype = { by = "dtype", bf16 = "bfloat16", fp16 = "float16" }'
NATIVE = 'init = { dist = "normal", native = true }  # torch.randn(..., dtype=bf16), as the class draws'


def _tensor(name, kind, shape, dtype=BY_DTYPE):
    init = f"\n{NATIVE}" if kind == "input" else ""
    return f'[[args]]\nname = "{name}"\nkind = "{kind}"\n{dtype}\nshape = {shape}{init}\n\n'


def _scalar(name, dtype, value):
    return f'[[args]]\nname = "{name}"\nkind = "scalar"\ndtype = "{dtype}"\nvalue = {value}\n\n'


def attention_toml(scenarios) -> str:
    rows = ",\n".join(
        "    { " + ", ".join(f"{k} = {str(v).lower() if isinstance(v, bool) else repr(v)}" for k, v in p.items()) + " }"
        for p in scenarios
    ).replace("'", '"')
    q_shape, kv_shape = '["batch", "seqlen_q", "heads_q", "head_dim"]', '["batch", "seqlen_k", "heads_kv", "head_dim"]'
    return (
        'description = "attention_fwd as data"\ntarget = "cuda-sm90"\n\n[kernel]\nsymbol = "kseek_attention_fwd"\n'
        f'abi_text = """{ABI}"""\n\n'
        + _tensor("q", "input", q_shape)
        + _tensor("k", "input", kv_shape)
        + _tensor("v", "input", kv_shape)
        + _tensor("o", "output", q_shape)
        + _tensor("lse", "output", '["batch", "heads_q", "seqlen_q"]', dtype='dtype = "float32"')
        + "".join(_scalar(d, "int32", f'"{d}"') for d in DIMS)
        + _scalar("dtype", "int32", '{ by = "dtype", bf16 = 0, fp16 = 1 }')
        + _scalar("causal", "int32", '{ by = "causal", true = 1, false = 0 }')
        + _scalar("softmax_scale", "float32", '"softmax_scale"')
        + '[[args]]\nname = "stream"\nkind = "stream"\n\n'
        + '[reference]\nfunction = "reference"\n\n[tolerance]\nrel_l2 = 1e-2\n\n'
        + '[baselines]\ndefault = ["copy"]\ncopy = { function = "copy" }\n\n[goal]\nbaseline = "copy"\nspeedup = 1.0\n\n'
        + '[formulas]\nflops = "4*batch*heads_q*seqlen_q*seqlen_k*head_dim"\n\n'
        + '[scenarios]\nid = "{dtype}_b{batch}_sq{seqlen_q}_sk{seqlen_k}_h{heads_q}x{heads_kv}_d{head_dim}_{causal}"\n'
        + 'id_names = { causal = { true = "causal", false = "full" } }\n'
        + f"list = [\n{rows},\n]\n"
        + 'quick = ["bf16_b2_sq33_sk47_h4x2_d32_causal"]\n\n'
        + '[scenarios.derived]\nsoftmax_scale = "1/head_dim**0.5"\n'
    )


@pytest.fixture(scope="module", params=DEVICES)
def tasks(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("t") / "attention_data"
    folder.mkdir()
    params = [{k: v for k, v in _sc(*shape).params.items() if k != "softmax_scale"} for shape, _ in INPUT_CASES]
    (folder / "task.toml").write_text(attention_toml(params))
    (folder / "reference.py").write_text(
        "def reference(q, **kw):\n    return q\n\n\ndef copy(q, o, **kw):\n    o.copy_(q)\n"
    )
    return folder_task(load_spec(folder), device=request.param), AttentionFwd(device=request.param)


def test_the_folder_shows_agents_the_class_tasks_commented_declaration(tasks):
    folder, cls = tasks
    assert folder.abi == cls.abi == ABI
    assert "cudaStream_t stream" in folder.spec.declaration()  # the stub kernel's, generated


@pytest.mark.parametrize(("shape", "seed"), INPUT_CASES)
def test_a_seed_makes_the_class_tasks_inputs_bit_for_bit(tasks, shape, seed):
    folder, cls = tasks
    params = _sc(*shape).params
    mine, theirs = folder.make_inputs(params, seed), cls.make_inputs(params, seed)
    assert list(mine) == list(theirs) == ["q", "k", "v"]
    for name in mine:
        assert mine[name].dtype == theirs[name].dtype and mine[name].shape == theirs[name].shape, name
        assert torch.equal(mine[name].view(torch.int16), theirs[name].view(torch.int16)), name


@pytest.mark.parametrize(("shape", "seed"), INPUT_CASES)
def test_the_kernel_is_bound_and_called_with_the_class_tasks_arguments(tasks, shape, seed):
    folder, cls = tasks
    params = _sc(*shape).params

    def bound(task):
        class Lib:
            kseek_attention_fwd = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)

        return task.bind(Lib).argtypes

    assert bound(folder) == bound(cls)
    inputs, outputs = cls.make_inputs(params, seed), cls.new_outputs(params)
    calls = []
    for task in (folder, cls):
        task.invoke(lambda *a: calls.append(a) or 0, inputs, outputs, params)
    assert calls[0] == calls[1] and calls[0][-1] is None  # the pointers, the sizes, dtype, causal, scale, stream 0
    made = folder.new_outputs(params)
    assert {n: (t.dtype, t.shape) for n, t in made.items()} == {n: (t.dtype, t.shape) for n, t in outputs.items()}
