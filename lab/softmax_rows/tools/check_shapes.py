"""softmax_rows on the GPU machine, beyond the harness's scenarios: every dispatch path (lanes per row 1..32,
clusters of 1..8 CTAs, the two-pass kernel past 262144 columns), rows that start at any offset within 16 bytes
(x and y each placed 0..7 elements past an aligned address, and at different offsets from each other), guard
elements around y that must stay untouched, bit-for-bit repeatability, and the error against float64 next to
torch's own bf16 softmax on the same input. For the streaming kernel (versions/v2.cu: x aligned and 8 | cols),
shapes with more rows than it has clusters (its row buffers reused), y aligned and not. For the staged kernel
(versions/v5.cu: narrow rows that are not whole vectors), more rows than one CTA stages. For the row loop
(versions/v7.cu: more rows of 129 .. 8192 vectors than one wave of clusters), odd widths at every offset, with
rows a few more or fewer than a multiple of the clusters. Run from the repository root:

    python3 lab/softmax_rows/tools/check_shapes.py [LIB.so | SOURCE.cu] [--quick]

--quick: a few small shapes, one of each path, for compute-sanitizer (memcheck, racecheck, synccheck):

    compute-sanitizer --tool memcheck python3 lab/softmax_rows/tools/check_shapes.py LIB.so --quick

Prints one line per shape and a last line `checked N shapes, F failed`; exits 1 if any failed.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import SOFTMAX_ROWS, SoftmaxRows, build

COLS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000,
        1023, 1024, 1025, 1031, 2047, 2048, 2049, 4095, 4097, 8192, 8193, 16383, 16384, 32000, 32768, 50257,
        65536, 131071, 262136, 262137, 300000]  # fmt: skip
OFFSETS = [(0, 0), (1, 1), (3, 5), (7, 0), (0, 2)]  # (x, y) elements past a 16-byte boundary
QUICK = [(3, 7), (5, 31), (9, 129), (4, 1000), (3, 4097), (2, 16383), (2, 50257), (1, 262137), (1, 300000)]
# many rows (more than the streaming kernel's clusters, so that its row buffers are reused), x aligned, y at
# offset 0 and 3 (vector and element stores)
MANY = [(2400, 8192), (600, 32768), (9000, 2048), (130, 65536), (70, 65536)]
MANY_QUICK = [(1800, 8192), (500, 32768)]
# narrow rows that are not whole vectors, more of them than one CTA stages (versions/v5.cu's softmax_staged)
NARROW = [(4100, 1), (2500, 7), (5000, 31), (3000, 33), (777, 255), (1000, 256)]
NARROW_QUICK = [(700, 31)]
# many rows that are not whole vectors or start unaligned (versions/v7.cu's softmax_cluster_rows: each thread's
# next row issued while it writes the current one, the last cluster's rows fewer than the others')
LOOPED = [(1500, 1031), (2401, 4097), (1001, 8193), (613, 16383), (389, 32000), (257, 50257), (131, 65521)]
LOOPED_QUICK = [(700, 4097), (301, 32001)]
GUARD = 64  # elements either side of y that the kernel must not write
SENTINEL = -12345.0


def place(n, offset, fill=None):
    """A bf16 view of n elements, `offset` elements past a 16-byte boundary, inside a guarded buffer."""
    buf = torch.full((n + 2 * GUARD + 8,), SENTINEL if fill is None else fill, dtype=torch.bfloat16, device="cuda")
    start = GUARD + (-(GUARD) % 8) + offset  # GUARD is a multiple of 8: start is offset past an aligned address
    return buf, buf[start : start + n]


def run_one(kern, rows, cols, ox, oy, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    _, x = place(rows * cols, ox, fill=0.0)
    x.copy_((torch.randn(rows * cols, device="cuda", generator=g) * 2.0).to(torch.bfloat16))
    x = x.view(rows, cols)
    ybuf, y = place(rows * cols, oy)
    y = y.view(rows, cols)
    status = kern._fn(x.data_ptr(), y.data_ptr(), rows, cols)
    torch.cuda.synchronize()
    if status != 0:
        return False, f"status {status}"
    ref = torch.softmax(x.double(), dim=-1)
    err = ((y.double() - ref).norm() / ref.norm()).item()
    torch_err = ((torch.softmax(x, dim=-1).double() - ref).norm() / ref.norm()).item()
    start = GUARD + (-(GUARD) % 8) + oy
    guards = torch.cat([ybuf[:start], ybuf[start + rows * cols :]])
    untouched = bool((guards == SENTINEL).all().item())
    y2 = torch.empty_like(y)
    kern._fn(x.data_ptr(), y2.data_ptr(), rows, cols)
    same = torch.equal(y.view(torch.int16), y2.view(torch.int16))
    finite = bool(torch.isfinite(y).all().item())
    ok = untouched and same and finite and err <= max(1.5 * torch_err, 1e-4)
    return ok, f"err {err:.3e} torch {torch_err:.3e} guards_ok={untouched} repeat_same={same} finite={finite}"


def main(argv):
    quick = "--quick" in argv
    libs = [a for a in argv if not a.startswith("--")]
    target = libs[0] if libs else str(SOFTMAX_ROWS)
    kern = SoftmaxRows(build(Path(target)) if target.endswith(".cu") else target)
    if quick:
        cases = [(r, c, ox, oy) for r, c in QUICK for ox, oy in ((0, 0), (3, 5))]
        cases += [(r, c, 0, oy) for r, c in MANY_QUICK for oy in (0, 3)]
        cases += [(r, c, ox, oy) for r, c in NARROW_QUICK for ox, oy in ((0, 0), (3, 5))]
        cases += [(r, c, ox, oy) for r, c in LOOPED_QUICK for ox, oy in ((0, 0), (3, 5))]
    else:
        cases = [(r, c, ox, oy) for c in COLS for r in ((1, 37) if c < 100000 else (1, 3)) for ox, oy in OFFSETS]
        cases += [(r, c, 0, oy) for r, c in MANY for oy in (0, 3)]
        cases += [(r, c, ox, oy) for r, c in NARROW for ox, oy in OFFSETS]
        cases += [(r, c, ox, oy) for r, c in LOOPED for ox, oy in OFFSETS]
    failed = 0
    for i, (rows, cols, ox, oy) in enumerate(cases):
        ok, text = run_one(kern, rows, cols, ox, oy, seed=i)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} rows={rows} cols={cols} x+{ox} y+{oy}: {text}", flush=True)
    print(f"checked {len(cases)} shapes, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
