"""Runs an rmsnorm build on a few shapes, REPS calls each, through kernels.load (for Nsight Compute on the GPU
machine: `-k regex:rmsnorm --launch-skip 1 --launch-count 1` catches each shape's second call; with `--profile-from-start off`, a
shape's calls after its first); `compile` in place
of a build runs the task's torch.compile baseline instead (tasks/rmsnorm/reference.py, the same function the
harness times; `TORCH_LOGS=output_code` prints the Triton kernel it generates, `-k regex:triton` profiles it):

python3 lab/rmsnorm/tools/run_shapes.py SOURCE.cu|LIB.so|compile REPS ROWSxHIDDEN ...
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import RmsNorm, build


def compiled_norm():
    """The harness's torch.compile baseline, called as kernels.load's RmsNorm is."""
    from tasks.rmsnorm import reference

    def norm(x, weight):
        y = torch.empty_like(x)
        reference.compiled_rmsnorm(x, weight, y, x.shape[0], x.shape[1], 1e-6)
        return y

    return norm


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    target, reps, shapes = argv[0], int(argv[1]), argv[2:]
    if target == "compile":
        norm = compiled_norm()
    else:
        norm = RmsNorm(build(Path(target)) if target.endswith(".cu") else target)
    for shape in shapes:
        rows, hidden = (int(v) for v in shape.split("x"))
        x = torch.randn(rows, hidden, device="cuda").to(torch.bfloat16)
        weight = (1 + 0.1 * torch.randn(hidden, device="cuda")).to(torch.bfloat16)
        y = norm(x, weight)  # compiles (torch.compile autotunes here) before the profiled range starts
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()  # for `ncu --profile-from-start off`
        for _ in range(reps):
            y = norm(x, weight)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        want = torch.nn.functional.rms_norm(x.float(), (hidden,), weight.float(), eps=1e-6)
        print(f"{shape}: max abs error {(y.float() - want).abs().max().item():.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
