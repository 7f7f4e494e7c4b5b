"""kernels.load's launch rules for the released kernels (its module docstring): each call runs on its inputs'
device, in order with torch's current stream there, and a kernel that keeps state made on its first GPU serves
that GPU alone in a process.

The CPU test checks the refusal, which comes before any CUDA call. The GPU tests (skipped without one, as in CI)
call each default-stream kernel on a side stream whose work is still running: torch's streams are non-blocking,
so without the ordering the kernel would read its input before the side stream had written it."""

import pytest

torch = pytest.importorskip("torch")

from kernels import load  # noqa: E402


def test_a_kernel_that_keeps_state_on_its_first_gpu_refuses_a_call_on_another(tmp_path, monkeypatch):
    # attention's ticket counters and the GEMM's repack buffer live on the first device; a call on another would
    # run on that memory (an illegal address, or another GPU's data). softmax_rows and rmsnorm keep nothing.
    monkeypatch.setattr(load, "_SERVED_DEVICE", {})
    lib = tmp_path / "gemm.so"
    lib.write_bytes(b"")
    for kind in (load.GemmBiasGelu, load.AttentionFwd):
        binding = kind.__new__(kind)  # the rule comes before the library is called: no library loaded
        binding.lib_path = str(lib)
        load._SERVED_DEVICE[str(lib.resolve())] = torch.device("cuda", 0)
        with pytest.raises(ValueError, match=r"serves cuda:0 in this process .*not cuda:1"):
            with binding.launch_on(torch.device("cuda", 1), legacy_stream=True):
                pytest.fail("launched on a second device")
    assert not load.SoftmaxRows.ONE_DEVICE and not load.RmsNorm.ONE_DEVICE


def _busy_side_stream_inputs(shape):
    """A side stream kept busy (~50 ms of spinning) before it writes x, and x's values: read before the stream is
    done, x is still zeros."""
    side = torch.cuda.Stream()
    x = torch.zeros(shape, device="cuda", dtype=torch.bfloat16)
    values = (torch.randn(shape, device="cuda") * 2).bfloat16()
    torch.cuda.synchronize()
    return side, x, values


@pytest.mark.gpu
def test_softmax_rows_on_a_busy_side_stream_reads_what_the_stream_wrote():
    side, x, values = _busy_side_stream_inputs((2048, 4096))
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        x.copy_(values)
        y = load.softmax_rows(x)
        ref = torch.softmax(x.float(), dim=-1)  # on the side stream, after y's kernel: the stream waits for it
    torch.cuda.synchronize()
    assert torch.allclose(y.float(), ref, atol=2e-3, rtol=2e-2)


@pytest.mark.gpu
def test_rmsnorm_on_a_busy_side_stream_reads_what_the_stream_wrote():
    side, x, values = _busy_side_stream_inputs((2048, 4096))
    weight = torch.rand(4096, device="cuda").bfloat16()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        x.copy_(values)
        y = load.rmsnorm(x, weight)
        ref = torch.nn.functional.rms_norm(x.float(), (4096,), weight.float(), eps=1e-6)
    torch.cuda.synchronize()
    assert torch.allclose(y.float(), ref, atol=3e-2, rtol=2e-2)


@pytest.mark.gpu
def test_gemm_bias_gelu_on_a_busy_side_stream_reads_what_the_stream_wrote():
    side, x, values = _busy_side_stream_inputs((512, 1024))
    weight = (torch.randn(768, 1024, device="cuda") / 32).bfloat16()
    bias = torch.randn(768, device="cuda").bfloat16()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        x.copy_(values)
        y = load.gemm_bias_gelu(x, weight, bias)
        ref = torch.nn.functional.gelu(x.float() @ weight.float().T + bias.float())
    torch.cuda.synchronize()
    assert torch.allclose(y.float(), ref, atol=3e-2, rtol=3e-2)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_row_kernel_runs_on_its_inputs_gpu_whatever_the_current_one():
    x = (torch.randn(64, 1000, device="cuda:1") * 2).bfloat16()
    with torch.cuda.device(0):
        y = load.softmax_rows(x)
    torch.cuda.synchronize(1)
    assert y.device == x.device and torch.allclose(y.float(), torch.softmax(x.float(), -1), atol=2e-3, rtol=2e-2)
