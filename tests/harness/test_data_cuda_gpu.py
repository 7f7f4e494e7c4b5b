"""The generic cuda-sm90 task end to end on a GPU: the scaffold's example operation (out = x * scale + y) with
a real kernel through `evaluate` (child process, CUDA events, the device exchange, the judge on the GPU), and
kernels that must be rejected. Skipped where there is no GPU (CI); run on the H200 by the device tool."""

import pytest

from gpu_harness import evaluate
from gpu_harness.tasks import use_folder
from gpu_harness.taskscaffold import scaffold

pytestmark = pytest.mark.gpu

KERNEL = r"""
#include <cuda_runtime.h>
__global__ void scale_add(const float* x, const float* y, float* out, float scale, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * scale + y[i];
}
extern "C" int kseek_%(name)s(const float* x, const float* y, float* out, float scale, int rows, int cols) {
    long n = (long)rows * cols;
    %(body)s
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
"""
HONEST = "scale_add<<<(n + 255) / 256, 256>>>(x, y, out, scale, n);"
HALF = "scale_add<<<(n / 2 + 255) / 256, 256>>>(x, y, out, scale, n / 2);"  # leaves the second half unwritten
NO_Y = "scale_add<<<(n + 255) / 256, 256>>>(x, x, out, scale, n);"  # the wrong operation


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    folder = scaffold("demo_cuda_e2e", tmp_path_factory.mktemp("tasks"), target="cuda-sm90")
    return use_folder(folder), folder


def kernel(folder, name, body):
    path = folder / f"{name}.cu"
    path.write_text(KERNEL % {"name": "demo_cuda_e2e", "body": body})
    return path


def test_an_honest_kernel_passes_every_scenario_and_is_timed(task):
    name, folder = task
    r = evaluate(name, kernel(folder, "honest", HONEST), scenarios="full")
    assert r.status == "correct", (r.reason, [(s.id, s.reason) for s in r.scenarios])
    assert r.all_correct and len(r.scenarios) == 10
    assert all(s.time_ms and s.time_ms > 0 for s in r.scenarios)
    assert r.scenarios[-1].baseline_ms["torch"] > 0 and r.speedup_over("torch") is not None


@pytest.mark.parametrize(("body", "reason"), [(HALF, "NaN/Inf where the reference is finite"), (NO_Y, "tolerance")])
def test_a_wrong_kernel_is_rejected_for_its_reason(task, body, reason):
    name, folder = task
    r = evaluate(name, kernel(folder, f"wrong{abs(hash(body)) % 1000}", body), scenarios="quick", timing=False)
    said = " ".join([r.reason or ""] + [s.reason or "" for s in r.scenarios])
    assert not r.all_correct and reason in said, said


def test_a_call_whose_host_path_outlasts_the_spin_is_told_from_one_that_does_not():
    """The pre-call spin (~0.5 ms) keeps the GPU busy while a call is launched; a call that spends longer on the
    host, or synchronizes, leaves the GPU waiting inside its timed span, and the child counts such calls."""
    import time

    import torch

    from gpu_harness.tasks.cuda_device import CudaCalls

    calls = CudaCalls()
    calls.setup()
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(2):  # the first calls load their kernels (CUDA's lazy loading): the harness's warm-up does that
        calls.flush_cache()
        calls.time_call(lambda: x.mul_(1.0))
    calls.flush_cache()
    calls.time_call(lambda: x.mul_(1.0))
    assert not calls.host_outran_flush()
    assert calls.host_ms_after_flush() < 20
    calls.flush_cache()
    calls.time_call(lambda: time.sleep(0.005))  # 5 ms on the host: the spin is long over
    assert calls.host_outran_flush()
    assert calls.host_ms_after_flush() >= 5
    calls.flush_cache(host_ms=5.0)  # a spin made for that path: twice 5 ms at any clock up to 2 GHz
    calls.time_call(lambda: time.sleep(0.005))
    assert not calls.host_outran_flush()
    calls.flush_cache()
    calls.time_call(torch.cuda.synchronize)  # a synchronizing call inside: the same
    assert calls.host_outran_flush()
