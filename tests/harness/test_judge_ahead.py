"""The attention judge with its reference and cuDNN's outputs computed ahead (gpu_harness/ahead.py), on the
GPU: the same verdicts and errors as a judge that computes everything when the outputs arrive, with the work
ahead really used, and a scenario never judged (the candidate refused it) skipped without a stall. Both judges
are two evaluations' judges (judge_ahead.AheadJudge) of one task instance, as in the harness service: neither sees the
other's work ahead or timing figures."""

import pytest

pytestmark = pytest.mark.gpu

SHAPES = [  # dtype, B, Sq, Sk, Hq, Hkv, D, causal
    ("bf16", 2, 257, 257, 4, 1, 64, True),
    ("fp16", 1, 130, 1000, 8, 2, 128, False),
    ("bf16", 1, 513, 513, 4, 4, 128, False),
    ("fp16", 1, 300, 200, 2, 2, 96, True),  # rows 0..99 see no key
]


def _outputs(task, params, seed, torch, wrong=False):
    """An honest answer (the fp32 reference rounded to the dtype), or one with a wrong row."""
    from gpu_harness.tasks.attention_fwd import reference_module

    attention_reference = reference_module()
    reference = attention_reference.chunked_reference

    inp = task.make_inputs(params, seed)
    o, lse = reference(inp["q"], inp["k"], inp["v"], params["causal"], params["softmax_scale"])
    o = o.to(inp["q"].dtype).contiguous()
    if wrong:
        o[:, -1] += 0.5
    return {"o": o, "lse": lse.contiguous()}


def test_judging_with_work_ahead_matches_judging_without_it():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from gpu_harness.tasks.attention_fwd import attention_task
    from gpu_harness.tasks.attention_fwd import scenario as _sc

    task = attention_task()
    task.parent_prepare()
    task.parent_setup()
    ahead, inline = task.new_judge(), task.new_judge()
    scenarios = [_sc(*s) for s in SHAPES]
    seeds = {(s.id, run): 1000 * i + (run == "b") for i, s in enumerate(scenarios) for run in "ab"}
    ahead.ahead([(s.params, seeds[s.id, run], run == "a") for s in scenarios for run in "ab"])
    try:
        for n, sc in enumerate(scenarios):
            if n == 2:
                continue  # never judged: the ones after it must still arrive
            tol = None
            for run in "ab":
                seed = seeds[sc.id, run]
                outs = _outputs(task, sc.params, seed, torch, wrong=run == "b" and n == 3)
                a = ahead.judge(sc.params, seed, outs, tolerance=tol)
                b = inline.judge(sc.params, seed, outs, tolerance=tol)
                assert (a.correct, a.reason) == (b.correct, b.reason), (sc.id, run, a, b)
                assert a.error == pytest.approx(b.error, rel=1e-6, abs=1e-12), (sc.id, run)
                assert a.tolerance == pytest.approx(b.tolerance, rel=1e-6), (sc.id, run)
                tol = a.tolerance
                assert a.correct == (not (run == "b" and n == 3)), (sc.id, run, a.reason)
    finally:
        ahead.close()
        inline.close()
    # the references came from the work ahead: the judge never made inputs itself
    assert "inputs" not in ahead.seconds and "inputs" in inline.seconds
