"""tasks/attention_fwd/ on the GPU: the fused reference serves (built through the build cache), cuDNN's error
sets seed a's bound (2 x it + the floor), the judge's work ahead gives the verdicts of a judge that works
inline, spot checks sample rows, each baseline runs and is as close to the reference as a vendor is, and the
self check passes. (At commit 3850f24, before the class task went, the same file compared the folder with the
class on every one of these.) Run on the H200:
    .venv/bin/python -m pytest tests/harness/test_attention_folder_gpu.py -q -p no:randomly
"""

import pytest

pytestmark = pytest.mark.gpu

SHAPES = [  # dtype, B, Sq, Sk, Hq, Hkv, D, causal
    ("bf16", 2, 257, 257, 4, 1, 64, True),
    ("fp16", 1, 130, 1000, 8, 2, 128, False),
    ("bf16", 1, 513, 513, 4, 4, 128, False),
    ("fp16", 1, 300, 200, 2, 2, 96, True),  # rows 0..99 see no key
    ("bf16", 2, 1000, 113, 16, 16, 128, True),
    ("fp16", 1, 64, 64, 2, 2, 80, False),  # a head dim the fused kernel does not instantiate: torch's reference
]
FLOOR = {"bf16": 2e-4, "fp16": 3e-5}
DEFAULT_ERROR = {"bf16": 2.3e-3, "fp16": 2.9e-4}


@pytest.fixture(scope="module")
def task():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from gpu_harness.tasks.attention_fwd import attention_task

    task = attention_task()
    task.parent_prepare()
    task.parent_setup()
    return task


def _outputs(task, params, seed, wrong=False):
    from gpu_harness.tasks.attention_fwd import reference_module

    attention_reference = reference_module()
    reference = attention_reference.chunked_reference

    inp = task.make_inputs(params, seed)
    o, lse = reference(inp["q"], inp["k"], inp["v"], params["causal"], params["softmax_scale"])
    o = o.to(inp["q"].dtype).contiguous()
    if wrong:  # every query row of the last head: a spot check samples rows, and must see it whichever it draws
        o[:, :, -1] += 0.5
    return {"o": o, "lse": lse.contiguous()}


def test_the_fused_reference_serves_where_it_instantiates_the_head_dim(task):
    import torch

    from gpu_harness.tasks.attention_fwd import scenario

    assert task.fast_reference()._kernel.ready(600), task.reference_note()
    assert task.reference_note().startswith("fused fp32 kernel")
    for shape, dtype in ((SHAPES[0], torch.float32), (SHAPES[-1], torch.float64)):  # the fused kernel's fp32
        p = scenario(*shape).params
        ref = task.reference_outputs(p, task.make_inputs(p, 1))
        assert ref["o"].dtype == dtype and ref["o"].is_cuda, shape


def test_judgements_with_work_ahead_are_those_of_a_judge_working_inline(task):
    from gpu_harness.tasks.attention_fwd import scenario

    scenarios = [scenario(*s) for s in SHAPES]
    seeds = {(s.id, run): 1000 * i + (run == "b") for i, s in enumerate(scenarios) for run in "ab"}
    items = [(s.params, seeds[s.id, run], run == "a") for s in scenarios for run in "ab"]
    ahead, inline = task.new_judge(), task.new_judge()
    ahead.ahead(items)
    try:
        for n, sc in enumerate(scenarios):
            if n == 2:
                continue  # never judged: the ones after it must still arrive
            tol = None
            for run in "ab":
                seed = seeds[sc.id, run]
                outs = _outputs(task, sc.params, seed, wrong=run == "b" and n == 3)
                a = ahead.judge(sc.params, seed, outs, tolerance=tol)
                b = inline.judge(sc.params, seed, outs, tolerance=tol)
                assert (a.correct, a.reason) == (b.correct, b.reason), (sc.id, run, a, b)
                assert a.error == pytest.approx(b.error, rel=1e-6, abs=1e-12), (sc.id, run)
                assert a.tolerance == pytest.approx(b.tolerance, rel=1e-6), (sc.id, run)
                assert a.details.get("vendor") == b.details.get("vendor"), (sc.id, run)
                assert a.correct == (not (run == "b" and n == 3)), (sc.id, run, a.reason)
                if run == "a":  # neither vendor usable (Sq > Sk causal may be such): the H200's level
                    vendor, error = a.details["vendor"], a.details["vendor_error"]
                    assert vendor in ("cudnn", "flash", None), (sc.id, a.details)
                    base = DEFAULT_ERROR[sc.params["dtype"]] if vendor is None else error
                    assert a.tolerance == 2.0 * base + FLOOR[sc.params["dtype"]]
                tol = a.tolerance
                spot = ahead.judge(sc.params, seed, outs, tolerance=tol, spot_check=True)
                assert spot.correct == a.correct, (sc.id, run, spot.reason)
                assert spot.details["rows_checked"] == min(
                    sc.params["seqlen_q"], max(64, -(-sc.params["seqlen_q"] // 8))
                )
        assert {"reference", "vendor", "compare"} <= set(ahead.seconds)
    finally:
        ahead.close()
        inline.close()


def test_cudnn_sets_the_bound_where_it_runs(task):
    from gpu_harness.tasks.attention_fwd import scenario

    sc = scenario("bf16", 8, 2048, 2048, 16, 16, 128, False)  # the quick subset's first
    j = task.judge(sc.params, 3, _outputs(task, sc.params, 3))
    assert j.correct and j.details["vendor"] == "cudnn" and j.details["vendor_error"] < 4 * 2.3e-3


def test_each_baseline_runs_and_is_as_close_as_a_vendor(task):
    from gpu_harness.tasks.attention_fwd import scenario
    from gpu_harness.tasks.cuda_device import compare_torch

    names = [n for n, note in task.baseline_availability(list(task.default_baselines)).items() if note is None]
    assert {"cudnn", "flash"} <= set(names)
    for shape in SHAPES[:3]:
        p = scenario(*shape).params
        inputs = task.make_inputs(p, 11)
        ref = task.reference_outputs(p, inputs)
        calls = task.baseline_callables(names, p, inputs, {})
        ran = []
        for name in names:
            try:
                out = calls[name]()["o"]  # what the child times
            except Exception:  # a library may refuse a configuration: n/a there, as in the child
                continue
            ran.append(name)
            err = compare_torch("o", out, ref["o"]).rel_error
            assert err < 4 * DEFAULT_ERROR[p["dtype"]], (name, shape, err)
        assert {"cudnn", "flash"} & set(ran), shape  # a vendor serves every one of these shapes


def test_the_self_check_passes_on_the_gpu(task):
    facts = task.self_check()
    assert facts["device"] == "cuda" and facts["scenario"] == "bf16_b64_sq1_sk1_h16x16_d128_full"
