"""Runs an rmsnorm build on a few shapes, REPS calls each, through kernels.load (for Nsight Compute on the GPU
machine: `-k regex:rmsnorm --launch-skip 1 --launch-count 1` catches each shape's second call):

python3 lab/rmsnorm/tools/run_shapes.py SOURCE.cu|LIB.so REPS ROWSxHIDDEN ...
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import RmsNorm, build


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    target, reps, shapes = argv[0], int(argv[1]), argv[2:]
    norm = RmsNorm(build(Path(target)) if target.endswith(".cu") else target)
    for shape in shapes:
        rows, hidden = (int(v) for v in shape.split("x"))
        x = torch.randn(rows, hidden, device="cuda").to(torch.bfloat16)
        weight = (1 + 0.1 * torch.randn(hidden, device="cuda")).to(torch.bfloat16)
        for _ in range(reps):
            y = norm(x, weight)
        torch.cuda.synchronize()
        want = torch.nn.functional.rms_norm(x.float(), (hidden,), weight.float(), eps=1e-6)
        print(f"{shape}: max abs error {(y.float() - want).abs().max().item():.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
