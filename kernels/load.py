"""Call a released KernelSeek kernel on torch tensors like a normal function.

    from kernels.load import attention_fwd
    o, lse = attention_fwd(q, k, v, causal=True)      # q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D], bf16 or fp16

    from kernels.load import softmax_rows
    y = softmax_rows(x)                               # softmax along x's last dim, bf16, any leading shape

    from kernels.load import rmsnorm
    y = rmsnorm(x, weight, eps=1e-6)                  # RMSNorm along x's last dim, bf16, weight [hidden]

    from kernels.load import gemm_bias_gelu
    y = gemm_bias_gelu(x, w, bias)                    # gelu(x @ w.T + bias): nn.Linear's layout, bf16, x [..., k]

The first call compiles the kernel's single .cu file with nvcc (cached by source hash under
$KSEEK_CACHE_DIR or ~/.cache/kernelseek/released) and loads it with ctypes. Only the standard library
and torch are needed; torch is imported lazily so that this module imports on machines without it.

Each call runs on its inputs' device (made current for the launch) and in order with torch's current stream
there: softmax_rows, rmsnorm and gemm_bias_gelu launch on the legacy default stream (their ABI), so a call on a
side stream makes that stream's work come first and the stream wait for the kernel (torch's streams are created
non-blocking and would not wait by themselves). attention_fwd and gemm_bias_gelu keep per-process state made on
the first GPU they ran on (attention's ticket counters' address and launch attributes, the GEMM's repack buffer),
so each serves that one GPU in a process: a call on another is refused with a ValueError rather than run on the
first one's memory. softmax_rows and rmsnorm keep none and serve any GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import hashlib
import math
import os
import shutil
import subprocess
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent
ATTENTION_SM90 = KERNELS_DIR / "attention_fwd_sm90" / "attention_fwd_sm90.cu"
SOFTMAX_ROWS = KERNELS_DIR / "softmax_rows" / "softmax_rows.cu"
RMSNORM = KERNELS_DIR / "rmsnorm" / "rmsnorm.cu"
GEMM_BIAS_GELU = KERNELS_DIR / "gemm_bias_gelu" / "gemm_bias_gelu.cu"
INT32_MAX = 2**31 - 1  # the softmax_rows, rmsnorm and gemm_bias_gelu ABIs take rows and widths as int
SUPPORTED_HEAD_DIMS = (64, 96, 128, 192, 256)


class KernelError(RuntimeError):
    """The kernel could not be built, or refused a call (its non-zero status is in the message)."""


def _cache_dir() -> Path:
    root = os.environ.get("KSEEK_CACHE_DIR") or str(Path.home() / ".cache" / "kernelseek")
    return Path(root) / "released"


def _libcuda_dir() -> str | None:
    # cuTensorMapEncodeTiled lives in the driver library; the toolkit's stub is enough to link against.
    nvcc = shutil.which("nvcc")
    home = str(Path(nvcc).resolve().parent.parent) if nvcc else "/usr/local/cuda"
    for pattern in (
        f"{home}/lib64/stubs/libcuda.so",
        f"{home}/targets/*/lib/stubs/libcuda.so",
        "/usr/lib/x86_64-linux-gnu/libcuda.so*",
        "/usr/lib64/libcuda.so*",
        "/usr/local/nvidia/lib64/libcuda.so*",
    ):
        hits = sorted(glob.glob(pattern))
        if hits:
            return str(Path(hits[0]).parent)
    return None


def compile_command(src: Path, out: Path, arch: str = "90a", extra: tuple[str, ...] = ()) -> list[str]:
    cmd = [
        "nvcc",
        "-O3",
        "-std=c++17",
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-cudart",
        "shared",
        f"-gencode=arch=compute_{arch},code=sm_{arch}",
        "-lineinfo",
        *extra,
        "-o",
        str(out),
        str(src),
    ]
    libdir = _libcuda_dir()
    if libdir:
        cmd += [f"-L{libdir}", "-lcuda"]
    return cmd


def build(src: Path = ATTENTION_SM90, arch: str = "90a", extra: tuple[str, ...] = ()) -> Path:
    """Compile `src` to a shared library once per (source, flags); return its path."""
    src = Path(src)
    if shutil.which("nvcc") is None:
        raise KernelError("nvcc is not on PATH: cannot build the kernel")
    key_parts = [src.read_text(), arch, " ".join(extra)]
    key = hashlib.sha256("\x00".join(key_parts).encode()).hexdigest()[:20]
    out = _cache_dir() / f"{src.stem}-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp.so")
    proc = subprocess.run(compile_command(src, tmp, arch, extra), capture_output=True, text=True)
    if proc.returncode != 0:
        raise KernelError(f"nvcc failed for {src.name}:\n{proc.stderr[-4000:]}")
    os.replace(tmp, out)
    return out


# A loaded library (its real path: ctypes loads one file once, so every binding of it shares its state) -> the
# device its first call ran on, for the kernels that keep state made there (_Binding.ONE_DEVICE).
_SERVED_DEVICE: dict[str, object] = {}


class _Binding:
    """What every binding of a released kernel shares: the launch on the inputs' device in order with torch's
    current stream there, and, for a kernel that keeps state made on its first device, that device alone (the
    module's docstring says why)."""

    ONE_DEVICE = False  # True: the kernel's library keeps per-process state made on the first device it ran on
    lib_path = ""

    @contextlib.contextmanager
    def launch_on(self, device, legacy_stream: bool):
        """The block's launch on `device`, made current for it. `legacy_stream`: the kernel launches on the legacy
        default stream, which then waits for torch's current stream there, and that stream for it."""
        import torch

        if self.ONE_DEVICE:
            served = _SERVED_DEVICE.setdefault(os.path.realpath(self.lib_path), device)
            if device != served:
                raise ValueError(
                    f"this kernel serves {served} in this process (its first call's device: it keeps state made "
                    f"there), not {device}: call it on {served}, or from another process for {device}"
                )
        with torch.cuda.device(device):
            current, legacy = torch.cuda.current_stream(), torch.cuda.default_stream()
            ordered = legacy_stream and current != legacy
            if ordered:
                legacy.wait_stream(current)  # x and out as the side stream leaves them
            yield
            if ordered:
                current.wait_stream(legacy)  # the stream's next work, and the allocator's reuse, after the kernel


class AttentionFwd(_Binding):
    """ctypes binding of the `attention_fwd` ABI (kseek_attention_fwd and its variant entry point)."""

    ONE_DEVICE = True  # the address of its ticket counters, launch attributes and cluster counts, asked once

    _ARGS = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 8 + [ctypes.c_float, ctypes.c_void_p]

    def __init__(self, lib_path: str | os.PathLike):
        self.lib_path = str(lib_path)
        self._lib = ctypes.CDLL(self.lib_path)
        self._fn = self._lib.kseek_attention_fwd
        self._fn.argtypes = self._ARGS
        self._fn.restype = ctypes.c_int
        self._variant = getattr(self._lib, "kseek_attention_fwd_variant", None)
        if self._variant is not None:
            self._variant.argtypes = [ctypes.c_int] + self._ARGS
            self._variant.restype = ctypes.c_int

    def __call__(
        self, q, k, v, causal: bool = False, softmax_scale: float | None = None, out=None, lse=None, variant: int = 0
    ):
        import torch

        _check_inputs(q, k, v)
        B, Sq, Hq, D = q.shape
        Sk, Hkv = k.shape[1], k.shape[2]
        if out is None:
            out = torch.empty_like(q)
        if lse is None:
            lse = torch.empty((B, Hq, Sq), device=q.device, dtype=torch.float32)
        if out.shape != q.shape or out.dtype != q.dtype or not out.is_contiguous():
            raise ValueError("out must be a contiguous tensor shaped and typed like q")
        if lse.shape != (B, Hq, Sq) or lse.dtype != torch.float32 or not lse.is_contiguous():
            raise ValueError("lse must be a contiguous float32 tensor of shape [B, Hq, Sq]")
        if any(t.device != q.device for t in (k, v, out, lse)):  # the kernel reads them all on q's device
            raise ValueError("k, v, out and lse must be on q's device")
        scale = float(softmax_scale) if softmax_scale is not None else D**-0.5
        dtype = 0 if q.dtype == torch.bfloat16 else 1
        with self.launch_on(q.device, legacy_stream=False):  # the ABI takes the stream: torch's current one
            status = self._launch(q, k, v, out, lse, (B, Sq, Sk, Hq, Hkv, D, dtype, int(bool(causal))), scale, variant)
        if status != 0:
            raise KernelError(
                f"kseek_attention_fwd returned {status} for B={B} Sq={Sq} Sk={Sk} Hq={Hq} "
                f"Hkv={Hkv} D={D} dtype={q.dtype}"
            )
        return out, lse

    def _launch(self, q, k, v, out, lse, ints: tuple[int, ...], scale: float, variant: int) -> int:
        import torch

        stream = torch.cuda.current_stream().cuda_stream
        args = (
            q.data_ptr(),
            k.data_ptr(),
            v.data_ptr(),
            out.data_ptr(),
            lse.data_ptr(),
            *ints,
            scale,
            stream,
        )
        if not variant:
            return int(self._fn(*args))
        if self._variant is None:
            raise KernelError("this library has no kseek_attention_fwd_variant entry point")
        return int(self._variant(variant, *args))


def _check_inputs(q, k, v) -> None:
    import torch

    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor")
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-d [B, S, H, D], got shape {tuple(t.shape)}")
        if not t.is_cuda:
            raise ValueError(f"{name} must be on a CUDA device")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous ([B, S, H, D] with D innermost)")
        if t.dtype not in (torch.bfloat16, torch.float16):
            raise ValueError(f"{name} must be bfloat16 or float16, got {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError("q, k and v must share one dtype")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    B, _, Hq, D = q.shape
    if k.shape[0] != B or k.shape[3] != D:
        raise ValueError("q and k must agree on batch and head_dim")
    if Hq % k.shape[2]:
        raise ValueError(f"heads_q ({Hq}) must be a multiple of heads_kv ({k.shape[2]})")
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"head_dim {D} is not supported (supported: {SUPPORTED_HEAD_DIMS})")


_default: AttentionFwd | None = None


def attention_fwd(q, k, v, causal: bool = False, softmax_scale: float | None = None):
    """O, LSE of softmax(scale * Q K^T [+ bottom-right causal mask]) V with the released sm_90 kernel."""
    global _default
    if _default is None:
        _default = AttentionFwd(build(ATTENTION_SM90))
    return _default(q, k, v, causal=causal, softmax_scale=softmax_scale)


def _require_tensors(**named) -> None:
    """Each named argument is a torch tensor (TypeError naming the first that is not)."""
    import torch

    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor")


def _require_bf16_on_x_device(x, **others) -> None:
    """x and each of `others` are contiguous bf16 CUDA tensors, the others on x's device: what the row kernels'
    and the GEMM's ABIs take (ValueError naming the first that is not)."""
    import torch

    for name, t in {"x": x, **others}.items():
        if not t.is_cuda:
            raise ValueError(f"{name} must be on a CUDA device")
        if t.dtype != torch.bfloat16:
            raise ValueError(f"{name} must be bfloat16, got {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    if any(t.device != x.device for t in others.values()):
        raise ValueError(f"{' and '.join(others)} must be on x's device")


def _output_like(x, out):
    """`out`, or a new contiguous tensor like x: a row kernel writes y in x's shape, dtype and device."""
    import torch

    if out is None:
        return torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
        raise ValueError("out must be a contiguous bfloat16 tensor shaped like x, on x's device")
    return out


def _rows_and_width(x, width_name: str) -> tuple[int, int]:
    """x as rows of its last dim (a 0-d x is one row of one), each count within the ABI's int32."""
    width = x.shape[-1] if x.dim() else 1
    rows = x.numel() // width if width else 0
    if rows > INT32_MAX or width > INT32_MAX:
        raise ValueError(f"rows ({rows}) and {width_name} ({width}) must each fit in int32")
    return rows, width


class SoftmaxRows(_Binding):
    """ctypes binding of the `softmax_rows` ABI: kseek_softmax_rows(x, y, rows, cols) on the default stream."""

    def __init__(self, lib_path: str | os.PathLike):
        self.lib_path = str(lib_path)
        self._lib = ctypes.CDLL(self.lib_path)
        self._fn = self._lib.kseek_softmax_rows
        self._fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self._fn.restype = ctypes.c_int

    def __call__(self, x, out=None):
        _check_softmax_input(x)
        out = _output_like(x, out)
        rows, cols = _rows_and_width(x, "cols")
        with self.launch_on(x.device, legacy_stream=True):
            status = self._fn(x.data_ptr(), out.data_ptr(), rows, cols)
        if status != 0:
            raise KernelError(f"kseek_softmax_rows returned {status} for rows={rows} cols={cols}")
        return out


def _check_softmax_input(x) -> None:
    _require_tensors(x=x)
    _require_bf16_on_x_device(x)


_softmax: SoftmaxRows | None = None


def softmax_rows(x, out=None):
    """softmax(x) along the last dim with the released kernel (bf16 in and out, fp32 math inside).

    It runs on x's device, in order with torch's current stream there (the module's docstring)."""
    global _softmax
    _check_softmax_input(x)  # before the first call's build: a wrong input costs no nvcc run
    if _softmax is None:
        _softmax = SoftmaxRows(build(SOFTMAX_ROWS))
    return _softmax(x, out=out)


class RmsNorm(_Binding):
    """ctypes binding of the `rmsnorm` ABI: kseek_rmsnorm(x, weight, y, rows, hidden, eps) on the default stream."""

    def __init__(self, lib_path: str | os.PathLike):
        self.lib_path = str(lib_path)
        self._lib = ctypes.CDLL(self.lib_path)
        self._fn = self._lib.kseek_rmsnorm
        self._fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int, ctypes.c_float]
        self._fn.restype = ctypes.c_int

    def __call__(self, x, weight, eps: float = 1e-6, out=None):
        _check_rmsnorm_inputs(x, weight)
        out = _output_like(x, out)
        rows, hidden = _rows_and_width(x, "hidden")
        with self.launch_on(x.device, legacy_stream=True):
            status = self._fn(x.data_ptr(), weight.data_ptr(), out.data_ptr(), rows, hidden, float(eps))
        if status != 0:
            raise KernelError(f"kseek_rmsnorm returned {status} for rows={rows} hidden={hidden}")
        return out


def _check_rmsnorm_inputs(x, weight) -> None:
    _require_tensors(x=x, weight=weight)
    if x.dim() == 0:
        raise ValueError("x must have at least one dim (RMSNorm runs along its last)")
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"weight must be 1-d of x's last dim ({x.shape[-1]}), got shape {tuple(weight.shape)}")
    _require_bf16_on_x_device(x, weight=weight)


_rmsnorm: RmsNorm | None = None


def rmsnorm(x, weight, eps: float = 1e-6, out=None):
    """x / sqrt(mean(x^2, last dim) + eps) * weight with the released kernel (bf16 in and out, fp32 math).

    It runs on x's device, in order with torch's current stream there (the module's docstring)."""
    global _rmsnorm
    _check_rmsnorm_inputs(x, weight)  # before the first call's build: a wrong input costs no nvcc run
    if _rmsnorm is None:
        _rmsnorm = RmsNorm(build(RMSNORM))
    return _rmsnorm(x, weight, eps=eps, out=out)


class GemmBiasGelu(_Binding):
    """ctypes binding of the `gemm_bias_gelu` ABI: kseek_gemm_bias_gelu(a, w, bias, out, m, n, k) on the default
    stream, out = gelu(a @ w^T + bias)."""

    ONE_DEVICE = True  # the repack buffer (cudaMalloc'd on the first device), launch attributes and the SM count

    def __init__(self, lib_path: str | os.PathLike):
        self.lib_path = str(lib_path)
        self._lib = ctypes.CDLL(self.lib_path)
        self._fn = self._lib.kseek_gemm_bias_gelu
        self._fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 3
        self._fn.restype = ctypes.c_int

    def __call__(self, x, weight, bias, out=None):
        import torch

        _check_gemm_inputs(x, weight, bias)
        n, k = weight.shape
        shape = (*x.shape[:-1], n)
        m = math.prod(x.shape[:-1])
        if m > INT32_MAX or n > INT32_MAX or k > INT32_MAX:
            raise ValueError(f"m ({m}), n ({n}) and k ({k}) must each fit in int32")
        if out is None:
            out = torch.empty(shape, dtype=x.dtype, device=x.device)
        elif out.shape != shape or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
            raise ValueError(f"out must be a contiguous bfloat16 tensor of shape {tuple(shape)}, on x's device")
        with self.launch_on(x.device, legacy_stream=True):
            status = self._fn(x.data_ptr(), weight.data_ptr(), bias.data_ptr(), out.data_ptr(), m, n, k)
        if status != 0:
            raise KernelError(f"kseek_gemm_bias_gelu returned {status} for m={m} n={n} k={k}")
        return out


def _check_gemm_inputs(x, weight, bias) -> None:
    _require_tensors(x=x, weight=weight, bias=bias)
    if x.dim() == 0:
        raise ValueError("x must have at least one dim (its last is the reduction, k)")
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight must be 2-d [n, k] with k = x's last dim ({x.shape[-1]}), got {tuple(weight.shape)}")
    if bias.dim() != 1 or bias.shape[0] != weight.shape[0]:
        raise ValueError(f"bias must be 1-d of weight's rows ({weight.shape[0]}), got shape {tuple(bias.shape)}")
    _require_bf16_on_x_device(x, weight=weight, bias=bias)


_gemm_bias_gelu: GemmBiasGelu | None = None


def gemm_bias_gelu(x, weight, bias, out=None):
    """gelu(x @ weight.T + bias) with the released kernel: nn.Linear's layout (weight [n, k], bias [n]), x [..., k],
    bf16 in and out, fp32 accumulation, one rounding; the GELU is erf's to within half a bf16 ulp (v > -3.82).

    It runs on x's device, in order with torch's current stream there (the module's docstring)."""
    global _gemm_bias_gelu
    _check_gemm_inputs(x, weight, bias)  # before the first call's build: a wrong input costs no nvcc run
    if _gemm_bias_gelu is None:
        _gemm_bias_gelu = GemmBiasGelu(build(GEMM_BIAS_GELU))
    return _gemm_bias_gelu(x, weight, bias, out=out)
