"""tasks/attention_fwd/ on the generic machinery, on the CPU (the judge's side with device="cpu"): what the class
task it replaced (gpu_harness/tasks/attention_fwd.py until issue #16) did, checked against the class itself at
commit 3850f24 and written out here: the registry's task, its knobs, seed a's bound (2 x the vendor's error +
the floor, the flash backend standing in where cuDNN cannot run), the held bound, LSE's own rule, a spot check's
sampled rows and its look at the whole outputs, the judge's seconds by part. test_attention_pinned.py pins the
scenarios, inputs and tolerance numbers."""

import importlib.util

import pytest

from gpu_harness.tasks import get_task
from gpu_harness.tasks.attention_fwd import FOLDER, attention_task
from gpu_harness.tasks.attention_fwd import scenario as _sc
from gpu_harness.tasks.base import REPO_ROOT

torch = pytest.importorskip("torch")
SHAPES = [  # (dtype, B, Sq, Sk, Hq, Hkv, D, causal), seed
    (("bf16", 2, 33, 47, 4, 2, 32, True), 1234),
    (("fp16", 1, 300, 200, 2, 2, 96, True), 5),  # rows 0..99 see no key
    (("bf16", 1, 130, 100, 4, 1, 64, False), 7),
]


@pytest.fixture(scope="module")
def task():
    task = attention_task(device="cpu")
    task.parent_setup()
    return task


def honest(task, params, seed):
    from gpu_harness.tasks.attention_fwd import reference_module

    attention_reference = reference_module()
    reference = attention_reference.chunked_reference

    inp = task.make_inputs(params, seed)
    o, lse = reference(inp["q"], inp["k"], inp["v"], params["causal"], params["softmax_scale"])
    return {"o": o.to(inp["q"].dtype), "lse": lse}


def test_the_registry_gives_the_folder_and_its_knobs_are_the_classs():
    registered = get_task("attention_fwd")
    assert type(registered).__name__ == "CudaDataTask" and registered.spec.folder == FOLDER
    task = attention_task(device="cpu")
    assert (task.name, task.symbol, task.language, task.target, task.needs_gpu) == (
        "attention_fwd", "kseek_attention_fwd", "cuda", "cuda-sm90", True,
    )  # fmt: skip
    assert task.child_env() == {
        "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "1",
        "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": "{cache}/flash_attn_cute",  # the runner's to resolve
    }
    assert task.versions().startswith(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}")
    assert task.baseline_descriptions() == {
        "cudnn": "torch scaled_dot_product_attention, cuDNN backend",
        "flash": "torch scaled_dot_product_attention, flash backend (FlashAttention-2)",
        "fa3": "FlashAttention-3 (flash_attn_interface, or the fa3-fwd wheel's fa3_fwd_interface: bf16 only, n/a on fp16), where installed",
        "fa4": "FlashAttention-4 (flash_attn.cute, CuTe DSL), where installed",
    }
    notes = task.baseline_availability(["cudnn", "flash", "fa3", "fa4", "xformers"])
    assert notes["cudnn"] is None and notes["flash"] is None
    assert notes["xformers"] == "unknown baseline 'xformers' (known: cudnn, flash, fa3, fa4)"
    try:
        __import__("flash_attn.cute.interface")
        assert notes["fa4"] is None
    except ImportError:
        assert notes["fa4"].startswith("flash_attn.cute.interface does not import here")
    fa3_modules = [m for m in ("flash_attn_interface", "fa3_fwd_interface") if importlib.util.find_spec(m)]
    if fa3_modules:  # FA3 under either of its names
        assert notes["fa3"] is None
    else:
        assert notes["fa3"].startswith("neither flash_attn_interface nor fa3_fwd_interface imports here")
    assert task.starting_kernel == REPO_ROOT / "tasks/attention_fwd/naive.cu"
    assert task.cheats_dir == REPO_ROOT / "tasks/attention_fwd/cheats"
    assert task.goal == {"baseline": "best_library", "speedup": 1.1}  # its task.toml [goal], its one goal


@pytest.mark.parametrize(("shape", "seed"), SHAPES)
def test_seed_a_b_and_a_spot_check_are_judged_as_the_class_judged_them(task, shape, seed):
    p = _sc(*shape).params
    outs = honest(task, p, seed)
    a = task.judge(p, seed, outs)
    assert a.correct and a.details["vendor"] == "flash"  # cuDNN does not run on the CPU: flash stands in
    assert set(a.details) == {"vendor", "vendor_error", "lse_error"} and a.details["lse_error"] == 0.0
    floor = {"bf16": 2e-4, "fp16": 3e-5}[p["dtype"]]
    assert a.tolerance == 2.0 * a.details["vendor_error"] + floor
    other = task.judge(p, seed + 1, outs, tolerance=a.tolerance)  # outputs of other inputs, held to seed a's
    assert not other.correct and other.reason.startswith("o: relative error") and other.tolerance == a.tolerance
    assert (other.details["vendor"], other.details["vendor_error"]) == (None, None)
    spot = task.judge(p, seed, outs, tolerance=a.tolerance, spot_check=True)
    assert spot.correct and spot.details["rows_checked"] == min(p["seqlen_q"], max(64, -(-p["seqlen_q"] // 8)))


def test_lse_is_held_to_its_own_bound(task):
    p = _sc("bf16", 2, 33, 47, 4, 2, 32, True).params
    outs = honest(task, p, 3)
    outs["lse"] = outs["lse"] * (1 + 3e-4)  # far under O's bound, above LSE's 1e-4
    j = task.judge(p, 3, outs)
    assert not j.correct and j.reason.startswith("lse: relative error") and j.details["lse_error"] > 1e-4


def test_a_spot_check_samples_rows_and_looks_at_the_whole_outputs(task):
    p = _sc("bf16", 2, 300, 200, 4, 2, 32, True).params  # rows 0..99 see no key
    outs = honest(task, p, 5)
    j = task.judge(p, 5, outs, tolerance=5e-3, spot_check=True)
    assert j.correct and j.details["rows_checked"] == 64  # 300 / 8 < 64
    for name, index, value, words in (
        ("o", (1, 150, 3, 7), float("nan"), "o: 1 of"),
        ("lse", (0, 2, 10), 0.5, "lse: 1 elements differ where the reference is -inf"),  # a row that sees no key
        ("o", (0, 10, 1, 1), 0.25, "o: 1 elements differ where the reference is"),  # O = 0 there
        ("lse", (0, 2, 250), float("-inf"), "lse: 1 of"),
    ):
        bad = {"o": outs["o"].clone(), "lse": outs["lse"].clone()}
        bad[name][index] = value
        got = task.judge(p, 5, bad, tolerance=5e-3, spot_check=True)  # whichever rows are drawn
        assert not got.correct and got.reason.startswith(words), (name, got.reason)
    garbage = {"o": torch.zeros_like(outs["o"]), "lse": outs["lse"]}
    assert "above tolerance" in task.judge(p, 5, garbage, tolerance=5e-3, spot_check=True).reason


def test_spot_check_rows_are_fresh_and_all_of_a_short_axis(task):
    folder = task
    long = {"seqlen_q": 16384}
    draws = {tuple(folder.spot_rows(long).tolist()) for _ in range(5)}
    assert len(draws) == 5 and all(len(d) == 2048 and list(d) == sorted(set(d)) for d in draws)
    assert folder.spot_rows({"seqlen_q": 40}).tolist() == list(range(40))


def test_two_judges_of_one_task_keep_their_own_seconds_by_part(task):
    sc = _sc("bf16", 1, 33, 47, 2, 1, 32, True)
    stopped = task.new_judge()  # an evaluation that stops mid-way: judged once, never closed
    assert type(stopped).__name__ == "AheadJudge"
    stopped.ahead([(sc.params, 1, True), (sc.params, 2, False)])  # nothing computed ahead on the CPU
    assert stopped.judge(sc.params, 1, honest(task, sc.params, 1)).correct
    figures = dict(stopped.seconds)
    assert set(figures) == {"inputs", "reference", "vendor", "compare"}
    following = task.new_judge()  # the next evaluation, on the same instance
    assert following.seconds == {}
    assert following.judge(sc.params, 3, honest(task, sc.params, 3)).correct
    assert following.seconds.keys() == figures.keys() and stopped.seconds == figures
    stopped.close()
    following.close()


def test_the_self_check_runs_the_reference_sampled_and_reports_what_refuses(task):
    folder = task
    facts = folder.self_check()
    assert facts["scenario"] == "bf16_b64_sq1_sk1_h16x16_d128_full" and facts["device"] == "cpu"
    assert list(facts["refused"]) == ["cudnn"]  # no viable SDPA backend with cuDNN's alone on the CPU
    assert folder.reference_note() == "reference.py:reference on float32 copies of the inputs (cpu)"
