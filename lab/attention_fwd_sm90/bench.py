"""Device-side check and timing of attention_fwd_sm90 against FlashAttention-2 and cuDNN (torch SDPA).

    python3 lab/attention_fwd_sm90/bench.py check --lib LIB --variant 2 --out check.json
    python3 lab/attention_fwd_sm90/bench.py time  --lib LIB --variants 2 --grid fa --out time.json
    python3 lab/attention_fwd_sm90/bench.py compare --libs v5=A.so,v9=B.so --grid harness --out cmp.json

check: fresh random inputs per shape, outputs poisoned with NaN, O and LSE compared with an fp32 reference
(computed in chunks), cuDNN's error on the same inputs beside it, and a second run that must agree bit for
bit. time: triton's do_bench median (25 ms warm-up, 100 ms of repeats), TFLOP/s = 4*B*Hq*Sq*Sk*D, halved for
causal as 4*B*Hq*Sq*avg_Sk*D with avg_Sk = (max(0, Sk-Sq) + Sk)/2 (the harness's and anchors' count). This is my working bench; the
release figures come from `python -m gpu_harness eval`. compare: several builds of the kernel and cuDNN on
the same inputs in one process, per shape and then per head dim against the first build (device_compare.sh).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernels.load import AttentionFwd

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def reference(q, k, v, causal, scale, batches, heads, chunk=2048):
    """fp32 O [len(b), Sq, len(h), D] and LSE [len(b), len(h), Sq] for the chosen batches and heads."""
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    o = torch.empty((len(batches), Sq, len(heads), D), device=q.device, dtype=torch.float32)
    lse = torch.empty((len(batches), len(heads), Sq), device=q.device, dtype=torch.float32)
    cols = torch.arange(Sk, device=q.device)
    for bi, b in enumerate(batches):
        for hi, h in enumerate(heads):
            kh, vh = k[b, :, h // g].float(), v[b, :, h // g].float()
            for r0 in range(0, Sq, chunk):
                r1 = min(Sq, r0 + chunk)
                s = (q[b, r0:r1, h].float() @ kh.T) * scale
                if causal:
                    rows = torch.arange(r0, r1, device=q.device)[:, None]
                    s = s.masked_fill(cols[None, :] > rows + (Sk - Sq), float("-inf"))
                row_lse = torch.logsumexp(s, dim=-1)
                p = torch.exp(s - row_lse[:, None]).nan_to_num(0.0)
                o[bi, r0:r1, hi] = p @ vh
                lse[bi, hi, r0:r1] = row_lse
    return o, lse


def sdpa(q, k, v, causal, scale, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    Sq, Sk = q.shape[1], k.shape[1]
    kw = {"scale": scale, "enable_gqa": q.shape[2] != k.shape[2]}
    if causal and Sq != Sk:
        kw["attn_mask"] = causal_lower_right(Sq, Sk)
    elif causal:
        kw["is_causal"] = True
    be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    with sdpa_kernel(be):
        return F.scaled_dot_product_attention(qt, kt, vt, **kw).transpose(1, 2)


def rel(a, b):
    return (torch.linalg.vector_norm((a - b).float()) / torch.linalg.vector_norm(b.float()).clamp_min(1e-30)).item()


def make_inputs(B, Sq, Sk, Hq, Hkv, D, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda S, H: torch.randn((B, S, H, D), device="cuda", dtype=dtype, generator=g)  # noqa: E731
    return mk(Sq, Hq), mk(Sk, Hkv), mk(Sk, Hkv)


def check_one(kern, variant, B, Sq, Sk, Hq, Hkv, D, causal, dtype_name, seed):
    dtype = DTYPES[dtype_name]
    q, k, v = make_inputs(B, Sq, Sk, Hq, Hkv, D, dtype, seed)
    scale = D**-0.5
    o = torch.full_like(q, float("nan"))
    lse = torch.full((B, Hq, Sq), float("nan"), device="cuda")
    kern(q, k, v, causal=causal, softmax_scale=scale, out=o, lse=lse, variant=variant)
    o2 = torch.full_like(q, float("nan"))
    lse2 = torch.full((B, Hq, Sq), float("nan"), device="cuda")
    kern(q, k, v, causal=causal, softmax_scale=scale, out=o2, lse=lse2, variant=variant)
    torch.cuda.synchronize()
    batches = sorted({0, B - 1})
    heads = sorted({0, Hq // 2, Hq - 1})
    ro, rl = reference(q, k, v, causal, scale, batches, heads)
    oo, ll = o[batches][:, :, heads], lse[batches][:, heads]
    res = {"B": B, "Sq": Sq, "Sk": Sk, "Hq": Hq, "Hkv": Hkv, "D": D, "causal": causal, "dtype": dtype_name}
    res["nan"] = bool(torch.isnan(o).any().item() or torch.isnan(lse).any().item())
    res["deterministic"] = bool(torch.equal(o, o2) and torch.equal(lse.nan_to_num(0), lse2.nan_to_num(0)))
    res["err_o"] = rel(oo.float(), ro)
    fin = torch.isfinite(rl)
    res["inf_match"] = bool(torch.equal(fin, torch.isfinite(ll)))
    res["err_lse"] = rel(ll[fin], rl[fin]) if fin.any() else 0.0
    try:
        ob = sdpa(q, k, v, causal, scale, "cudnn")
        res["err_o_cudnn"] = rel(ob[batches][:, :, heads].float(), ro)
    except Exception as e:
        res["err_o_cudnn"] = None
        res["cudnn_error"] = str(e)[:200]
    base = res["err_o_cudnn"] if res["err_o_cudnn"] is not None else (8e-3 if dtype_name == "bf16" else 1e-3)
    res["ok"] = (
        (not res["nan"])
        and res["deterministic"]
        and res["inf_match"]
        and res["err_o"] <= 2 * base + 1e-4
        and res["err_lse"] <= 1e-3
    )
    return res


CHECK_SHAPES = [(2, 1024, 1024, 8, 8, d) for d in (64, 96, 128, 192, 256)] + [
    (3, 113, 113, 4, 4, 128),
    (2, 1000, 1000, 4, 2, 64),
    (1, 3001, 3001, 2, 2, 256),
    (4, 1, 1, 4, 4, 64),
    (2, 1, 4096, 8, 2, 128),
    (2, 256, 2048, 4, 4, 128),
    (2, 2048, 256, 4, 4, 96),
    (1, 777, 1531, 8, 1, 192),
    (2, 4096, 4096, 16, 4, 128),
    (1, 200, 4096, 4, 4, 96),  # split-KV (v28 on): 8 key ranges, d96's 128-row tile
    (1, 300, 5000, 2, 1, 64),  # split-KV, 8 ranges, MQA
    # one-tile kernel, no split, a consumer warpgroup without query rows (v30's KSEEK_IDLE_WG): decode, the last
    # tile of 192 rows holding 40, and the last of 128 holding 57 (non-causal past KSEEK_PERSIST_SK keys, and over
    # half the SMs' worth of tiles, so neither the persistent kernel nor a split takes them)
    (8, 1, 2048, 16, 4, 128),
    (2, 1000, 1100, 40, 40, 64),
    (1, 3001, 3001, 24, 24, 256),
    # the decode kernel (v31): 1, 2 and 4 rows a KV head (4 = 3 rows padded), key counts that fill no range evenly,
    # the causal diagonal inside the last range, every head dim it takes, and one range (no cluster)
    (8, 1, 4096, 16, 16, 128),
    (3, 2, 1531, 8, 8, 64),
    (2, 1, 777, 4, 1, 256),
    (1, 3, 4097, 2, 2, 128),
    (2, 4, 600, 2, 2, 128),
    (1, 1, 512, 1, 1, 64),
    # v32's 8-row build (KSEEK_DECODE_ROWS=8): 8 rows a KV head (GQA 8:1; 2 draft tokens of GQA 4:1), and 3
    (2, 1, 3000, 16, 2, 128),
    (1, 2, 1000, 8, 2, 64),
    (3, 1, 700, 24, 8, 256),
    # d64's tiles (v37, v38): short keys on wgmma instead of mma.sync, and the 128-row tile where the 192-row one
    # pads (Sq 256 and 250, both masks; Sq 512 causal, 288 tiles: the persistent kernel's causal path on 132 SMs);
    # causal Sq > Sk stays on mma.sync
    (4, 256, 256, 2, 2, 64),
    (2, 250, 200, 4, 1, 64),
    (2, 512, 512, 36, 36, 64),
    # v39's multicast pairs (d128, no mask, one tile a CTA, an even count of query blocks): the last pair's second
    # tile with 64 rows against its peer's 128 (the empty barriers count both), keys ending inside a block
    (2, 1984, 3001, 8, 8, 128),
]


def cmd_check(a):
    kern = AttentionFwd(a.lib)
    out, seed = [], 1000
    for dtype_name in ("bf16", "fp16"):
        for shp in CHECK_SHAPES:
            for causal in (False, True):
                seed += 1
                t0 = time.time()
                r = check_one(kern, a.variant, *shp, causal, dtype_name, seed)
                r["variant"] = a.variant
                out.append(r)
                print(
                    f"{'OK ' if r['ok'] else 'BAD'} v{a.variant} {dtype_name} B{r['B']} Sq{r['Sq']} Sk{r['Sk']} "
                    f"H{r['Hq']}:{r['Hkv']} D{r['D']} c{int(causal)} err_o {r['err_o']:.2e} "
                    f"(cudnn {r['err_o_cudnn'] if r['err_o_cudnn'] is None else format(r['err_o_cudnn'], '.2e')}) "
                    f"err_lse {r['err_lse']:.1e} det {r['deterministic']} nan {r['nan']} "
                    f"inf {r['inf_match']} {time.time() - t0:.1f}s",
                    flush=True,
                )
                Path(a.out).write_text(json.dumps(out, indent=1))
    bad = [r for r in out if not r["ok"]]
    print(f"check v{a.variant}: {len(out) - len(bad)}/{len(out)} ok")


def flops(B, Sq, Sk, Hq, D, causal):
    if not causal:
        return 4.0 * B * Hq * Sq * Sk * D
    avg = (max(0, Sk - Sq) + Sk) / 2  # as the harness and ../shared/anchors count it
    return 4.0 * B * Hq * Sq * avg * D


def grid_shapes(name):
    if name == "fa":
        return [
            (16384 // S, S, S, 2048 // D, 2048 // D, D)
            for D in (64, 128, 256)
            for S in (512, 1024, 2048, 4096, 8192, 16384)
        ]
    if name == "extra":  # the harness's full-grid scenarios beyond the FA grid (tasks/attention_fwd/task.toml)
        out = [(16384 // S, S, S, 2048 // D, 2048 // D, D) for D in (96, 192) for S in (1024, 4096, 16384)]
        out += [(16384 // S, S, S, hq, hkv, 128) for hq, hkv in ((32, 8), (32, 4), (32, 1)) for S in (2048, 8192)]
        out += [(b, s, s, 16, 16, 128) for s, b in ((1, 64), (113, 32), (1000, 16), (3001, 4))]
        out += [
            (b, sq, sk, 16, 16, 128)
            for sq, sk, b in (
                (1, 4096, 8),
                (128, 8192, 4),
                (256, 8192, 2),
                (2048, 8192, 2),
                (113, 3001, 4),
                (1000, 113, 8),
            )
        ]
        out += [
            (b, s, s, h, h, d)
            for b, s, h, d in ((128, 512, 4, 128), (256, 256, 2, 64), (1, 4096, 128, 64), (2, 8192, 32, 128))
        ]
        out += [(4, 4096, 4096, 16, 2, 256)]
        return out
    if name == "small":  # where v4 lost to FA2 in the harness, plus the short end of the FA grid
        return [
            (64, 1, 1, 16, 16, 128),
            (32, 113, 113, 16, 16, 128),
            (8, 1000, 113, 16, 16, 128),
            (256, 256, 256, 2, 2, 64),
            (8, 1, 4096, 16, 16, 128),
            (4, 128, 8192, 16, 16, 128),
            (32, 512, 512, 32, 32, 64),
            (16, 1024, 1024, 32, 32, 64),
            (32, 512, 512, 16, 16, 128),
            (128, 512, 512, 4, 4, 128),
            (32, 512, 512, 8, 8, 256),
            (16, 1000, 1000, 16, 16, 128),
        ]
    if name == "split":  # where split-KV applies (Sq <= 256 against long keys), and d192 beside it
        return [
            (4, 128, 8192, 16, 16, 128),
            (2, 256, 8192, 16, 16, 128),
            (4, 113, 3001, 16, 16, 128),
            (4, 4096, 4096, 10, 10, 192),
            (1, 16384, 16384, 10, 10, 192),
            (4, 4096, 4096, 16, 16, 128),
        ]
    if name == "harness":
        return grid_shapes("fa") + grid_shapes("extra")
    if name == "decode":  # the decode kernel (v31) against the tiles: the harness's decode, GQA, other head dims
        return [
            (8, 1, 4096, 16, 16, 128),  # the harness's decode
            (8, 1, 4096, 32, 8, 128),  # GQA 4:1
            (8, 1, 4096, 16, 16, 64),
            (8, 1, 4096, 16, 16, 256),
            (64, 1, 1024, 16, 16, 128),  # many heads, short rows
            (1, 1, 32768, 16, 16, 128),  # few heads, long rows
            (8, 2, 4096, 16, 16, 128),  # two draft tokens
            (8, 1, 8192, 32, 2, 128),  # GQA 16:1: the tiles still (16 rows a KV head)
            (8, 1, 4096, 32, 8, 64),  # GQA 4:1 at the other head dims
            (8, 1, 4096, 32, 8, 256),
            (8, 1, 4096, 32, 4, 128),  # GQA 8:1: 8 rows a KV head (KSEEK_DECODE_ROWS=8)
            (8, 2, 4096, 32, 8, 128),  # two draft tokens of GQA 4:1: 8 rows
        ]
    if name == "idle":  # a consumer warpgroup with no query row (v30's KSEEK_IDLE_WG), and two shapes without one
        return [
            (8, 1, 4096, 16, 16, 128),  # the harness's decode
            (8, 1, 4096, 32, 8, 128),  # decode with GQA
            (8, 1, 4096, 16, 16, 64),  # 192-row tiles: two of three warpgroups idle
            (4, 3001, 3001, 16, 16, 128),  # the last tile's second warpgroup
            (8, 3001, 3001, 8, 8, 256),
            (4, 4096, 4096, 16, 16, 128),  # no idle warpgroup: the same work
            (16, 1000, 1000, 16, 16, 128),
        ]
    if name == "cover":
        return [
            (4, 4096, 4096, 16, 16, 128),
            (4, 4096, 4096, 32, 8, 128),
            (4, 4096, 4096, 32, 1, 128),
            (16, 1000, 1000, 16, 16, 128),
            (8, 3001, 3001, 8, 8, 256),
            (32, 113, 113, 16, 16, 64),
            (2, 256, 8192, 16, 16, 128),
            (2, 2048, 8192, 16, 16, 128),
            (8, 1, 4096, 32, 8, 128),
            (4, 4096, 4096, 16, 16, 96),
            (4, 4096, 4096, 8, 8, 192),
            (128, 512, 512, 4, 4, 128),
            (1, 16384, 16384, 64, 64, 64),
        ]
    raise SystemExit(f"unknown grid {name}")


def cmd_time(a):
    from triton.testing import do_bench

    kern = AttentionFwd(a.lib)
    variants = [int(x) for x in a.variants.split(",") if x]
    out = []
    for dtype_name in a.dtypes.split(","):
        dtype = DTYPES[dtype_name]
        for B, Sq, Sk, Hq, Hkv, D in grid_shapes(a.grid):
            for causal in (False, True):
                q, k, v = make_inputs(B, Sq, Sk, Hq, Hkv, D, dtype, 7)
                scale = D**-0.5
                fl = flops(B, Sq, Sk, Hq, D, causal)
                row = {"dtype": dtype_name, "B": B, "Sq": Sq, "Sk": Sk, "Hq": Hq, "Hkv": Hkv, "D": D, "causal": causal}
                o = torch.empty_like(q)
                lse = torch.empty((B, Hq, Sq), device="cuda")
                for var in variants:
                    fn = functools.partial(
                        kern, q, k, v, causal=causal, softmax_scale=scale, out=o, lse=lse, variant=var
                    )
                    ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
                    row[f"v{var}"] = fl / ms / 1e9
                    row[f"v{var}_us"] = ms * 1e3
                for be in ("flash", "cudnn"):
                    try:
                        fn = functools.partial(sdpa, q, k, v, causal, scale, be)
                        ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
                        row[be] = fl / ms / 1e9
                    except Exception as e:
                        row[be] = None
                        row[be + "_error"] = str(e)[:120]
                out.append(row)
                vs = " ".join(f"v{x} {row[f'v{x}']:6.1f} ({row[f'v{x}_us']:.1f}us)" for x in variants)
                fa = row["flash"] and f"{row['flash']:6.1f}"
                cu = row["cudnn"] and f"{row['cudnn']:6.1f}"
                print(
                    f"{dtype_name} B{B:<3} Sq{Sq:<5} Sk{Sk:<5} H{Hq}:{Hkv} D{D:<3} c{int(causal)} | {vs} | "
                    f"FA2 {fa} cuDNN {cu}",
                    flush=True,
                )
                Path(a.out).write_text(json.dumps(out, indent=1))
                del q, k, v, o, lse
    groups = {
        "all": lambda r: True,
        "d64": lambda r: r["D"] == 64,
        "d128": lambda r: r["D"] == 128,
        "d256": lambda r: r["D"] == 256,
        "d96/192": lambda r: r["D"] in (96, 192),
    }
    for var in variants:
        for g, sel in groups.items():
            for be in ("flash", "cudnn"):
                r = [row[f"v{var}"] / row[be] for row in out if row.get(be) and sel(row)]
                if r:
                    print(
                        f"v{var} {g:8s} geomean vs {be}: {math.exp(sum(map(math.log, r)) / len(r)):.3f} over {len(r)}"
                    )


def cmd_compare(a):
    """Several builds of the kernel (label=path pairs) and cuDNN on the same inputs, in one process: per-shape
    TFLOP/s, then per-head-dim geomeans of each build against the first one and against cuDNN."""
    from triton.testing import do_bench

    libs = [x.split("=", 1) for x in a.libs.split(",") if x]
    kerns = [(label, AttentionFwd(path)) for label, path in libs]
    out = []
    for dtype_name in a.dtypes.split(","):
        dtype = DTYPES[dtype_name]
        for B, Sq, Sk, Hq, Hkv, D in grid_shapes(a.grid):
            for causal in (False, True):
                q, k, v = make_inputs(B, Sq, Sk, Hq, Hkv, D, dtype, 7)
                scale = D**-0.5
                fl = flops(B, Sq, Sk, Hq, D, causal)
                row = {"dtype": dtype_name, "B": B, "Sq": Sq, "Sk": Sk, "Hq": Hq, "Hkv": Hkv, "D": D, "causal": causal}
                o = torch.empty_like(q)
                lse = torch.empty((B, Hq, Sq), device="cuda")
                # Each shape starts the builds at the next one in turn: whichever runs last on a shape ran slow
                # (seen in earlier compares), so no build is always last.
                turn = len(out) % len(kerns)
                for label, kern in kerns[turn:] + kerns[:turn]:
                    fn = functools.partial(kern, q, k, v, causal=causal, softmax_scale=scale, out=o, lse=lse)
                    row[label] = fl / do_bench(fn, warmup=a.warmup, rep=a.rep, return_mode="median") / 1e9
                try:
                    fn = functools.partial(sdpa, q, k, v, causal, scale, "cudnn")
                    row["cudnn"] = fl / do_bench(fn, warmup=a.warmup, rep=a.rep, return_mode="median") / 1e9
                except Exception:
                    row["cudnn"] = None
                out.append(row)
                cols = " ".join(f"{label} {row[label]:6.1f}" for label, _ in kerns)
                cu = row["cudnn"] and f"{row['cudnn']:6.1f}"
                print(
                    f"{dtype_name} B{B:<3} Sq{Sq:<5} Sk{Sk:<5} H{Hq}:{Hkv} D{D:<3} c{int(causal)} | {cols} | cuDNN {cu}",
                    flush=True,
                )
                Path(a.out).write_text(json.dumps(out, indent=1))
                del q, k, v, o, lse

    def gmean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

    base = kerns[0][0]
    for g, sel in (
        ("all", lambda r: True),
        ("d64", lambda r: r["D"] == 64),
        ("d128", lambda r: r["D"] == 128),
        ("d256", lambda r: r["D"] == 256),
        ("d96/192", lambda r: r["D"] in (96, 192)),
        ("causal", lambda r: r["causal"]),
        ("full", lambda r: not r["causal"]),
    ):
        rows = [r for r in out if sel(r)]
        parts = []
        for label, _ in kerns:
            vs_base = gmean([r[label] / r[base] for r in rows])
            vs_cu = gmean([r[label] / r["cudnn"] for r in rows if r["cudnn"]])
            parts.append(f"{label} x{vs_base:.3f} vs {base}, x{vs_cu:.3f} vs cuDNN")
        print(f"{g:8s} ({len(rows)}): " + " | ".join(parts))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--lib", required=True)
    c.add_argument("--variant", type=int, default=0)
    c.add_argument("--out", required=True)
    t = sub.add_parser("time")
    t.add_argument("--lib", required=True)
    t.add_argument("--variants", default="0")
    t.add_argument("--grid", default="fa")
    t.add_argument("--dtypes", default="bf16")
    t.add_argument("--out", required=True)
    m = sub.add_parser("compare")
    m.add_argument("--libs", required=True, help="label=path,label=path,... (the first is the base)")
    m.add_argument("--grid", default="harness")
    m.add_argument("--dtypes", default="bf16")
    m.add_argument("--warmup", type=int, default=25)
    m.add_argument("--rep", type=int, default=100)
    m.add_argument("--out", required=True)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    {"check": cmd_check, "time": cmd_time, "compare": cmd_compare}[a.cmd](a)


if __name__ == "__main__":
    main()
