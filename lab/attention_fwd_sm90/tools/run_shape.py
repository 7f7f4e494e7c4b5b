"""Call the kernel a few times on one shape (for ncu or compute-sanitizer to watch), on random inputs.

python3 lab/attention_fwd_sm90/tools/run_shape.py LIB.so B S H D causal [reps]
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import AttentionFwd


def main(lib, B, S, H, D, causal, reps=3):
    kern = AttentionFwd(lib)
    q, k, v = (torch.randn((B, S, H, D), device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for _ in range(reps):
        kern(q, k, v, causal=bool(causal))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:]))
