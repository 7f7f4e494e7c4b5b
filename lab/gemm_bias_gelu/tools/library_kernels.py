"""Which kernels the cuBLAS paths of gemm_bias_gelu launch on each shape, and their launch shapes: cuBLAS names its
Hopper kernels by their configuration (tile, cluster, stages, warpgroups, scheduler), which is what our kernel's
main loop is measured against. Torch only. From the repository root, on the GPU machine:

    python3 lab/gemm_bias_gelu/tools/library_kernels.py [MxNxK ...]          each path's kernel names and times
    python3 lab/gemm_bias_gelu/tools/library_kernels.py --run PATH MxNxK N    only call PATH (linear | epilogue) N
                                                                                  times, for Nsight Compute to catch
"""

import argparse
import sys

import torch
import torch.nn.functional as F

SHAPES = ("8192x8192x8192", "4096x4096x4096", "2048x2048x2048", "8192x3072x768", "1000x1000x1000", "4095x4095x4095")
PATHS = {
    "linear": lambda a, w, b: F.gelu(F.linear(a, w, b)),  # eager: cuBLAS with the bias, then GELU's kernel
    "epilogue": lambda a, w, b: torch._addmm_activation(b, a, w.t(), use_gelu=True),  # cuBLASLt's fused epilogue
}


def operands(shape: str):
    m, n, k = (int(x) for x in shape.split("x"))
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(n, k, device="cuda", generator=g) * k**-0.5).to(torch.bfloat16)
    bias = (torch.randn(n, device="cuda", generator=g) * 0.5).to(torch.bfloat16)
    return a, w, bias


def launches(path: str, shape: str) -> list[str]:
    """The kernels one call of `path` launches (after a warm-up call), each with its time as the profiler saw it."""
    a, w, bias = operands(shape)
    PATHS[path](a, w, bias)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        PATHS[path](a, w, bias)
        torch.cuda.synchronize()
    lines = []
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        lines.append(f"    {event.name}  ({event.device_time:.1f} us)")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", default=list(SHAPES), help="MxNxK (default: six of the task's)")
    parser.add_argument("--run", nargs=3, metavar=("PATH", "SHAPE", "CALLS"), help="only call PATH on SHAPE")
    args = parser.parse_args(argv)
    if args.run:
        path, shape, calls = args.run
        a, w, bias = operands(shape)
        for _ in range(int(calls)):
            PATHS[path](a, w, bias)
        torch.cuda.synchronize()
        return 0
    print(
        torch.cuda.get_device_name(), "torch", torch.__version__, "cuBLAS", torch.backends.cuda.preferred_blas_library()
    )
    for shape in args.shapes:
        for path in PATHS:
            print(f"{shape} {path}:")
            print("\n".join(launches(path, shape)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
