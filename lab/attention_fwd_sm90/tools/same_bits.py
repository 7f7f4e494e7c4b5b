"""Do two builds give the same output bit for bit? For a change that must not move a single bit (v18's skipped
rescale, say), on every head dim, both masks, GQA, Sq != Sk both ways, and long rows, with plain and with
scaled queries (a few keys then dominate each row, so row maxima move late). Run on the GPU machine:

    python3 lab/attention_fwd_sm90/tools/same_bits.py LIB_A.so LIB_B.so

Prints one line per shape and dtype, then "N/N identical"; exits 1 if any output differs.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import AttentionFwd

SHAPES = [  # B, Sq, Sk, Hq, Hkv, D, causal, query scale
    (1, 1024, 1024, 8, 8, 64, False, 1.0),
    (1, 1024, 1024, 8, 8, 64, True, 4.0),
    (1, 2048, 2048, 8, 8, 96, False, 1.0),
    (1, 2048, 2048, 8, 8, 96, True, 4.0),
    (1, 4096, 4096, 8, 2, 128, False, 1.0),
    (1, 4096, 4096, 8, 2, 128, True, 4.0),
    (1, 113, 3001, 8, 8, 128, False, 4.0),
    (1, 1000, 300, 4, 1, 128, True, 1.0),
    (1, 2048, 2048, 4, 4, 192, True, 1.0),
    (1, 4096, 4096, 4, 4, 256, False, 4.0),
    (1, 4096, 4096, 8, 1, 256, True, 1.0),
    (1, 384, 384, 140, 140, 128, True, 1.0),  # the persistent kernel, causal
    (1, 256, 512, 70, 70, 128, False, 4.0),  # the persistent kernel
]


def main(lib_a: str, lib_b: str) -> int:
    a, b = AttentionFwd(lib_a), AttentionFwd(lib_b)
    same = total = 0
    for B, Sq, Sk, Hq, Hkv, D, causal, qscale in SHAPES:
        for dtype in (torch.bfloat16, torch.float16):
            g = torch.Generator(device="cuda").manual_seed(B * Sq + Sk + D)
            q = (torch.randn((B, Sq, Hq, D), device="cuda", generator=g) * qscale).to(dtype)
            k = torch.randn((B, Sk, Hkv, D), device="cuda", dtype=dtype, generator=g)
            v = torch.randn((B, Sk, Hkv, D), device="cuda", dtype=dtype, generator=g)
            oa, la = a(q, k, v, causal=causal)
            ob, lb = b(q, k, v, causal=causal)
            torch.cuda.synchronize()
            # compare the bits, so that NaN == NaN and -0.0 != 0.0 as a bit-for-bit claim needs
            ok = torch.equal(oa.view(torch.int16), ob.view(torch.int16)) and torch.equal(
                la.view(torch.int32), lb.view(torch.int32)
            )
            diff = (oa.float() - ob.float()).abs().max().item()
            print(
                f"B{B} Sq{Sq} Sk{Sk} H{Hq}:{Hkv} D{D} c{int(causal)} q x{qscale} {dtype}: "
                f"{'identical' if ok else f'DIFFERENT (max |dO| {diff:.3e})'}",
                flush=True,
            )
            same += ok
            total += 1
    print(f"{same}/{total} identical")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
