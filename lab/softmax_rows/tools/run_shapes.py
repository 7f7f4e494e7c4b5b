"""Runs a softmax_rows build on a few shapes, REPS calls each (for ncu / nsys on the GPU machine):

python3 lab/softmax_rows/tools/run_shapes.py SOURCE.cu|LIB.so|quack REPS ROWSxCOLS ...

`quack`: QuACK's softmax_fwd instead (the task's quack baseline, on PYTHONPATH), so that a profile of the library
that leads stands beside ours on the same shapes; its first call compiles (the CuTe DSL), so profile a later one.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import SoftmaxRows, build


def ours_runner(target):
    kern = SoftmaxRows(build(Path(target)) if target.endswith(".cu") else target)
    return lambda x, y: kern._fn(x.data_ptr(), y.data_ptr(), x.shape[0], x.shape[1])


def quack_runner():
    from quack.softmax import softmax_fwd

    return lambda x, y: y.copy_(softmax_fwd(x))


def main(argv):
    target, reps, shapes = argv[0], int(argv[1]), argv[2:]
    run = quack_runner() if target == "quack" else ours_runner(target)
    for shape in shapes:
        rows, cols = (int(v) for v in shape.split("x"))
        x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        for _ in range(reps):
            run(x, y)
        torch.cuda.synchronize()
        err = (y.float() - torch.softmax(x.float(), dim=-1)).abs().max().item()
        print(f"{shape}: max abs error {err:.2e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
