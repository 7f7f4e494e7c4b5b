"""Small shapes for compute-sanitizer: every head dim, both masks, GQA, Sq != Sk both ways, decode, the
persistent path with more tiles than SMs (so a CTA walks several tiles, causal too) and split-KV. Run on the GPU
machine:

    compute-sanitizer --tool memcheck --kernel-name kns=attn_ python3 lab/attention_fwd_sm90/tools/sanitize_shapes.py LIB.so

(racecheck and synccheck likewise). It only launches the kernel; the sanitizer's summary is the verdict.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import AttentionFwd

SHAPES = [  # B, Sq, Sk, Hq, Hkv, D, causal
    (1, 200, 200, 4, 4, 64, True),
    (1, 200, 200, 4, 4, 64, False),
    (1, 130, 130, 2, 2, 96, True),
    (1, 256, 256, 8, 2, 128, False),
    (1, 64, 1000, 2, 2, 128, True),
    (1, 1000, 300, 2, 1, 128, False),
    (2, 1, 700, 4, 1, 128, True),
    (1, 300, 300, 2, 2, 192, True),
    (1, 257, 257, 2, 2, 256, False),
    (1, 256, 512, 70, 70, 128, False),  # persistent: 140 tiles on 132 SMs
    (1, 384, 384, 70, 70, 64, False),  # persistent, 3 consumer warpgroups
    (1, 512, 512, 140, 140, 64, True),  # persistent causal (v15): 420 tiles dealt by the ticket counter
    (1, 384, 384, 140, 140, 128, True),  # likewise, 2 consumer warpgroups
    (1, 600, 300, 140, 140, 128, True),  # persistent causal with tiles whose rows see no key (Sq > Sk)
    (1, 100, 1100, 2, 2, 128, True),  # split-KV (v28 on): 2 key ranges, the last one masked, then their merge
    (1, 200, 1536, 2, 1, 96, False),  # split-KV, 3 ranges
    (1, 150, 1200, 2, 2, 256, True),  # split-KV at d256
    (2, 1, 2048, 2, 2, 64, False),  # split-KV decode, 4 ranges
    (1, 1, 1100, 70, 70, 128, False),  # one tile a CTA, no split (70 tiles): the second warpgroup has no row (v30)
    (1, 40, 1100, 70, 70, 64, False),  # likewise, two of the 192-row tile's three warpgroups
    (1, 2, 1531, 4, 4, 64, True),  # the decode kernel (v31): 2 rows, ranges merged in a cluster, causal diagonal
    (1, 1, 777, 4, 1, 256, True),  # 4 rows a KV head (MQA), d256
    (1, 3, 1100, 2, 2, 128, False),  # 3 rows padded to 4
    (1, 1, 513, 1, 1, 128, False),  # one range: no cluster
]


def main(lib):
    kern = AttentionFwd(lib)
    for B, Sq, Sk, Hq, Hkv, D, causal in SHAPES:
        for dtype in (torch.bfloat16, torch.float16):
            g = torch.Generator(device="cuda").manual_seed(B * Sq + Sk)
            q = torch.randn((B, Sq, Hq, D), device="cuda", dtype=dtype, generator=g)
            k = torch.randn((B, Sk, Hkv, D), device="cuda", dtype=dtype, generator=g)
            v = torch.randn((B, Sk, Hkv, D), device="cuda", dtype=dtype, generator=g)
            o, lse = kern(q, k, v, causal=causal)
            torch.cuda.synchronize()
            bad = torch.isnan(o).any().item()
            print(f"B{B} Sq{Sq} Sk{Sk} H{Hq}:{Hkv} D{D} c{int(causal)} {dtype} nan={bad}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
