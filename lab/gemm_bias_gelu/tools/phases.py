"""Where gemm_wgmma's time goes on one shape, from the phase log that a KSEEK_PHASES 1 build keeps (v9 on): each
CTA's span, and per consumer warpgroup the SM cycles spent waiting for its turn (ping-pong), for each tile's first
k-block, in the main loops and in the epilogues. Torch only. From the repository root, on the GPU machine:

    python3 lab/gemm_bias_gelu/tools/phases.py SOURCE.cu MxNxK [-D NAME=VALUE ...] [--calls N]

The log is the last call's (the earlier ones warm the caches). Cycles are the SM's clock64, so a phase's share of
the CTA is exact where the clock changed between runs; microseconds use the clock the CTA's own span gives.
The main loop's rate is 2 m n k over the CTAs' main-loop cycles: over their sum for ping-pong (the two
warpgroups' main loops take turns) and over their maximum for cooperative tiles (they run together); an H100's
dense bf16 peak is 4096 per SM a cycle. Beside the log, the last call as CUDA events around it time it: what the
CTAs' spans leave out is the launches and, where the operands need one, the repack.
"""

import argparse
import ctypes
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder's tools, however the script is loaded
from library_kernels import operands  # the inputs the cuBLAS paths were profiled on, the same seed and scales

from kernels.load import build

PHASES = ("turn", "first", "main", "epilogue")


def run(lib, m, n, k, calls):
    fn = lib.kseek_gemm_bias_gelu
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 3
    a, w, bias = operands(f"{m}x{n}x{k}")
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(calls):
        begin.record()
        status = fn(a.data_ptr(), w.data_ptr(), bias.data_ptr(), out.data_ptr(), m, n, k)
        end.record()
        if status:
            raise SystemExit(f"kseek_gemm_bias_gelu returned {status}")
    torch.cuda.synchronize()
    return begin.elapsed_time(end) * 1e3  # the last call's microseconds, the repack and the launches included


def read_log(lib, ctas):
    slots = lib.kseek_gemm_phase_slots()
    buf = (ctypes.c_ulonglong * (slots * ctas))()
    err = lib.kseek_gemm_phases(buf, ctas)
    if err:
        raise SystemExit(f"kseek_gemm_phases returned {err}")
    rows = [list(buf[i * slots : (i + 1) * slots]) for i in range(ctas)]
    return [r for r in rows if r[0]]  # CTAs that ran (the log is zero where none did)


def summarize(rows, m, n, k) -> dict:
    """The phase log's figures: rows are the log's CTAs (start ns, end ns of consumer 0 and 1, then per consumer
    the cycles of each of PHASES and its tiles). The clock is what the CTAs' cycles over their spans give (each
    consumer's phases fill its CTA's span but for the start and the end); a consumer's phases in microseconds are
    its means over the CTAs."""
    start0 = min(r[0] for r in rows)
    spans_ns = [max(r[1], r[2]) - r[0] for r in rows]
    cons = [[r[3 + 5 * c : 8 + 5 * c] for r in rows] for c in (0, 1)]  # [consumer][cta] -> turn first main epi tiles
    cycles = sum(sum(cons[c][i][:4]) for i in range(len(rows)) for c in (0, 1))
    ghz = cycles / (2 * sum(spans_ns))
    consumers = []
    for c in (0, 1):
        per = list(zip(*cons[c]))
        phases = {name: statistics.mean(per[q]) / ghz / 1e3 for q, name in enumerate(PHASES)}
        consumers.append({"tiles": statistics.mean(per[4]), "us": phases})
    flop = 2.0 * m * n * k
    main_sum = sum(cons[0][i][2] + cons[1][i][2] for i in range(len(rows)))
    main_max = sum(max(cons[0][i][2], cons[1][i][2]) for i in range(len(rows)))
    return {
        "ctas": len(rows),
        "kernel_us": (max(max(r[1], r[2]) for r in rows) - start0) / 1e3,
        "start_spread_us": (max(r[0] for r in rows) - start0) / 1e3,
        "ghz": ghz,
        "span_median_us": statistics.median(spans_ns) / 1e3,
        "span_max_us": max(spans_ns) / 1e3,
        "consumers": consumers,
        "flop_per_cycle_sum": flop / main_sum,  # ping-pong: the two consumers' main loops take turns
        "flop_per_cycle_max": flop / main_max,  # cooperative: they run together
    }


def report(rows, m, n, k, call_us):
    f = summarize(rows, m, n, k)
    print(
        f"{m}x{n}x{k}: {f['ctas']} CTAs, kernel {f['kernel_us']:.2f} us, CTA starts spread "
        f"{f['start_spread_us']:.2f} us, clock ~{f['ghz']:.2f} GHz"
    )
    # what the CTAs' spans leave out of the call: launches, and a repack where the operands need one (with a
    # dependent launch, v16 on, the CTAs' spans already hold their wait for the repack)
    print(f"the call (CUDA events around it): {call_us:.2f} us, {call_us - f['kernel_us']:.2f} us outside the CTAs")
    print(f"CTA span us: median {f['span_median_us']:.2f}, max {f['span_max_us']:.2f}")
    for c, consumer in enumerate(f["consumers"]):
        cells = ", ".join(f"{name} {us:.2f} us" for name, us in consumer["us"].items())
        print(f"consumer {c}: tiles a CTA {consumer['tiles']:.2f}; mean a CTA: {cells}")
    print(
        f"main loop FLOP a cycle an SM: {f['flop_per_cycle_sum']:.0f} over the sum (ping-pong), "
        f"{f['flop_per_cycle_max']:.0f} over the max (cooperative); peak 4096"
    )


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("shape", help="MxNxK")
    parser.add_argument("-D", dest="defines", action="append", default=[], help="NAME=VALUE, a knob of the kernel")
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args(argv)
    m, n, k = (int(x) for x in args.shape.split("x"))
    extra = ("-DKSEEK_PHASES=1", *(f"-D{d}" for d in args.defines))
    try:  # cuTensorMapEncodeTiled, where the library was linked without -lcuda
        ctypes.CDLL("libcuda.so.1", mode=os.RTLD_GLOBAL)
    except OSError:
        pass
    lib = ctypes.CDLL(str(build(args.source, extra=extra)))
    if not hasattr(lib, "kseek_gemm_phases"):
        raise SystemExit(f"{args.source} keeps no phase log (KSEEK_PHASES is v9's on)")
    call_us = run(lib, m, n, k, args.calls)
    report(read_log(lib, 1024), m, n, k, call_us)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
