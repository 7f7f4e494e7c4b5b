"""Where ptxas puts the released kernel's softmax (kernels/attention_fwd_sm90/README.md, "Where ptxas puts the
softmax"): at d256 every exp2 of a key block must run between wgmma.wait_group 1 and 0, under O += P V. v15's
shared store of the row sums is what holds them there (x1.020 at d256 on the H200); without it ptxas moves most
of them after the wait. Needs nvcc (CI has it) and the cuobjdump/nvdisasm wheels of the dev dependencies.

The SASS read is the harness's build of the released file, the one `test_compile_checks.py` makes too (one nvcc
run of the largest file CI compiles, not two): its device code is compiled as `kernels.load`'s, which the last test
holds to."""

from pathlib import Path

from gpu_harness.build import build
from gpu_harness.build import compile_command as harness_command
from kernels.load import ATTENTION_SM90
from kernels.load import compile_command as shipped_command

from .conftest import load_kernel_tool, needs_nvcc


def _tool():
    return load_kernel_tool("exp2_placement")


def test_counts_only_the_exp2s_between_a_wait_one_and_the_next_wait_zero():
    t = _tool()
    ins = [
        "MUFU.EX2 R1, R2",  # before any wait: not counted
        "WARPGROUP.DEPBAR.LE gsb0, 0x1",
        "MUFU.EX2 R3, R4",
        "FMUL R5, R6, R7",
        "MUFU.EX2 R8, R9",
        "WARPGROUP.DEPBAR.LE gsb0, 0x0",
        "MUFU.EX2 R10, R11",  # after the wait: not counted
        "WARPGROUP.DEPBAR.LE gsb0, 0x0",  # a wait 0 with no wait 1 before it: no entry
        "WARPGROUP.DEPBAR.LE gsb0, 0x1",
        "WARPGROUP.DEPBAR.LE gsb0, 0x0",
    ]
    assert t.exp2_between_waits(ins) == [2, 0]


def test_functions_split_cuobjdump_output_by_function():
    t = _tool()
    sass = (
        "\n\t\tFunction : _Zfoo\n        /*0000*/                   MOV R1, c[0x0][0x28] ;   /* 0x00 */\n"
        "        /*0010*/                   MUFU.EX2 R2, R3 ;   /* 0x00 */\n"
        "\n\t\tFunction : _Zbar\n        /*0000*/                   EXIT ;   /* 0x00 */\n"
    )
    assert t.functions(sass) == {"_Zfoo": ["MOV R1, c[0x0][0x28]", "MUFU.EX2 R2, R3"], "_Zbar": ["EXIT"]}


@needs_nvcc
def test_at_d256_every_exp2_of_the_block_runs_under_p_v():
    built = build(ATTENTION_SM90, "cuda")
    assert built.ok, built.reason
    placement = _tool().placement(built.lib_path)
    # every wgmma kernel instance is there: three kernels (one tile, one tile split-KV, persistent) x (five head
    # dims + d96's second tile) x two dtypes
    assert len(placement) == 36, sorted(placement)
    assert "attn_wgmma_kernel<96, bf16, tile 1>" in placement, sorted(placement)
    assert "attn_wgmma_kernel<96, bf16, tile 1, split>" in placement, sorted(placement)
    # d256 takes 64 keys a block: each thread computes 32 P values and 2 alphas (one per row), all exp2s
    for dtype in ("bf16", "fp16"):
        for kernel in (
            f"attn_wgmma_kernel<256, {dtype}>",
            f"attn_wgmma_kernel<256, {dtype}, split>",
            f"attn_wgmma_persistent_kernel<256, {dtype}>",
        ):
            counts = placement[kernel]
            assert counts and all(n == 64 // 2 + 2 for n in counts), (kernel, counts)


def _device_code_flags(command: list[str]) -> list[str]:
    # what decides the SASS: the optimisation level, the language standard, the target, line info, macros and
    # fast math; -Xptxas -v (the harness's resource report) and the linker's flags do not change it
    prefixes = (
        "-O",
        "-std",
        "-gencode",
        "-arch",
        "-code",
        "-lineinfo",
        "-G",
        "-D",
        "-use_fast_math",
        "--use_fast_math",
    )
    return [flag for flag in command if flag.startswith(prefixes)]


def test_the_harness_compiles_the_device_code_as_the_shipped_build_does(monkeypatch):
    # both link the driver library where the machine has one (the linker's flags differ then): as on a GPU host
    monkeypatch.setattr("gpu_harness.build._libcuda_dir", lambda: "/usr/local/cuda/lib64/stubs")
    monkeypatch.setattr("kernels.load._libcuda_dir", lambda: "/usr/local/cuda/lib64/stubs")
    shipped = shipped_command(Path("k.cu"), Path("k.so"))
    harness = harness_command("cuda", Path("k.cu"), Path("k.so"), None)
    assert _device_code_flags(shipped) == _device_code_flags(harness)
    assert "-gencode=arch=compute_90a,code=sm_90a" in _device_code_flags(shipped)
    # whatever else the harness hands ptxas is its report
    assert [harness[i + 1] for i, flag in enumerate(harness) if flag == "-Xptxas"] == ["-v"]
