"""Benchmark (GPU): the judge's fused fp32 reference kernel against the torch reference it replaces.

For every scenario of the chosen set: one input from a fixed seed, both references timed (the torch one
once, the fused one best of 2 after a warm-up call), and how far apart they are (relative error of O and of
LSE, -inf placement included: compare_torch). Then the same on 1 query row in 8 (the spot checks of timed
outputs). Prints a row per scenario, the totals and their ratio, and the largest differences.

    python3 bench/fused_reference.py [--scenarios full|quick|ID,...] [--json FILE]    # on a GPU host
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.gpu_timing import best_ms
from gpu_harness import get_task
from gpu_harness.tasks.attention_fwd import reference_module
from gpu_harness.tasks.cuda_device import compare_torch

attention_reference = reference_module()
FusedReference = attention_reference.FusedReference
reference = attention_reference.chunked_reference


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", default="full")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    task = get_task("attention_fwd")
    fused = FusedReference()
    t0 = time.perf_counter()
    if not fused.ready():
        print(f"the fused reference is not available: {fused.note}")
        return 1
    print(f"fused reference: {fused.note}, build {fused.build_s:.1f} s, ready after {time.perf_counter() - t0:.1f} s")
    rows_out, tot = [], {"torch_ms": 0.0, "fused_ms": 0.0, "torch_rows_ms": 0.0, "fused_rows_ms": 0.0}
    worst = {"o": 0.0, "lse": 0.0, "o_rows": 0.0, "lse_rows": 0.0, "bad": 0}
    print(f"{'scenario':48}{'torch ms':>10}{'fused ms':>10}{'x':>7}{'O diff':>10}{'LSE diff':>10}")
    for sc in task.select(args.scenarios):
        p = sc.params
        inp = task.make_inputs(p, 1234)
        a = (inp["q"], inp["k"], inp["v"], p["causal"], p["softmax_scale"])
        t_ms, (ro, rl) = best_ms(lambda: reference(*a), 1)
        f_ms, (fo, fl) = best_ms(lambda: fused(*a, p["dtype"]), 3)
        co, cl = compare_torch("O", fo, ro), compare_torch("LSE", fl, rl)
        g = torch.Generator().manual_seed(5)
        n = max(1, p["seqlen_q"] // 8)
        rows = torch.randperm(p["seqlen_q"], generator=g)[:n].sort().values.cuda()
        tr_ms, (rro, rrl) = best_ms(lambda: reference(*a, rows=rows), 1)
        fr_ms, (fro, frl) = best_ms(lambda: fused(*a, p["dtype"], rows=rows), 3)
        cro, crl = compare_torch("O", fro, ro[:, rows]), compare_torch("LSE", frl, rl[:, :, rows])
        bad = (
            co.bad_nonfinite
            + co.mismatched_special
            + cl.bad_nonfinite
            + cl.mismatched_special
            + cro.bad_nonfinite
            + cro.mismatched_special
            + crl.bad_nonfinite
            + crl.mismatched_special
        )
        for key, val in (("torch_ms", t_ms), ("fused_ms", f_ms), ("torch_rows_ms", tr_ms), ("fused_rows_ms", fr_ms)):
            tot[key] += val
        worst["o"], worst["lse"] = max(worst["o"], co.rel_error), max(worst["lse"], cl.rel_error)
        worst["o_rows"], worst["lse_rows"] = max(worst["o_rows"], cro.rel_error), max(worst["lse_rows"], crl.rel_error)
        worst["bad"] += bad
        rows_out.append(
            {
                "id": sc.id,
                "torch_ms": t_ms,
                "fused_ms": f_ms,
                "torch_rows_ms": tr_ms,
                "fused_rows_ms": fr_ms,
                "o_diff": co.rel_error,
                "lse_diff": cl.rel_error,
                "o_rows_diff": cro.rel_error,
                "lse_rows_diff": crl.rel_error,
                "special_mismatch": bad,
                "fused_tflops": sc.flops / (f_ms * 1e-3) / 1e12,
            }
        )
        print(
            f"{sc.id:48}{t_ms:10.2f}{f_ms:10.2f}{t_ms / f_ms:7.2f}{co.rel_error:10.1e}{cl.rel_error:10.1e}"
            + (f"  {bad} -inf/NaN placements differ" if bad else "")
        )
        del inp, ro, rl, fo, fl, rro, rrl, fro, frl
    print(
        f"\ntotal, whole outputs: torch {tot['torch_ms'] / 1e3:.2f} s, fused {tot['fused_ms'] / 1e3:.2f} s, "
        f"x{tot['torch_ms'] / tot['fused_ms']:.2f}"
    )
    print(
        f"total, 1 row in 8:    torch {tot['torch_rows_ms'] / 1e3:.2f} s, fused {tot['fused_rows_ms'] / 1e3:.2f} s, "
        f"x{tot['torch_rows_ms'] / tot['fused_rows_ms']:.2f}"
    )
    print(
        f"largest difference fused vs torch: O {worst['o']:.2e}, LSE {worst['lse']:.2e}; on sampled rows: "
        f"O {worst['o_rows']:.2e}, LSE {worst['lse_rows']:.2e}; -inf/NaN placements that differ: {worst['bad']}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"device": torch.cuda.get_device_name(), "totals": tot, "worst": worst, "scenarios": rows_out}, indent=1
            )
        )
    return 0 if worst["bad"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
