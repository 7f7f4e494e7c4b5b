"""Best-of-n wall time of a GPU computation, for the benchmark scripts in this folder."""

import time

import torch


def best_ms(fn, reps=3):
    """(milliseconds of the fastest of `reps` calls of fn, synchronised before and after; fn's last result)."""
    best, out = float("inf"), None
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, out
