"""Benchmark (GPU): the attention judge's reference, fp32 GEMMs against TF32 GEMMs on split operands.

bf16 and fp16 values have at most 11 significant bits, so they are exact in TF32 (11 bits): Q @ K^T on
tensor cores in TF32 makes the same products as fp32 and accumulates in fp32. P (fp32 probabilities) is not
exact in TF32, so P @ V is done as P_hi @ V + P_lo @ V, with P_hi = P cut to TF32 and P_lo = P - P_hi. This
script times both references on the largest grid shapes and reports how far apart they are, against the
tolerances the judge uses (the candidate's error bound is ~1e-3 bf16, ~1e-4 fp16).

    python3 bench/attention_reference.py            # on a GPU host
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from gpu_harness.tasks.attention_fwd import _sc, compare_torch, reference  # noqa: E402

try:
    from gpu_harness.tasks.attention_fwd import reference_tf32
except ImportError:
    reference_tf32 = None


def timed(fn, reps=3):
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, out


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    shapes = [("bf16", 1, 16384, 16384, 16, 16, 128, False), ("bf16", 1, 16384, 16384, 16, 16, 128, True),
              ("fp16", 1, 16384, 16384, 8, 8, 256, False), ("bf16", 8, 2048, 2048, 32, 4, 128, True),
              ("fp16", 32, 512, 512, 32, 32, 64, False), ("bf16", 4, 113, 3001, 16, 16, 128, True)]
    print(f"{'scenario':48} {'fp32 ms':>9} {'tf32x ms':>9} {'ratio':>6} {'O diff':>9} {'LSE diff':>9}")
    for shape in shapes:
        sc = _sc(*shape)
        p = sc.params
        g = torch.Generator(device="cuda").manual_seed(1)
        dt = torch.bfloat16 if p["dtype"] == "bf16" else torch.float16
        q = torch.randn((p["batch"], p["seqlen_q"], p["heads_q"], p["head_dim"]), generator=g, device="cuda", dtype=dt)
        k = torch.randn((p["batch"], p["seqlen_k"], p["heads_kv"], p["head_dim"]), generator=g, device="cuda", dtype=dt)
        v = torch.randn_like(k)
        ms32, (o32, l32) = timed(lambda: reference(q, k, v, p["causal"], p["softmax_scale"]))
        if reference_tf32 is None:
            print(f"{sc.id:48} {ms32:9.1f}")
            continue
        msx, (ox, lx) = timed(lambda: reference_tf32(q, k, v, p["causal"], p["softmax_scale"]))
        do = compare_torch("O", ox, o32).rel_error
        dl = compare_torch("LSE", lx, l32).rel_error
        print(f"{sc.id:48} {ms32:9.1f} {msx:9.1f} {ms32 / msx:6.2f} {do:9.2e} {dl:9.2e}")
        del o32, l32, ox, lx


if __name__ == "__main__":
    main()
