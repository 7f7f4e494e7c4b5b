"""What attention_fwd's judging must keep, whatever code it is written in (a class today; a task folder on the
generic machinery later, issue #16): the 180 scenarios (ids, parameters, FLOP and byte counts) and the quick
subset, the inputs each seed makes, the tolerance rule and the knobs its timing reads. The digests were taken
from the class before any of it moved; a change here changes what every stored attention verdict means."""

import hashlib
import json

import pytest

from gpu_harness.tasks.attention_fwd import AttentionFwd, _sc

SCENARIOS_SHA256 = "a2df8994d38b40fb9c1988c1c5568255ed80f749f98fcde0857eea48ff17b213"
QUICK_SHA256 = "94ebb30e7a8a54bbf3c500346c4d314d0ceae2b899c9e30767e31a33462d85a7"
INPUTS_SHA256 = {  # the torch CPU generator's q, k, v (the GPU's come from the same calls on the CUDA generator)
    (("bf16", 2, 33, 47, 4, 2, 32, True), 1234): "2d0b64790860d3573feb372a5e7a41439f272e1c7f98d33ccd27790e3bb52369",
    (("fp16", 1, 16, 16, 2, 2, 32, False), 7): "79f65a795e03a71ae7d9ce59a873a940675bb6219be1fac55b625279e05256cc",
}


def test_the_180_scenarios_and_the_quick_subset_are_the_ones_stored_verdicts_name():
    task = AttentionFwd(device="cpu")
    scenarios = task.scenarios()
    assert len(scenarios) == 180 and len({s.id for s in scenarios}) == 180
    blob = json.dumps([[s.id, s.params, s.flops, s.bytes] for s in scenarios], sort_keys=True).encode()
    assert hashlib.sha256(blob).hexdigest() == SCENARIOS_SHA256
    assert hashlib.sha256(json.dumps(task.quick_ids()).encode()).hexdigest() == QUICK_SHA256
    assert scenarios[0].id == "bf16_b32_sq512_sk512_h32x32_d64_full"
    assert task.quick_ids()[0] == "bf16_b8_sq2048_sk2048_h16x16_d128_full"


@pytest.mark.parametrize(("shape", "seed"), list(INPUTS_SHA256))
def test_a_seed_makes_the_same_inputs(shape, seed):
    torch = pytest.importorskip("torch")
    task = AttentionFwd(device="cpu")
    sc = _sc(*shape)
    inputs = task.make_inputs(sc.params, seed)
    digest = hashlib.sha256()
    for name in ("q", "k", "v"):
        digest.update(name.encode())
        digest.update(inputs[name].view(torch.int16).numpy().tobytes())
    assert digest.hexdigest() == INPUTS_SHA256[shape, seed]


def test_the_tolerance_is_twice_the_vendors_error_plus_the_floor_and_seed_b_keeps_seed_as():
    pytest.importorskip("torch")
    from gpu_harness.tasks import attention_fwd as af
    from gpu_harness.tasks.attention_reference import reference

    assert (af.O_FLOOR, af.DEFAULT_VENDOR_ERROR, af.LSE_TOL, af.VENDOR_SANITY) == (
        {"bf16": 2e-4, "fp16": 3e-5},
        {"bf16": 2.3e-3, "fp16": 2.9e-4},
        1e-4,
        4.0,
    )
    task = AttentionFwd(device="cpu")
    task.parent_setup()
    sc = _sc("bf16", 2, 33, 47, 4, 2, 32, True)
    inp = task.make_inputs(sc.params, 1234)
    o, lse = reference(inp["q"], inp["k"], inp["v"], sc.params["causal"], sc.params["softmax_scale"])
    j = task.judge(sc.params, 1234, {"o": o.bfloat16(), "lse": lse})
    assert j.correct and j.details["vendor"] in ("cudnn", "flash")
    assert j.tolerance == 2.0 * j.details["vendor_error"] + af.O_FLOOR["bf16"]
    held = task.judge(sc.params, 1234, {"o": o.bfloat16(), "lse": lse}, tolerance=1e-9)
    assert held.tolerance == 1e-9 and not held.correct and held.details["vendor_error"] is None


def test_the_knobs_the_timing_reads_are_unchanged():
    task = AttentionFwd(device="cpu")
    assert task.timing_overrides == {}  # the harness's TIMING as it is
    assert (task.call_timeout_base_s, task.call_timeout_min_rate) == (20.0, 2e11)
    assert task.default_baselines == ("cudnn", "flash", "fa3", "fa4")
    assert task.baselines_to_warm == ("cudnn", "fa4") and task.baseline_threads == 8
    assert task.output_names == ("o", "lse") and task.symbol == "kseek_attention_fwd"
