"""gemm_bias_gelu on the GPU machine, beyond the harness's scenarios: the task's 18 scenario shapes, k = 0..17 (TMA
needs 16-byte row strides: k % 8 != 0 goes through the zero-padded repack), odd n, m = 1..33 (the CUDA-core kernel
and the wgmma kernel's partly empty tiles), operands and out 2 bytes off a 16-byte boundary (slices of a buffer;
the repack and the element-by-element stores), 16-byte but not 128-byte aligned bases, and each kernel forced on
shapes the dispatch would not give it (variant 1: the CUDA-core kernel, 2: the wgmma kernel's wide tile
(KSEEK_BN), 3: its narrow 128 x 64 tile; variant 0 takes the narrow one below ~132 wide tiles; 4: v2's
gemm_skinny, mma.sync; v3's 5 / 6: wide / narrow cooperative, 8 / 9: wide / narrow ping-pong; v5's 10: the
dispatch's wgmma kernel without thread-block clusters, v7's 10: the 256 x 128 cooperative tile, in v8 clustered;
v22's 11: gemm_skinny_ring, W through a TMA ring split over k in a cluster; a version without it runs its dispatch).
Each case checks the relative L2 error against a float64 reference at the task's tolerance (1.5 x torch eager's
error on the same inputs + 1e-4, tasks/gemm_bias_gelu/task.toml [tolerance]), guard elements around out that must
stay untouched, bit-for-bit repeatability, and finite output. Torch only, no Django. Run from the repository root:

    python3 lab/gemm_bias_gelu/tools/check_shapes.py [LIB.so | SOURCE.cu] [--quick] [-D NAME=VALUE ...]

SOURCE.cu defaults to lab/gemm_bias_gelu/versions/v4_stages5.cu; -D defines are passed to nvcc (tile variants).
--quick: a few small shapes covering every path, for compute-sanitizer (memcheck, racecheck, synccheck).
Prints PASS or FAIL per case and a last line `checked N shapes, F failed`; exits 1 if any failed. The cases with
m*n*k >= 2^30 also print the second call's time (one call, for orientation only: the harness measures).
"""

import ctypes
import os
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import build

REPO = Path(__file__).resolve().parents[3]
DEFAULT_SOURCE = REPO / "lab" / "gemm_bias_gelu" / "versions" / "v4_stages5.cu"
# the task's scenarios (tasks/gemm_bias_gelu/task.toml), in its order
SCENARIOS = [(1, 1, 1), (7, 13, 5), (333, 777, 999), (1, 4096, 4096), (16, 4096, 4096), (128, 128, 128),
             (1000, 1000, 1000), (1024, 1024, 1024), (2048, 2048, 2048), (4095, 4095, 4095), (4096, 4096, 4096),
             (4096, 4097, 4096), (8192, 3072, 768), (2048, 8192, 2048), (4096, 11008, 4096), (4096, 4096, 8192),
             (8192, 8192, 4095), (8192, 8192, 8192)]  # fmt: skip
ALIGNED = (0, 0, 0, 0)  # elements past a 16-byte boundary: (a, w, bias, out)
OFFSETS = [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 1), (1, 1, 1, 1), (3, 5, 7, 1), (8, 8, 0, 0)]
GUARD = 64  # elements either side of out that the kernel must not write (a multiple of 8)
SENTINEL = -12345.0
FACTOR, FLOOR, DEFAULT_ERROR = 1.5, 1e-4, 3e-3  # task.toml [tolerance]
TINY_NUMEL, TINY_TOL = 64, 4e-3  # a handful of outputs: one bf16 rounding (2^-8) may beat torch's two by luck


def cases_full():
    cases = [(m, n, k, 0, ALIGNED) for m, n, k in SCENARIOS]
    # k = 0..17 on two tile rows and two tile columns: the repack (k % 8), TMA's zero fill past k, k = 0's path
    for k in range(18):
        cases.append((200, 136, k, 0, ALIGNED))  # the narrow tile (4 wide tiles)
        if k:
            cases.append((200, 136, k, 2, ALIGNED))
    # odd n, partial tiles, more tile rows than KSEEK_GROUP_M, n below one tile
    for m, n, k in [(300, 3, 64), (257, 1001, 72), (129, 129, 129), (1000, 3000, 256), (1100, 130, 520),
                    (640, 8, 4104), (131, 2049, 1000), (2500, 777, 136)]:  # fmt: skip
        cases += [(m, n, k, 0, ALIGNED), (m, n, k, 2, ALIGNED), (m, n, k, 3, ALIGNED)]
    # decode-like and small m: the CUDA-core kernel (variant 0 up to KSEEK_SMALL_M) and the wgmma kernel
    for m in (1, 2, 15, 16, 17, 33):
        for v in (0, 1, 2, 3, 4):
            cases.append((m, 515, 264, v, ALIGNED))
    # gemm_skinny (variant 4, v2 on) forced: several 16-row blocks, k past its 8 warps' chunks or below one, odd n,
    # bias and out off their 16-byte boundaries (it reads a and w only where 16-byte aligned with k % 8 == 0)
    cases += [(128, 128, 128, 4, ALIGNED), (33, 100, 40, 4, (0, 0, 1, 1)), (7, 13, 8, 4, ALIGNED),
              (300, 201, 72, 4, ALIGNED), (5, 3, 4104, 4, (0, 0, 1, 1)), (16, 4097, 4096, 4, ALIGNED),
              (64, 4096, 520, 4, (8, 8, 0, 0)), (1, 1, 8, 4, ALIGNED)]  # fmt: skip
    cases += [(1, 4097, 4096, 0, ALIGNED), (1, 4096, 4095, 0, ALIGNED), (16, 1000, 1000, 0, ALIGNED)]
    # operands and out off their 16-byte boundaries (and 16- but not 128-byte aligned: (8, 8, 0, 0))
    for m, n, k in [(333, 777, 999), (256, 384, 512), (1000, 1000, 1000), (16, 4096, 4096), (1, 4096, 4096)]:
        cases += [(m, n, k, 0, o) for o in OFFSETS]
    # k = 0: out = gelu(bias)
    cases += [(5, 7, 0, 0, ALIGNED), (300, 200, 0, 0, ALIGNED), (300, 200, 0, 1, ALIGNED)]
    # the CUDA-core kernel forced on shapes the dispatch gives the wgmma kernel
    cases += [(333, 777, 999, 1, ALIGNED), (64, 128, 4096, 1, ALIGNED), (100, 50, 37, 1, (1, 1, 1, 1))]
    # the wide tile on shapes the dispatch gives the narrow one, and the narrow one on large shapes
    cases += [(333, 777, 999, 2, (1, 1, 1, 1)), (1000, 1000, 1000, 2, ALIGNED), (4095, 4095, 4095, 3, ALIGNED),
              (2048, 2048, 2048, 3, ALIGNED)]  # fmt: skip
    # several tiles a CTA with fewer k-blocks than stages (1 and 3): the ping-pong turns and the barrier parities
    cases += [(2048, 1920, 40, 2, ALIGNED), (4096, 2048, 136, 2, ALIGNED), (4000, 3000, 200, 3, (0, 0, 1, 1))]
    # v3: each of the wgmma kernels forced (5 / 6: wide / narrow cooperative, 8 / 9: wide / narrow ping-pong), on
    # one tile a CTA and on several, full tiles (the epilogue without bounds checks) and partial ones, bias off 4 bytes
    for m, n, k, o in [
        (257, 1001, 72, ALIGNED),
        (129, 129, 129, (1, 1, 1, 1)),
        (2048, 1920, 40, ALIGNED),
        (4000, 3000, 200, (0, 0, 1, 1)),
        (1024, 1024, 256, ALIGNED),
        (1024, 1024, 256, (0, 0, 1, 0)),
    ]:
        cases += [(m, n, k, v, o) for v in (5, 6, 8, 9)]
    # v5's clusters of two CTAs along m: an odd count of tile rows (the last cluster's second CTA lies past m) with
    # several units a cluster, ping-pong and cooperative; and the dispatch's kernel without clusters (variant 10)
    cases += [(2176, 4096, 512, 0, ALIGNED), (2176, 4096, 512, 2, (0, 0, 1, 1)), (1152, 1024, 256, 5, ALIGNED),
              (1152, 1024, 256, 8, ALIGNED), (2304, 520, 4104, 3, ALIGNED), (2176, 4096, 512, 10, ALIGNED),
              (1000, 1000, 1000, 10, ALIGNED), (4096, 4096, 4096, 10, ALIGNED)]  # fmt: skip
    # v7's dispatch into the 256 x 128 tiles (k >= 4096, two waves of them): partial tile rows and columns, bias
    # and out off their 4-byte pairs, and the forced tile (variant 10) on several tiles a CTA, fewer k-blocks than
    # stages
    cases += [(2176, 4096, 4104, 0, ALIGNED), (4000, 3000, 4104, 0, (0, 0, 1, 1)), (4000, 3000, 200, 10, ALIGNED),
              (3000, 2000, 4096, 10, (0, 0, 1, 0))]  # fmt: skip
    # v8's clusters of two big tiles along n: an odd count of tile columns (the last cluster's second tile lies past
    # n) with several units a cluster and fewer k-blocks than stages, and the last tile row's second share of A past m
    cases += [(4000, 2900, 136, 10, ALIGNED), (700, 2900, 300, 10, (0, 0, 1, 1))]  # fmt: skip
    # v22's ring (variant 11) forced: m below 16 and several 16-row blocks, n past its 128-row tiles or below one, k
    # below one block a CTA (ranks with no k-block) and off a block, bias and out off their 16-byte boundaries, 16-
    # but not 128-byte aligned operands; then the dispatch into it (m <= 16, n and k >= 1024) with partial tiles
    cases += [(16, 4096, 4096, 11, ALIGNED), (1, 300, 8, 11, ALIGNED), (3, 129, 72, 11, (0, 0, 1, 1)),
              (15, 1100, 1040, 11, (8, 8, 0, 0)), (33, 200, 4104, 11, ALIGNED), (16, 100, 520, 11, (0, 0, 1, 1)),
              (7, 4097, 1024, 11, ALIGNED), (15, 4097, 1032, 0, ALIGNED), (2, 1024, 1024, 0, (0, 0, 1, 1))]  # fmt: skip
    return cases


def cases_quick():
    return [(7, 13, 5, 0, ALIGNED), (16, 520, 264, 0, ALIGNED), (200, 136, 13, 0, ALIGNED), (257, 1001, 72, 2, ALIGNED), (131, 2049, 1000, 3, ALIGNED),
            (300, 200, 0, 0, ALIGNED), (129, 129, 129, 0, (1, 1, 1, 1)), (1, 4097, 256, 0, ALIGNED),
            (300, 520, 1024, 0, ALIGNED), (33, 100, 40, 1, (3, 5, 7, 1)), (33, 100, 40, 4, (0, 0, 1, 1)),
            (700, 900, 264, 0, ALIGNED), (4096, 2048, 136, 2, ALIGNED), (1024, 1024, 256, 5, ALIGNED),
            (1024, 1024, 256, 9, (0, 0, 1, 0)), (1152, 1024, 256, 8, ALIGNED), (300, 520, 1024, 10, ALIGNED),
            (15, 1100, 1040, 11, (0, 0, 1, 1)), (3, 300, 8, 11, ALIGNED)]  # fmt: skip


class Gemm:
    def __init__(self, lib_path):
        try:  # the driver's cuTensorMapEncodeTiled, where the library was linked without -lcuda (as the harness does)
            ctypes.CDLL("libcuda.so.1", mode=os.RTLD_GLOBAL)
        except OSError:
            pass
        self._lib = ctypes.CDLL(str(lib_path))
        self._fn = self._lib.kseek_gemm_bias_gelu_variant
        self._fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 4 + [ctypes.c_int] * 3
        self._fn.restype = ctypes.c_int

    def __call__(self, variant, a, w, bias, out, m, n, k):
        return self._fn(variant, a.data_ptr(), w.data_ptr(), bias.data_ptr(), out.data_ptr(), m, n, k)


def place(numel, offset, fill):
    """A bf16 view of numel elements, `offset` elements past a 16-byte boundary, inside a guarded buffer."""
    buf = torch.full((numel + 2 * GUARD + 16,), fill, dtype=torch.bfloat16, device="cuda")
    start = GUARD + offset
    return buf, buf[start : start + numel]


def inputs(m, n, k, offsets, seed):
    """a ~ N(0, 1), w ~ N(0, 1/k), bias ~ N(0, 0.5^2) as the task makes them, at the given element offsets."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    oa, ow, ob, _ = offsets
    _, a = place(m * k, oa, 0.0)
    a.copy_(torch.randn(m * k, device="cuda", generator=g).to(torch.bfloat16))
    _, w = place(n * k, ow, 0.0)
    w.copy_((torch.randn(n * k, device="cuda", generator=g) * max(k, 1) ** -0.5).to(torch.bfloat16))
    _, bias = place(n, ob, 0.0)
    bias.copy_((torch.randn(n, device="cuda", generator=g) * 0.5).to(torch.bfloat16))
    return a.view(m, k), w.view(n, k), bias


def rel_err(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


def run_one(gemm, m, n, k, variant, offsets, seed):
    a, w, bias = inputs(m, n, k, offsets, seed)
    obuf, out = place(m * n, offsets[3], SENTINEL)
    out = out.view(m, n)
    status = gemm(variant, a, w, bias, out, m, n, k)
    torch.cuda.synchronize()
    if status != 0:
        return False, f"status {status}"
    ref = F.gelu(a.double() @ w.double().T + bias.double())
    err = rel_err(out, ref)
    try:  # what task.toml's tolerance is relative to: cuBLAS, two bf16 roundings
        eager_err = rel_err(F.gelu(F.linear(a, w, bias)), ref)
    except RuntimeError:  # torch refused the shape: the task's default_error
        eager_err = DEFAULT_ERROR
    tol = FACTOR * eager_err + FLOOR
    if m * n <= TINY_NUMEL:
        tol = max(tol, TINY_TOL)
    start = GUARD + offsets[3]
    guards = torch.cat([obuf[:start], obuf[start + m * n :]])
    untouched = bool((guards == torch.tensor(SENTINEL, dtype=torch.bfloat16, device="cuda")).all().item())
    finite = bool(torch.isfinite(out).all().item())
    out2 = torch.empty_like(out)
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    status2 = gemm(variant, a, w, bias, out2, m, n, k)
    t1.record()
    torch.cuda.synchronize()
    same = status2 == 0 and torch.equal(out.view(torch.int16), out2.view(torch.int16))
    ok = untouched and same and finite and err <= tol
    text = (
        f"err {err:.3e} tol {tol:.3e} (eager {eager_err:.3e}) guards_ok={untouched} repeat_same={same} finite={finite}"
    )
    if m * n * k >= 2**30:
        ms = t0.elapsed_time(t1)
        text += f" | {ms:.3f} ms, {2 * m * n * k / ms / 1e9:.1f} TFLOP/s (one call)"
    return ok, text


def wide_tile(target, defines):
    """The build's KSEEK_BN: a -D define's, else the source's first `#define KSEEK_BN` (a screen's candidate puts
    its knobs in front of the file's defaults), else 128."""
    for d in defines:
        if d.startswith("-DKSEEK_BN="):
            return int(d.split("=", 1)[1])
    found = re.search(r"^#define KSEEK_BN (\d+)", Path(target).read_text(), re.M) if target.endswith(".cu") else None
    return int(found.group(1)) if found else 128


def main(argv):
    quick = "--quick" in argv
    defines, rest, i = [], [], 0
    while i < len(argv):
        if argv[i] == "-D" and i + 1 < len(argv):
            defines.append("-D" + argv[i + 1])
            i += 2
            continue
        if argv[i].startswith("-D"):
            defines.append(argv[i])
        elif not argv[i].startswith("--"):
            rest.append(argv[i])
        i += 1
    target = rest[0] if rest else str(DEFAULT_SOURCE)
    lib = build(Path(target), extra=tuple(defines)) if target.endswith(".cu") else target
    gemm = Gemm(lib)
    print(f"library {lib} {' '.join(defines)}", flush=True)
    cases = cases_quick() if quick else cases_full()
    failed = skipped = 0
    wide = wide_tile(target, defines)
    for i, (m, n, k, variant, offsets) in enumerate(cases):
        if variant == 8 and wide > 128:  # launch_wgmma refuses it (status 7): no ping-pong form of so wide a tile
            print(
                f"SKIP m={m} n={n} k={k} variant=8 offsets={offsets}: KSEEK_BN {wide} has no ping-pong form", flush=True
            )
            skipped += 1
            continue
        try:
            ok, text = run_one(gemm, m, n, k, variant, offsets, seed=i)
        except RuntimeError as e:  # a CUDA error (illegal address, launch failure) poisons the context: stop here
            print(f"FAIL m={m} n={n} k={k} variant={variant} offsets={offsets}: {e}", flush=True)
            print(f"checked {i + 1} shapes, {failed + 1} failed (stopped at a CUDA error)")
            return 1
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} m={m} n={n} k={k} variant={variant} offsets={offsets}: {text}", flush=True)
    print(f"checked {len(cases) - skipped} shapes, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
