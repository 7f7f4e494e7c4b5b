"""Run gemm_bias_gelu on one shape a few times, for a profiler to catch (Nsight Compute: `-k regex:gemm_wgmma
--launch-skip 1 --launch-count 1`). Torch only. From the repository root, on the GPU machine:

    python3 lab/gemm_bias_gelu/tools/run_shape.py SOURCE.cu|LIB.so M N K [CALLS]
"""

import ctypes
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder's tools, however the script is loaded
from library_kernels import operands  # the inputs the cuBLAS paths were profiled on, the same seed and scales

from kernels.load import build


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    target, (m, n, k) = Path(argv[0]), (int(x) for x in argv[1:4])
    calls = int(argv[4]) if len(argv) == 5 else 3
    lib_path = target if target.suffix == ".so" else build(target)
    try:  # cuTensorMapEncodeTiled, where the library was linked without -lcuda
        ctypes.CDLL("libcuda.so.1", mode=os.RTLD_GLOBAL)
    except OSError:
        pass
    fn = ctypes.CDLL(str(lib_path)).kseek_gemm_bias_gelu
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 3
    fn.restype = ctypes.c_int
    a, w, bias = operands(f"{m}x{n}x{k}")
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(calls):
        status = fn(a.data_ptr(), w.data_ptr(), bias.data_ptr(), out.data_ptr(), m, n, k)
        if status:
            print(f"kseek_gemm_bias_gelu returned {status}", file=sys.stderr)
            return 1
    torch.cuda.synchronize()
    print(f"{m}x{n}x{k}: {calls} calls, out finite: {bool(torch.isfinite(out).all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
