"""Task definitions: scenario lists, ids, counts, FLOP formulas (no GPU, no torch)."""

import math
import sys

import pytest

from gpu_harness import get_task, list_tasks
from gpu_harness.tasks.attention_fwd import scenario


def attention_flops(b, sq, sk, hq, d, causal):
    """The folder's FLOP formula ([formulas] flops) on a scenario of this shape."""
    return scenario("bf16", b, sq, sk, hq, hq, d, causal).flops


def test_both_tasks_are_listed():
    assert {"attention_fwd", "matmul_cpu"} <= set(list_tasks())


def test_unknown_task_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown task"):
        get_task("nope")


def test_listing_attention_scenarios_does_not_import_torch():
    had = "torch" in sys.modules
    get_task("attention_fwd").scenarios()
    assert had or "torch" not in sys.modules


def test_attention_has_about_180_scenarios_with_unique_ids():
    sc = get_task("attention_fwd").scenarios()
    assert 170 <= len(sc) <= 190
    assert len({s.id for s in sc}) == len(sc)


def test_attention_grid_is_16k_tokens_and_2048_channels():
    sc = get_task("attention_fwd").scenarios()
    grid = [
        s.params
        for s in sc
        if s.params["head_dim"] in (64, 128, 256)
        and s.params["heads_q"] == s.params["heads_kv"]
        and s.params["seqlen_q"] == s.params["seqlen_k"]
        and s.params["seqlen_q"] >= 512
        and s.params["batch"] * s.params["seqlen_q"] == 16384
        and s.params["heads_q"] * s.params["head_dim"] == 2048
    ]
    seqlens = {p["seqlen_q"] for p in grid}
    assert seqlens == {512, 1024, 2048, 4096, 8192, 16384}
    assert len(grid) == 2 * 3 * 6 * 2


def test_attention_scenarios_cover_every_axis():
    ps = [s.params for s in get_task("attention_fwd").scenarios()]
    assert {p["dtype"] for p in ps} == {"bf16", "fp16"}
    assert {64, 96, 128, 192, 256} <= {p["head_dim"] for p in ps}
    assert {p["heads_q"] // p["heads_kv"] for p in ps} >= {1, 4, 8, 32}
    assert {1, 113, 1000, 3001} <= {p["seqlen_q"] for p in ps}
    assert any(p["seqlen_q"] < p["seqlen_k"] and p["causal"] for p in ps)
    assert any(p["seqlen_q"] > p["seqlen_k"] and p["causal"] for p in ps)  # rows that see no key


def test_quick_subset_is_small_and_covers_every_axis():
    t = get_task("attention_fwd")
    quick = [s.params for s in t.select("quick")]
    assert 10 <= len(quick) <= 16
    assert {p["dtype"] for p in quick} == {"bf16", "fp16"}
    assert {p["head_dim"] for p in quick} == {64, 96, 128, 192, 256}
    assert {p["causal"] for p in quick} == {True, False}
    assert {p["heads_q"] // p["heads_kv"] for p in quick} >= {1, 8, 32}
    assert any(p["seqlen_q"] == 113 for p in quick)
    assert any(p["seqlen_q"] < p["seqlen_k"] for p in quick)
    assert any(p["seqlen_q"] > p["seqlen_k"] and p["causal"] for p in quick)


def test_selecting_unknown_scenario_ids_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown scenario"):
        get_task("attention_fwd").select(["bf16_nope"])


def test_selecting_by_comma_separated_ids():
    t = get_task("matmul_cpu")
    assert [s.id for s in t.select("m7_n13_k5,m1_n1_k1")] == ["m7_n13_k5", "m1_n1_k1"]


def test_attention_flops_match_the_anchor_formula():
    # anchors: 4*B*H*S*S*D, halved for causal when Sq == Sk
    assert attention_flops(4, 4096, 4096, 16, 128, False) == 4 * 4 * 16 * 4096 * 4096 * 128
    assert attention_flops(4, 4096, 4096, 16, 128, True) == 2 * 4 * 16 * 4096 * 4096 * 128
    # and for Sq != Sk: avg_Sk = (max(0, Sk - Sq) + Sk) / 2
    assert math.isclose(attention_flops(2, 256, 8192, 16, 128, True), 4 * 2 * 16 * 256 * (7936 + 8192) / 2 * 128)


def test_attention_scale_is_one_over_sqrt_head_dim():
    for s in get_task("attention_fwd").scenarios():
        assert math.isclose(s.params["softmax_scale"], 1 / math.sqrt(s.params["head_dim"]))


def test_matmul_scenarios_include_shapes_no_tile_divides():
    ps = [s.params for s in get_task("matmul_cpu").scenarios()]
    assert any(all(p[x] % 2 == 1 for x in ("m", "n", "k")) and p["m"] > 64 for p in ps)
    assert any(p["m"] == 1 for p in ps)


def test_attention_child_keeps_flash_attn_4_compiles_in_the_harness_cache(monkeypatch, tmp_path):
    # flash-attn-4 compiles every new shape on its first call; its on-disk cache must be on, under the
    # harness's cache folder where the child is uncontained, so that a second evaluation does not compile again
    # (a contained child's {cache} is its own: tests/harness/test_child_sandbox.py)
    from gpu_harness.build import cache_dir
    from gpu_harness.runner import with_cache_folder

    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED", raising=False)
    monkeypatch.delenv("FLASH_ATTENTION_CUTE_DSL_CACHE_DIR", raising=False)
    env = with_cache_folder(get_task("attention_fwd").child_env(), str(cache_dir()))
    assert env == {
        "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "1",
        "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": str(tmp_path / "flash_attn_cute"),
    }


def test_attention_child_leaves_a_flash_attn_4_cache_setting_of_the_user_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED", "0")
    monkeypatch.setenv("FLASH_ATTENTION_CUTE_DSL_CACHE_DIR", str(tmp_path / "mine"))
    assert get_task("attention_fwd").child_env() == {}
