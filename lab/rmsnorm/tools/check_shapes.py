"""rmsnorm on the GPU machine, beyond the harness's scenarios: every dispatch path (lanes per row 1..32, one CTA
per row, the two-pass kernel past 32768 columns), rows that start at any offset within 16 bytes (x, y and the
weight each placed 0..7 elements past an aligned address, at different offsets from each other), guard elements
around y that must stay untouched, bit-for-bit repeatability, and the error against float64 next to torch's
eager RMSNorm (LLaMA's) on the same input. Run from the repository root:

    python3 lab/rmsnorm/tools/check_shapes.py [LIB.so | SOURCE.cu] [--quick]

--quick: a few small shapes, one of each path, for compute-sanitizer (memcheck, racecheck, synccheck).
The full set ends with many rows of the widths the streaming kernel takes (aligned, and offset to the other paths).
Prints one line per shape and a last line `checked N shapes, F failed`; exits 1 if any failed.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import RMSNORM, RmsNorm, build

HIDDEN = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 768,
          1000, 1023, 1024, 1025, 2047, 2048, 2049, 3333, 4095, 4096, 4097, 5120, 8192, 8193, 16384, 32760,
          32768, 32769, 65536, 100003]  # fmt: skip
OFFSETS = [(0, 0, 0), (1, 1, 1), (3, 5, 2), (7, 0, 0), (0, 0, 3)]  # (x, y, weight) elements past 16 bytes
QUICK = [(3, 7), (5, 31), (9, 129), (4, 1000), (3, 4097), (2, 8192), (2, 32769), (1, 100003), (600, 1024)]
# Enough rows for the persistent streaming kernel (it takes whole rows of 2 to 32 KiB when there are at least two
# per CTA of its grid: 528 on an H200), each row count leaving the grid's last pass partly empty.
MANY_ROWS = [(h, r) for h in (1024, 2048, 4096, 5120, 8192, 16384) for r in (600, 1111)]
GUARD = 64  # elements either side of y that the kernel must not write
SENTINEL = -12345.0
EPS = 1e-6


def place(n, offset, fill=None):
    """A bf16 view of n elements, `offset` elements past a 16-byte boundary, inside a guarded buffer."""
    buf = torch.full((n + 2 * GUARD + 8,), SENTINEL if fill is None else fill, dtype=torch.bfloat16, device="cuda")
    start = GUARD + offset  # GUARD is a multiple of 8: start is `offset` past an aligned address
    return buf, buf[start : start + n]


def errors(x, w, y):
    xd = x.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + EPS) * w.double()
    xf = x.float()
    eager = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(torch.bfloat16) * w
    norm = ref.norm()
    return ((y.double() - ref).norm() / norm).item(), ((eager.double() - ref).norm() / norm).item()


def run_one(kern, rows, hidden, ox, oy, ow, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    _, x = place(rows * hidden, ox, fill=0.0)
    x.copy_((torch.randn(rows * hidden, device="cuda", generator=g) * 1.5 + 0.3).to(torch.bfloat16))
    x = x.view(rows, hidden)
    _, w = place(hidden, ow, fill=0.0)
    w.copy_((1 + 0.2 * torch.randn(hidden, device="cuda", generator=g)).to(torch.bfloat16))
    ybuf, y = place(rows * hidden, oy)
    y = y.view(rows, hidden)
    status = kern._fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, hidden, EPS)
    torch.cuda.synchronize()
    if status != 0:
        return False, f"status {status}"
    err, torch_err = errors(x, w, y)
    start = GUARD + oy
    guards = torch.cat([ybuf[:start], ybuf[start + rows * hidden :]])
    untouched = bool((guards == SENTINEL).all().item())
    y2 = torch.empty_like(y)
    kern._fn(x.data_ptr(), w.data_ptr(), y2.data_ptr(), rows, hidden, EPS)
    same = torch.equal(y.view(torch.int16), y2.view(torch.int16))
    finite = bool(torch.isfinite(y).all().item())
    ok = untouched and same and finite and err <= max(1.5 * torch_err, 1e-4)
    return ok, f"err {err:.3e} eager {torch_err:.3e} guards_ok={untouched} repeat_same={same} finite={finite}"


def main(argv):
    quick = "--quick" in argv
    libs = [a for a in argv if not a.startswith("--")]
    target = libs[0] if libs else str(RMSNORM)
    kern = RmsNorm(build(Path(target)) if target.endswith(".cu") else target)
    if quick:
        cases = [(r, h, *o) for r, h in QUICK for o in ((0, 0, 0), (3, 5, 2))]
    else:
        cases = [(r, h, *o) for h in HIDDEN for r in ((1, 37) if h < 50000 else (1, 3)) for o in OFFSETS]
        cases += [(r, h, *o) for h, r in MANY_ROWS for o in ((0, 0, 0), (1, 1, 1), (0, 0, 3))]
    failed = 0
    for i, (rows, hidden, ox, oy, ow) in enumerate(cases):
        ok, text = run_one(kern, rows, hidden, ox, oy, ow, seed=i)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} rows={rows} hidden={hidden} x+{ox} y+{oy} w+{ow}: {text}", flush=True)
    print(f"checked {len(cases)} shapes, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
