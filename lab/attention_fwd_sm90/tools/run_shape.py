"""Call the kernel, or FlashAttention-3, a few times on one shape (for ncu or compute-sanitizer to watch), on
random bf16 inputs.

python3 lab/attention_fwd_sm90/tools/run_shape.py LIB.so|fa3 B S H D causal [reps]

`fa3`: the task's fa3 baseline (tasks/attention_fwd/reference.py: `flash_attn_interface` or the fa3-fwd wheel's
`fa3_fwd_interface`, whichever imports), so that its profile can stand beside this kernel's on the same shape.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import AttentionFwd

REPO = Path(__file__).resolve().parents[3]


def fa3_call():
    """The task's own fa3 baseline function (its module choice and argument layout), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "attention_reference", REPO / "tasks" / "attention_fwd" / "reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda q, k, v, causal: module.fa3(q, k, v, causal, q.shape[-1] ** -0.5)


def main(lib, B, S, H, D, causal, reps=3):
    call = fa3_call() if lib == "fa3" else AttentionFwd(lib)
    q, k, v = (torch.randn((B, S, H, D), device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for _ in range(reps):
        if lib == "fa3":
            call(q, k, v, bool(causal))
        else:
            call(q, k, v, causal=bool(causal))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:]))
