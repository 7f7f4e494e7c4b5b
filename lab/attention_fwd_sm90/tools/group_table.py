"""Per-group table (markdown) of a harness eval JSON.

    python lab/attention_fwd_sm90/tools/group_table.py EVAL.json [--base lab/attention_fwd_sm90/results/eval_full_v5_h200.json]

Either JSON may be xz-compressed (the lab keeps all but the releases' evaluations as .json.xz).

Columns: our TFLOP/s and each baseline's (geomeans within the group; flash-attn-4 when the run had it), the
geomean of per-scenario speed-ups against each baseline, and with --base the geomean of per-scenario ratios
of our time against another evaluation of ours (an earlier version), matched by scenario parameters.
"""

import argparse
import json
import lzma
import math

BASELINES = (("flash", "FA2"), ("cudnn", "cuDNN"), ("fa3", "FA3"), ("fa4", "FA4"))


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


def read_json(path):
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def scenario_key(s):
    return json.dumps(s["params"], sort_keys=True)


def main(path, base_path=None):
    d = read_json(path)
    base = {}
    if base_path:
        base = {scenario_key(s): s for s in read_json(base_path)["scenarios"]}
    present = [(be, name) for be, name in BASELINES if be in d.get("baselines", [])]
    rows = {}
    for s in d["scenarios"]:
        p = s["params"]
        r = rows.setdefault((group(p), p["dtype"]), {"n": 0, "ok": 0, "t": [], "base": []})
        r["n"] += 1
        r["ok"] += bool(s["correct"])
        fl = s["tflops"] * s["time_ms"] if s["tflops"] else None  # GFLOP-ish constant per scenario
        r["t"].append(s["tflops"])
        for be, _ in present:
            ms = (s.get("baseline_ms") or {}).get(be)
            r.setdefault(be, []).append(fl / ms if (fl and ms) else None)
            r.setdefault("x" + be, []).append((s.get("speedup") or {}).get(be))
        b = base.get(scenario_key(s))
        if b and b.get("tflops") and s["tflops"]:
            r["base"].append(s["tflops"] / b["tflops"])
    head = ["group", "dtype", "scenarios (correct)", "ours TFLOP/s"]
    head += [f"{name} TFLOP/s" for _, name in present] + [f"x vs {name}" for _, name in present]
    if base:
        head.append("x vs base")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (g, dt), r in sorted(rows.items()):
        cells = [g, dt, f"{r['n']} ({r['ok']})", f"{gm(r['t']):.0f}"]
        cells += [f"{gm(r[be]):.0f}" for be, _ in present] + [f"{gm(r['x' + be]):.2f}" for be, _ in present]
        if base:
            cells.append(f"{gm(r['base']):.3f}")
        print("| " + " | ".join(cells) + " |")
    geo = d["geomean"]
    parts = [f"x{geo[be]['speedup']:.3f} vs {name} over {geo[be]['count']}" for be, name in present if be in geo]
    line = f"\nAll {len(d['scenarios'])} scenarios: status {d['status']}, geomean {d['geomean_tflops']:.1f} TFLOP/s, "
    line += ", ".join(parts)
    if base:
        all_base = [x for r in rows.values() for x in r["base"]]
        line += f"; x{gm(all_base):.3f} vs base over {len(all_base)}"
    print(line + ".")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_json")
    ap.add_argument("--base", help="an earlier eval JSON of ours, for a per-group 'x vs base' column")
    a = ap.parse_args()
    main(a.eval_json, a.base)
