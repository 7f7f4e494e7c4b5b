"""Per-group table (markdown) of a harness eval JSON: python tools/group_table.py results/eval_full_v4_h200.json"""

import json
import math
import sys


def group(p):
    b, sq, sk, hq, hkv, d = (p[k] for k in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim"))
    if sq != sk:
        return "Sq != Sk (short queries / long keys, and Sq > Sk)"
    if hkv != hq:
        return "GQA 4:1, 8:1, MQA (d128) and d256 GQA 8:1"
    if d in (96, 192):
        return "head dim 96 and 192"
    if b * sq == 16384 and hq * d == 2048 and d in (64, 128, 256):
        return f"FA grid, d{d} (S 512..16384)"
    if sq in (1, 113, 1000, 3001):
        return "lengths 1, 113, 1000, 3001 (d128)"
    return "large batch / few heads, few batch / many heads"


def gm(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(path):
    d = json.load(open(path))
    rows = {}
    for s in d["scenarios"]:
        p = s["params"]
        key = (group(p), p["dtype"])
        r = rows.setdefault(key, {"n": 0, "ok": 0, "t": [], "fa": [], "cu": [], "xfa": [], "xcu": []})
        r["n"] += 1
        r["ok"] += bool(s["correct"])
        fl = s["tflops"] * s["time_ms"] if s["tflops"] else None  # GFLOP-ish constant per scenario
        r["t"].append(s["tflops"])
        for be, k in (("flash", "fa"), ("cudnn", "cu")):
            ms = (s.get("baseline_ms") or {}).get(be)
            r[k].append(fl / ms if (fl and ms) else None)
        r["xfa"].append((s.get("speedup") or {}).get("flash"))
        r["xcu"].append((s.get("speedup") or {}).get("cudnn"))
    print(
        "| group | dtype | scenarios (correct) | ours TFLOP/s | FA2 TFLOP/s | cuDNN TFLOP/s | x vs FA2 | x vs cuDNN |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (g, dt), r in sorted(rows.items()):
        print(
            f"| {g} | {dt} | {r['n']} ({r['ok']}) | {gm(r['t']):.0f} | {gm(r['fa']):.0f} | {gm(r['cu']):.0f} | "
            f"{gm(r['xfa']):.2f} | {gm(r['xcu']):.2f} |"
        )
    g = d["geomean"]
    print(
        f"\nAll {len(d['scenarios'])} scenarios: status {d['status']}, geomean {d['geomean_tflops']:.1f} TFLOP/s, "
        f"x{g['flash']['speedup']:.3f} vs FA2 (flash) over {g['flash']['count']}, "
        f"x{g['cudnn']['speedup']:.3f} vs cuDNN over {g['cudnn']['count']}."
    )


if __name__ == "__main__":
    main(sys.argv[1])
