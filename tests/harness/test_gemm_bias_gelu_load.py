"""kernels.load.gemm_bias_gelu: the released GEMM + bias + GELU kernel called on torch tensors (issue 35).

The CPU tests check what the wrapper refuses before it builds anything; the GPU tests (skipped without one, as in
CI) compare the kernel with float64 gelu(x @ w^T + bias), next to torch's own error, on each of its paths (the
CUDA-core and mma.sync kernels for small m, the cooperative and ping-pong wgmma kernels, the repack for odd k),
on a 3-d input, and on views off their 16-byte boundaries."""

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from kernels import load  # noqa: E402


def _refuse_building(monkeypatch):
    monkeypatch.setattr(load, "build", lambda *a, **k: pytest.fail("built for an input it must refuse"))


def test_gemm_bias_gelu_refuses_a_cpu_tensor_before_building_anything(monkeypatch):
    _refuse_building(monkeypatch)
    x, w, b = torch.zeros(2, 8), torch.zeros(3, 8), torch.zeros(3)
    with pytest.raises(ValueError, match="CUDA device"):
        load.gemm_bias_gelu(x.bfloat16(), w.bfloat16(), b.bfloat16())


def test_gemm_bias_gelu_refuses_mismatched_shapes_before_building_anything(monkeypatch):
    _refuse_building(monkeypatch)
    x = torch.zeros(2, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"weight must be 2-d \[n, k\] with k = x's last dim \(8\), got \(3, 7\)"):
        load.gemm_bias_gelu(x, torch.zeros(3, 7, dtype=torch.bfloat16), torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"bias must be 1-d of weight's rows \(3\), got shape \(4,\)"):
        load.gemm_bias_gelu(x, torch.zeros(3, 8, dtype=torch.bfloat16), torch.zeros(4, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="bias must be a torch.Tensor"):
        load._check_gemm_inputs(x, torch.zeros(3, 8, dtype=torch.bfloat16), [0.0, 0.0, 0.0])


def test_gemm_bias_gelu_names_the_released_source():
    assert load.GEMM_BIAS_GELU.name == "gemm_bias_gelu.cu" and load.GEMM_BIAS_GELU.is_file()


def _inputs(lead, n, k):
    x = torch.randn(*lead, k, device="cuda").bfloat16()
    w = (torch.randn(n, k, device="cuda") * max(k, 1) ** -0.5).bfloat16()
    b = (0.5 * torch.randn(n, device="cuda")).bfloat16()
    return x, w, b


def _rel(y, ref):
    return float((y.double() - ref).norm() / ref.norm())


@pytest.mark.gpu
@pytest.mark.parametrize(
    "lead, n, k",
    [
        ((1,), 4096, 4096),  # m = 1: CUDA cores
        ((16,), 1000, 520),  # m = 16: mma.sync
        ((7,), 13, 5),  # k % 8 != 0: CUDA cores
        ((128,), 128, 128),  # a tiny problem: mma.sync
        ((333,), 777, 999),  # the wgmma kernel, one tile a CTA (cooperative), k repacked
        ((2048,), 2048, 264),  # several tiles a CTA (ping-pong)
        ((4, 300), 2050, 72),  # a 3-d input, partial tiles
    ],
)
def test_gemm_bias_gelu_matches_float64_on_the_gpu(lead, n, k):
    x, w, b = _inputs(lead, n, k)
    y = load.gemm_bias_gelu(x, w, b)
    torch.cuda.synchronize()
    ref = F.gelu(x.double() @ w.double().T + b.double())
    torchs = _rel(F.gelu(F.linear(x, w, b)), ref)  # cuBLAS, rounded twice
    assert y.shape == (*lead, n) and y.dtype == torch.bfloat16
    assert _rel(y, ref) <= 1.5 * torchs + 1e-4


@pytest.mark.gpu
def test_gemm_bias_gelu_reads_unaligned_views_and_writes_only_its_rows():
    m, n, k = 300, 515, 264
    xbuf = torch.randn(m * k + 1, device="cuda").bfloat16()
    x = xbuf[1:].view(m, k)  # 2 bytes past a 16-byte boundary: repacked for the copy engine
    w = (torch.randn(n, k, device="cuda") * k**-0.5).bfloat16()
    bbuf = (0.5 * torch.randn(n + 1, device="cuda")).bfloat16()
    b = bbuf[1:]
    out_buf = torch.full((m * n + 8,), -7.0, device="cuda", dtype=torch.bfloat16)
    out = out_buf[1:-7].view(m, n)
    load.gemm_bias_gelu(x, w, b, out=out)
    torch.cuda.synchronize()
    ref = F.gelu(x.double() @ w.double().T + b.double())
    assert _rel(out, ref) <= 1.5 * _rel(F.gelu(F.linear(x, w, b)), ref) + 1e-4
    assert bool((out_buf[:1] == -7).all()) and bool((out_buf[-7:] == -7).all())
