"""kernels.load.rmsnorm: the released RMSNorm kernel called on torch tensors (issue 35 item 2).

The CPU tests check what the wrapper refuses before it builds anything; the GPU tests (skipped without one, as in
CI) compare the kernel with float64 RMSNorm, next to torch's own error, on odd widths, offsets and a 3-d input."""

import pytest

torch = pytest.importorskip("torch")

from kernels import load  # noqa: E402


def _refuse_building(monkeypatch):
    monkeypatch.setattr(load, "build", lambda *a, **k: pytest.fail("built for an input it must refuse"))


def test_rmsnorm_refuses_a_cpu_tensor_before_building_anything(monkeypatch):
    _refuse_building(monkeypatch)
    with pytest.raises(ValueError, match="CUDA device"):
        load.rmsnorm(torch.zeros(2, 3, dtype=torch.bfloat16), torch.ones(3, dtype=torch.bfloat16))


def test_rmsnorm_refuses_a_weight_of_another_width_before_building_anything(monkeypatch):
    _refuse_building(monkeypatch)
    x = torch.zeros(2, 3, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"weight must be 1-d of x's last dim \(3\), got shape \(4,\)"):
        load.rmsnorm(x, torch.ones(4, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="weight must be a torch.Tensor"):
        load._check_rmsnorm_inputs(x, [1.0, 1.0, 1.0])


def test_rmsnorm_names_the_released_source():
    assert load.RMSNORM.name == "rmsnorm.cu" and load.RMSNORM.is_file()


def _reference(x, weight, eps):
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def _torch_eager(x, weight, eps):  # LLaMA's: fp32 math, rounded to bf16, then times the bf16 weight
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1), (3, 33), (65, 128), (7, 4097), (2, 5, 1000), (3, 8192), (2, 40000)])
def test_rmsnorm_matches_float64_on_the_gpu(shape):
    x = torch.randn(shape, device="cuda").bfloat16()
    w = (1 + 0.2 * torch.randn(shape[-1], device="cuda")).bfloat16()
    y = load.rmsnorm(x, w, eps=1e-6)
    torch.cuda.synchronize()
    ref = _reference(x, w, 1e-6)
    ours = float((y.double() - ref).norm() / ref.norm())
    torchs = float((_torch_eager(x, w, 1e-6).double() - ref).norm() / ref.norm())
    assert y.shape == x.shape and y.dtype == torch.bfloat16
    assert ours <= max(1.5 * torchs, 1e-4)


@pytest.mark.gpu
def test_rmsnorm_reads_an_unaligned_view_and_writes_only_its_rows():
    buf = torch.randn(3 * 4096 + 5, device="cuda").bfloat16()
    x = buf[3:-2].view(3, 4096)  # starts 6 bytes past an aligned address
    wbuf = (1 + 0.2 * torch.randn(4096 + 1, device="cuda")).bfloat16()
    w = wbuf[1:]  # the weight's vectors do not line up with x's
    out_buf = torch.full((3 * 4096 + 8,), -7.0, device="cuda", dtype=torch.bfloat16)
    out = out_buf[1:-7].view(3, 4096)
    load.rmsnorm(x, w, out=out)
    torch.cuda.synchronize()
    assert torch.allclose(out.double(), _reference(x, w, 1e-6), atol=2e-2, rtol=2e-2)
    assert bool((out_buf[:1] == -7).all()) and bool((out_buf[-7:] == -7).all())
