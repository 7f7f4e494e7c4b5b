"""matmul_cpu's reference and its numpy baseline (numpy arrays: the cpu target)."""

import numpy as np


def reference(a, b, m, n, k):
    """C = A @ B, computed by the judge on float64 copies of the inputs."""
    return a @ b


def numpy_matmul(a, b, c, m, n, k):
    """numpy's float32 matmul (single-threaded BLAS in the child), writing c in place like the kernel."""
    np.matmul(a, b, out=c)
