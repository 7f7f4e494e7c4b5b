"""Runs a softmax_rows build on a few shapes, REPS calls each (for ncu / nsys on the GPU machine):

python3 lab/softmax_rows/tools/run_shapes.py SOURCE.cu|LIB.so REPS ROWSxCOLS ...
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import SoftmaxRows, build


def main(argv):
    target, reps, shapes = argv[0], int(argv[1]), argv[2:]
    kern = SoftmaxRows(build(Path(target)) if target.endswith(".cu") else target)
    for shape in shapes:
        rows, cols = (int(v) for v in shape.split("x"))
        x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        for _ in range(reps):
            kern._fn(x.data_ptr(), y.data_ptr(), rows, cols)
        torch.cuda.synchronize()
        err = (y.float() - torch.softmax(x.float(), dim=-1)).abs().max().item()
        print(f"{shape}: max abs error {err:.2e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
