"""kernels.load.softmax_rows: the released softmax kernel called on torch tensors (issue 35 item 2).

The CPU tests check what the wrapper refuses before it builds anything; the GPU tests (skipped without one, as in
CI) compare the kernel with torch's own softmax on odd widths, offsets and a 3-d input."""

import pytest

torch = pytest.importorskip("torch")

from kernels import load  # noqa: E402


def test_softmax_rows_refuses_a_cpu_tensor_before_building_anything(monkeypatch):
    monkeypatch.setattr(load, "build", lambda *a, **k: pytest.fail("built for an input it must refuse"))
    with pytest.raises(ValueError, match="CUDA device"):
        load.softmax_rows(torch.zeros(2, 3, dtype=torch.bfloat16))


def test_softmax_rows_names_the_released_source():
    assert load.SOFTMAX_ROWS.name == "softmax_rows.cu" and load.SOFTMAX_ROWS.is_file()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (65, 31), (7, 4097), (2, 5, 1000), (4, 50257), (1, 300000)])
def test_softmax_rows_matches_torch_on_the_gpu(shape):
    x = (torch.randn(shape, device="cuda") * 2).bfloat16()
    y = load.softmax_rows(x)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=-1)
    ours = float((y.double() - ref).norm() / ref.norm())
    torchs = float((torch.softmax(x, dim=-1).double() - ref).norm() / ref.norm())
    assert y.shape == x.shape and y.dtype == torch.bfloat16
    assert ours <= max(1.5 * torchs, 1e-4)


@pytest.mark.gpu
def test_softmax_rows_reads_an_unaligned_view_and_writes_only_its_rows():
    buf = (torch.randn(3 * 4097 + 5, device="cuda") * 2).bfloat16()
    x = buf[3:-2].view(3, 4097)  # starts 6 bytes past an aligned address
    out_buf = torch.full((3 * 4097 + 8,), -7.0, device="cuda", dtype=torch.bfloat16)
    out = out_buf[1:-7].view(3, 4097)
    load.softmax_rows(x, out=out)
    torch.cuda.synchronize()
    assert torch.allclose(out.float(), torch.softmax(x.float(), dim=-1), atol=2e-3, rtol=2e-2)
    assert bool((out_buf[:1] == -7).all()) and bool((out_buf[-7:] == -7).all())
