"""Benchmark (GPU): the attention judge's fp32 reference at several chunk sizes (scores held at once).

Smaller chunks keep the passes over the scores in the H200's 60 MB L2 at the price of smaller GEMMs. Prints
milliseconds per reference (best of 3), the ratio against the current default, and the largest relative
difference from the default's result (chunking changes only the GEMM shapes, not the arithmetic).

    python3 bench/reference_chunks.py            # on a GPU host
"""

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":  # before torch's import: --help prints and exits on a host without a GPU too
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.gpu_timing import best_ms
from gpu_harness.tasks.attention_fwd import reference_module
from gpu_harness.tasks.attention_fwd import scenario as _sc
from gpu_harness.tasks.cuda_device import compare_torch

attention_reference = reference_module()
REFERENCE_CHUNK_ELEMS = attention_reference.REFERENCE_CHUNK_ELEMS
reference = attention_reference.chunked_reference

SHAPES = [
    ("bf16", 1, 16384, 16384, 16, 16, 128, False),
    ("bf16", 1, 16384, 16384, 16, 16, 128, True),
    ("fp16", 4, 4096, 4096, 8, 8, 256, False),
    ("bf16", 8, 2048, 2048, 32, 4, 128, True),
    ("fp16", 32, 512, 512, 32, 32, 64, False),
]
CHUNKS = [1 << 28, 1 << 26, 1 << 24, 1 << 22]


def main() -> dict[int, float]:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    totals = {c: 0.0 for c in CHUNKS}
    print(f"{'scenario':46}" + "".join(f"{f'2^{c.bit_length() - 1} ms':>11}" for c in CHUNKS) + "   max diff")
    for shape in SHAPES:
        p = _sc(*shape).params
        g = torch.Generator(device="cuda").manual_seed(1)
        dt = torch.bfloat16 if p["dtype"] == "bf16" else torch.float16
        q = torch.randn((p["batch"], p["seqlen_q"], p["heads_q"], p["head_dim"]), generator=g, device="cuda", dtype=dt)
        k = torch.randn((p["batch"], p["seqlen_k"], p["heads_kv"], p["head_dim"]), generator=g, device="cuda", dtype=dt)
        v = torch.randn_like(k)
        ref = None
        cells, diff = [], 0.0
        for c in CHUNKS:
            ms, (o, lse) = best_ms(lambda: reference(q, k, v, p["causal"], p["softmax_scale"], budget_elems=c))
            totals[c] += ms
            cells.append(ms)
            if ref is None:
                ref = (o, lse)
            else:
                diff = max(diff, compare_torch("O", o, ref[0]).rel_error, compare_torch("L", lse, ref[1]).rel_error)
        print(f"{_sc(*shape).id:46}" + "".join(f"{ms:11.1f}" for ms in cells) + f"   {diff:.1e}")
    base = totals[REFERENCE_CHUNK_ELEMS]
    print(
        "total ms "
        + "  ".join(f"2^{c.bit_length() - 1}: {t:.1f} (x{base / t:.2f} vs default)" for c, t in totals.items())
    )
    return totals


if __name__ == "__main__":
    main()
