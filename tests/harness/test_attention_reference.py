"""The attention reference and comparison, on the CPU with torch (skipped where torch is absent)."""

import math

import pytest

from gpu_harness.verdict import judge_outputs

torch = pytest.importorskip("torch")
from gpu_harness.tasks.attention_fwd import reference_module  # noqa: E402
from gpu_harness.tasks.cuda_device import compare_torch  # noqa: E402

attention_reference = reference_module()
reference = attention_reference.chunked_reference


def direct(q, k, v, causal, scale):
    """Textbook attention in float64, one (b, h) at a time."""
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    o = torch.zeros(B, Sq, Hq, D, dtype=torch.float64)
    lse = torch.full((B, Hq, Sq), -math.inf, dtype=torch.float64)
    for b in range(B):
        for h in range(Hq):
            kh = h // (Hq // Hkv)
            s = q[b, :, h].double() @ k[b, :, kh].double().T * scale
            for i in range(Sq):
                vis = torch.arange(Sk) <= i + Sk - Sq if causal else torch.ones(Sk, dtype=torch.bool)
                if vis.any():
                    row = s[i][vis]
                    lse[b, h, i] = torch.logsumexp(row, 0)
                    o[b, i, h] = torch.softmax(row, 0) @ v[b, vis, kh].double()
    return o, lse


@pytest.mark.parametrize(
    "B,Sq,Sk,Hq,Hkv,D,causal",
    [
        (2, 5, 5, 2, 2, 8, False),
        (2, 7, 7, 4, 2, 8, True),
        (1, 3, 11, 4, 1, 16, True),
        (1, 9, 4, 2, 2, 8, True),
        (1, 1, 1, 1, 1, 4, True),
    ],
)
def test_chunked_reference_matches_textbook_attention(B, Sq, Sk, Hq, Hkv, D, causal):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, Sq, Hq, D, generator=g).bfloat16()
    k = torch.randn(B, Sk, Hkv, D, generator=g).bfloat16()
    v = torch.randn(B, Sk, Hkv, D, generator=g).bfloat16()
    scale = 1 / math.sqrt(D)
    o, lse = reference(q, k, v, causal, scale, budget_elems=7)  # tiny budget: many chunks
    eo, else_ = direct(q, k, v, causal, scale)
    assert torch.allclose(o.double(), eo, atol=1e-5)
    assert torch.equal(torch.isinf(lse), torch.isinf(else_))
    fin = torch.isfinite(else_)
    assert torch.allclose(lse.double()[fin], else_[fin], atol=1e-5)


def test_rows_that_see_no_key_have_zero_output_and_minus_inf_lse():
    q = torch.randn(1, 6, 1, 4)
    k = torch.randn(1, 2, 1, 4)
    o, lse = reference(q, k, k.clone(), True, 0.5)
    # Sq = 6, Sk = 2: rows 0..3 see no key (j <= i - 4)
    assert torch.all(o[0, :4] == 0) and torch.all(torch.isneginf(lse[0, 0, :4]))
    assert torch.all(torch.isfinite(lse[0, 0, 4:]))


def test_bf16_rounding_of_the_reference_passes_and_a_precision_cut_fails():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 64, 2, 32, generator=g).bfloat16() for _ in range(3))
    o, lse = reference(q, k, v, False, 1 / math.sqrt(32))
    honest = o.bfloat16()
    cut = o.to(torch.float8_e4m3fn).float() if hasattr(torch, "float8_e4m3fn") else (o * 8).round() / 8
    tol = {"O": 2 * 2.3e-3 + 2e-4, "LSE": 1e-4}
    assert judge_outputs([compare_torch("O", honest, o), compare_torch("LSE", lse, lse)], tol)[0]
    ok, reason = judge_outputs([compare_torch("O", cut, o), compare_torch("LSE", lse, lse)], tol)
    assert not ok and "above tolerance" in reason


def test_nan_poison_left_in_output_fails():
    ref = torch.randn(4, 4)
    cand = ref.clone()
    cand[1, 2] = float("nan")
    ok, reason = judge_outputs([compare_torch("O", cand, ref)], {"O": 1.0})
    assert not ok and "NaN" in reason


def cpu_judge_and_reference(shape: tuple, seed: int):
    """The judge on the CPU, a scenario of `shape` (the arguments of attention_fwd.scenario) and the fp32 reference on
    the inputs of `seed`: (task, scenario, O, LSE)."""
    from gpu_harness.tasks.attention_fwd import attention_task, scenario

    task = attention_task(device="cpu")
    task.parent_setup()
    sc = scenario(*shape)
    inp = task.make_inputs(sc.params, seed)
    o, lse = reference(inp["q"], inp["k"], inp["v"], sc.params["causal"], sc.params["softmax_scale"])
    return task, sc, o, lse


def test_judge_accepts_rounded_reference_and_rejects_poisoned_outputs():
    """The parent's judge end to end on the CPU: regenerate inputs from the seed, compare the outputs."""
    task, sc, o, lse = cpu_judge_and_reference(("bf16", 2, 33, 47, 4, 2, 32, True), 1234)
    good = {"o": o.bfloat16(), "lse": lse}
    j = task.judge(sc.params, 1234, good)
    assert j.correct, j.reason
    assert 2e-3 < j.tolerance < 7e-3  # twice a vendor's bf16 error (torch's CPU flash path here) + floor
    other_seed = task.judge(sc.params, 999, good)  # outputs for other inputs
    assert not other_seed.correct and "above tolerance" in other_seed.reason
    poisoned = o.bfloat16().clone()
    poisoned[0, -1] = float("nan")
    bad = {"o": poisoned, "lse": lse}
    j = task.judge(sc.params, 1234, bad)
    assert not j.correct and "NaN" in j.reason


def test_judge_refuses_outputs_of_the_wrong_dtype_or_shape():
    task, sc, o, lse = cpu_judge_and_reference(("fp16", 1, 16, 16, 2, 2, 32, False), 7)
    assert task.judge(sc.params, 7, {"o": o.half(), "lse": lse}).correct
    wrong_dtype = task.judge(sc.params, 7, {"o": o.bfloat16(), "lse": lse})
    assert not wrong_dtype.correct
    assert wrong_dtype.reason == "o: output has shape (1, 16, 2, 32) bfloat16, expected shape (1, 16, 2, 32) float16"
    wrong_shape = task.judge(sc.params, 7, {"o": o.half()[:, :8], "lse": lse})
    assert not wrong_shape.correct and wrong_shape.reason.startswith("o: output has shape (1, 8, 2, 32) float16")


def test_identical_is_bitwise_not_numeric():
    """-0.0 == 0.0 numerically, but a moving sign bit is a moving answer; NaN != NaN numerically, but the
    same NaN twice is the same output."""
    from gpu_harness.tasks.attention_fwd import attention_task

    task = attention_task(device="cpu")
    o = torch.zeros(2, 3, 4, 8, dtype=torch.bfloat16)
    lse = torch.full((2, 4, 3), float("-inf"))
    lse[0, 0, 0] = float("nan")
    same = {"o": o.clone(), "lse": lse.clone()}
    assert task.identical({"o": o, "lse": lse}, same)
    signed = {"o": o.clone(), "lse": lse.clone()}
    signed["o"][1, 2, 3, 7] = -0.0
    assert not task.identical({"o": o, "lse": lse}, signed)
    assert not task.identical({"o": o, "lse": lse}, {"o": o.half(), "lse": lse})


def test_reference_on_chosen_rows_equals_those_rows_of_the_full_reference():
    q, k, v = (torch.randn(2, n, 4, 16, dtype=torch.float16) for n in (50, 30, 30))
    rows = torch.tensor([0, 3, 19, 20, 21, 49])
    for causal in (False, True):  # Sq > Sk causal: rows 0..19 see no key
        o, lse = reference(q, k, v, causal, 0.25)
        o_rows, lse_rows = reference(q, k, v, causal, 0.25, rows=rows)
        assert torch.equal(o[:, rows], o_rows) and torch.equal(lse[:, :, rows], lse_rows)


def test_spot_check_judges_sampled_rows_and_the_whole_output_for_poison():
    """A timed call's output is judged on random rows; poison or a misplaced -inf anywhere still fails."""
    task, sc, o, lse = cpu_judge_and_reference(("bf16", 2, 300, 200, 4, 2, 32, True), 5)  # rows 0..99 see no key
    honest = {"o": o.bfloat16(), "lse": lse}
    j = task.judge(sc.params, 5, honest, tolerance=5e-3, spot_check=True)
    assert j.correct, j.reason
    assert j.details["rows_checked"] == task.spec.spot_check.min_count == 64  # 300 / 8 < 64
    for name, index, value, words in (
        ("o", (1, 150, 3, 7), float("nan"), "NaN"),
        ("lse", (0, 2, 10), 0.5, "-inf"),  # a row that sees no key
        ("lse", (0, 2, 250), float("-inf"), "NaN/Inf"),
    ):
        bad = {"o": honest["o"].clone(), "lse": honest["lse"].clone()}
        bad[name][index] = value
        # whichever rows are drawn, the whole output is checked for these
        j = task.judge(sc.params, 5, bad, tolerance=5e-3, spot_check=True)
        assert not j.correct and words in j.reason, (name, j.reason)
    garbage = {"o": torch.zeros_like(honest["o"]), "lse": honest["lse"]}
    j = task.judge(sc.params, 5, garbage, tolerance=5e-3, spot_check=True)
    assert not j.correct and "above tolerance" in j.reason


def test_spot_check_rows_are_fresh_each_time():
    from gpu_harness.tasks.attention_fwd import attention_task

    task = attention_task(device="cpu")
    draws = {tuple(task.spot_rows({"seqlen_q": 16384}).tolist()) for _ in range(5)}
    assert len(draws) == 5 and all(len(d) == 2048 and list(d) == sorted(set(d)) for d in draws)
    assert task.spot_rows({"seqlen_q": 40}).tolist() == list(range(40))
