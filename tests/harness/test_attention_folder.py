"""tasks/attention_fwd/ on the generic machinery against the class task it replaces (gpu_harness/tasks/
attention_fwd.py), on the CPU (the judge's side with device="cpu"): the same scenarios, knobs, inputs, and the
same judgements, seed a's bound (2 x the vendor's error + the floor, the flash backend standing in where cuDNN
cannot run), the held bound, LSE's own rule, a spot check's sampled rows and its look at the whole outputs."""

import pytest

from gpu_harness.tasks import folder_task
from gpu_harness.tasks.attention_fwd import AttentionFwd, _sc
from gpu_harness.tasks.base import REPO_ROOT
from gpu_harness.taskspec import load_spec

torch = pytest.importorskip("torch")

FOLDER = REPO_ROOT / "tasks" / "attention_fwd"
SHAPES = [  # (dtype, B, Sq, Sk, Hq, Hkv, D, causal), seed
    (("bf16", 2, 33, 47, 4, 2, 32, True), 1234),
    (("fp16", 1, 300, 200, 2, 2, 96, True), 5),  # rows 0..99 see no key
    (("bf16", 1, 130, 100, 4, 1, 64, False), 7),
]


@pytest.fixture(scope="module")
def tasks():
    folder, cls = folder_task(load_spec(FOLDER), device="cpu"), AttentionFwd(device="cpu")
    folder.parent_setup()
    cls.parent_setup()
    return folder, cls


def honest(task, params, seed):
    from gpu_harness.tasks.attention_reference import reference

    inp = task.make_inputs(params, seed)
    o, lse = reference(inp["q"], inp["k"], inp["v"], params["causal"], params["softmax_scale"])
    return {"o": o.to(inp["q"].dtype), "lse": lse}


def same(a, b):
    """The same Judgement; the folder names its outputs o and lse where the class wrote O and LSE."""
    assert (a.correct, a.error, a.tolerance, a.details) == (b.correct, b.error, b.tolerance, b.details)
    assert (a.reason or "").lower() == (b.reason or "").lower()


def test_the_folder_has_the_class_tasks_scenarios_and_knobs(tasks):
    folder, cls = tasks
    assert [(s.id, s.params, s.flops, s.bytes) for s in folder.scenarios()] == [
        (s.id, s.params, s.flops, s.bytes) for s in cls.scenarios()
    ]
    assert folder.quick_ids() == cls.quick_ids()
    for knob in (
        "name", "symbol", "abi", "language", "target", "needs_gpu", "output_names", "default_baselines",
        "baselines_to_warm", "baseline_threads", "timing_overrides", "call_timeout_base_s", "call_timeout_min_rate",
    ):  # fmt: skip
        assert getattr(folder, knob) == getattr(cls, knob), knob
    assert folder.child_env() == cls.child_env() and folder.versions() == cls.versions()
    assert folder.baseline_descriptions() == cls.baseline_descriptions()
    names = ["cudnn", "flash", "fa3", "fa4", "xformers"]
    assert folder.baseline_availability(names) == cls.baseline_availability(names)
    assert (
        folder.starting_kernel == cls.starting_kernel
        and folder.cheats_dir == REPO_ROOT / "kernels/cheats/attention_fwd"
    )
    assert folder.timing_limits() == cls.timing_limits()


@pytest.mark.parametrize(("shape", "seed"), SHAPES)
def test_seed_a_b_and_a_spot_check_are_judged_as_the_class_judges_them(tasks, shape, seed):
    folder, cls = tasks
    p = _sc(*shape).params
    outs = honest(cls, p, seed)
    a = folder.judge(p, seed, outs)
    same(a, cls.judge(p, seed, outs))
    assert a.correct and a.details["vendor"] == "flash"  # cuDNN does not run on the CPU: flash stands in
    floor = {"bf16": 2e-4, "fp16": 3e-5}[p["dtype"]]
    assert a.tolerance == 2.0 * a.details["vendor_error"] + floor
    other = folder.judge(p, seed + 1, outs, tolerance=a.tolerance)  # outputs of other inputs, held to seed a's
    same(other, cls.judge(p, seed + 1, outs, tolerance=a.tolerance))
    assert not other.correct and other.reason.startswith("o: relative error")
    spot = folder.judge(p, seed, outs, tolerance=a.tolerance, spot_check=True)
    mine = cls.judge(p, seed, outs, tolerance=a.tolerance, spot_check=True)
    assert spot.correct and mine.correct and spot.details["rows_checked"] == mine.details["rows_checked"]


def test_lse_is_held_to_its_own_bound(tasks):
    folder, cls = tasks
    p = _sc("bf16", 2, 33, 47, 4, 2, 32, True).params
    outs = honest(cls, p, 3)
    outs["lse"] = outs["lse"] * (1 + 3e-4)  # far under O's bound, above LSE's 1e-4
    j = folder.judge(p, 3, outs)
    assert not j.correct and j.reason.startswith("lse: relative error") and j.details["lse_error"] > 1e-4
    assert not cls.judge(p, 3, outs).correct


def test_a_spot_check_samples_rows_and_looks_at_the_whole_outputs(tasks):
    folder, cls = tasks
    p = _sc("bf16", 2, 300, 200, 4, 2, 32, True).params  # rows 0..99 see no key
    outs = honest(cls, p, 5)
    j = folder.judge(p, 5, outs, tolerance=5e-3, spot_check=True)
    assert j.correct and j.details["rows_checked"] == 64  # 300 / 8 < 64
    for name, index, value, words in (
        ("o", (1, 150, 3, 7), float("nan"), "o: 1 of"),
        ("lse", (0, 2, 10), 0.5, "lse: 1 elements differ where the reference is -inf"),  # a row that sees no key
        ("o", (0, 10, 1, 1), 0.25, "o: 1 elements differ where the reference is"),  # O = 0 there
        ("lse", (0, 2, 250), float("-inf"), "lse: 1 of"),
    ):
        bad = {"o": outs["o"].clone(), "lse": outs["lse"].clone()}
        bad[name][index] = value
        got = folder.judge(p, 5, bad, tolerance=5e-3, spot_check=True)  # whichever rows are drawn
        assert not got.correct and got.reason.startswith(words), (name, got.reason)
        assert not cls.judge(p, 5, bad, tolerance=5e-3, spot_check=True).correct
    garbage = {"o": torch.zeros_like(outs["o"]), "lse": outs["lse"]}
    assert "above tolerance" in folder.judge(p, 5, garbage, tolerance=5e-3, spot_check=True).reason


def test_spot_check_rows_are_fresh_and_all_of_a_short_axis(tasks):
    folder, _ = tasks
    long = {"seqlen_q": 16384}
    draws = {tuple(folder.spot_rows(long).tolist()) for _ in range(5)}
    assert len(draws) == 5 and all(len(d) == 2048 and list(d) == sorted(set(d)) for d in draws)
    assert folder.spot_rows({"seqlen_q": 40}).tolist() == list(range(40))


def test_the_judge_keeps_its_seconds_by_part_like_the_classs(tasks):
    folder, cls = tasks
    sc = _sc("bf16", 1, 33, 47, 2, 1, 32, True)
    keys = []
    for task in (folder, cls):
        judge = task.new_judge()
        judge.ahead([(sc.params, 1, True), (sc.params, 2, False)])  # nothing computed ahead on the CPU
        assert judge.judge(sc.params, 1, honest(task, sc.params, 1)).correct
        keys.append(set(judge.seconds))
        judge.close()
    assert keys[0] == keys[1] == {"inputs", "reference", "vendor", "compare"}
    assert type(folder.new_judge()).__name__ == "AheadJudge"


def test_the_self_check_runs_the_reference_sampled_and_reports_what_refuses(tasks):
    folder, _ = tasks
    facts = folder.self_check()
    assert facts["scenario"] == "bf16_b64_sq1_sk1_h16x16_d128_full" and facts["device"] == "cpu"
    assert list(facts["refused"]) == ["cudnn"]  # no viable SDPA backend with cuDNN's alone on the CPU
    assert folder.reference_note() == "reference.py:reference on float32 copies of the inputs (cpu)"
