"""GPU validation of the harness, in one process, for one device call (see docs/benchmarks.md, "Harness").

    python3 tests/harness/gpu_validation.py --out DIR [--budget-s 330]

1. builds naive.cu and every cheat in parallel (warms the build cache);
2. evaluates naive.cu on the quick subset with the default baselines (speedups, TFLOP/s, baseline figures);
3. evaluates every cheat in tasks/attention_fwd/cheats on two small scenarios and checks the reason;
4. with the time left, naive.cu on the full grid (correctness only, bounded so the call ends in time).
Writes results.json and a log under DIR; prints a short summary last. Needs no Django and no pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpu_harness import evaluate  # noqa: E402
from gpu_harness.build import build  # noqa: E402
from gpu_harness.cheats import EXPECT_RE  # noqa: E402
from gpu_harness.report import render_table, summary_line  # noqa: E402

NAIVE = REPO / "tasks" / "attention_fwd" / "naive.cu"
CHEATS = sorted((REPO / "tasks" / "attention_fwd" / "cheats").glob("*.cu"))
CHEAT_SCENARIOS = ["bf16_b32_sq113_sk113_h16x16_d128_causal", "fp16_b8_sq1_sk4096_h16x16_d128_causal"]
LAST = ("illegal_address", "hang")  # they disturb the GPU: run them after the others


def expected(path: Path) -> str:
    return EXPECT_RE.search(path.read_text()).group(1).strip()


def anchors_compare(r, say) -> None:
    """Baseline TFLOP/s measured here next to ../shared/anchors where the shape is the same."""
    anchors = {}
    root = REPO.parent / "shared" / "anchors"
    for f in sorted(root.glob("h200_*.json")) if root.exists() else []:
        data = json.loads(f.read_text())
        rows = data["rows"] if isinstance(data, dict) else data
        for row in rows:
            if "dtype" in row:
                key = (
                    "bf16" if row["dtype"] == "bfloat16" else "fp16",
                    row["B"],
                    row["Sq"],
                    row["Sk"],
                    row["Hq"],
                    row["Hkv"],
                    row["D"],
                    row["causal"],
                )
            else:
                key = ("bf16", row["b"], row["s"], row["s"], row["h"], row["h"], row["d"], row["causal"])
            anchors.setdefault(key, {}).update({k: row[k] for k in ("cudnn", "flash", "fa4") if k in row})
    for s in r.scenarios:
        p = s.params
        key = (
            p["dtype"],
            p["batch"],
            p["seqlen_q"],
            p["seqlen_k"],
            p["heads_q"],
            p["heads_kv"],
            p["head_dim"],
            p["causal"],
        )
        if key in anchors and s.time_ms and s.tflops:
            here = {b: round(s.tflops * s.time_ms / ms, 1) for b, ms in s.baseline_ms.items() if ms}
            line = f"anchor check {s.id}: here {here} anchors {anchors[key]}"
            say(line)
            print(line)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=330.0)
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--cheats", default="", help="comma-separated cheat names (default: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "validation.log", "a")
    t0 = time.monotonic()

    def say(line: str) -> None:
        log.write(f"[{time.monotonic() - t0:7.1f}s] {line}\n")
        log.flush()

    results: dict = {"steps": {}}

    def save():
        (out / "results.json").write_text(json.dumps(results, indent=1))

    # 1. builds
    t = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        builds = list(pool.map(lambda p: build(p, "cuda", arch="sm_90a"), [NAIVE, *CHEATS]))
    results["steps"]["build_s"] = round(time.monotonic() - t, 1)
    say(f"built {len(builds)} kernels in {results['steps']['build_s']}s")
    static = {}
    for p, b in zip([NAIVE, *CHEATS], builds):
        static[p.name] = {"ok": b.ok, "reason": b.reason, "kernels": b.kernels}
    results["builds"] = static
    save()

    # 2. naive, quick subset, default baselines
    t = time.monotonic()
    r = evaluate("attention_fwd", NAIVE, scenarios="quick", progress=say)
    results["steps"]["naive_quick_s"] = round(time.monotonic() - t, 1)
    (out / "naive_quick.json").write_text(json.dumps(r.to_dict(), indent=1))
    (out / "naive_quick.txt").write_text(render_table(r))
    results["naive_quick"] = {"status": r.status, "summary": summary_line(r), "geomean": r.geomean}
    save()
    print(render_table(r))

    anchors_compare(r, say)

    # 3. cheats
    cheats = sorted(CHEATS, key=lambda p: (p.stem in LAST, LAST.index(p.stem) if p.stem in LAST else 0, p.stem))
    verdicts = {}
    if args.cheats:
        cheats = [p for p in cheats if p.stem in args.cheats.split(",")]
    for p in cheats:
        exp = expected(p)
        t = time.monotonic()
        if not static[p.name]["ok"]:
            said, status = static[p.name]["reason"] or "", "error"
        else:
            cr = evaluate(
                "attention_fwd",
                p,
                scenarios=CHEAT_SCENARIOS,
                baselines=[],
                progress=say,
                timeout_s=30 if p.stem == "hang" else 120,
            )
            said = " ".join([cr.reason or ""] + [s.reason or "" for s in cr.scenarios])
            status = cr.status
        rejected = status in ("error", "incorrect")
        verdicts[p.stem] = {
            "status": status,
            "rejected": rejected,
            "expected": exp,
            "right_reason": exp in said,
            "reason": said[:400],
            "s": round(time.monotonic() - t, 1),
        }
        say(f"cheat {p.stem}: {status}, right reason: {exp in said}")
        results["cheats"] = verdicts
        save()

    # 4. full grid, correctness only, in the time left
    left = args.budget_s - (time.monotonic() - t0)
    if not args.skip_full and left > 60:
        t = time.monotonic()
        fr = evaluate(
            "attention_fwd", NAIVE, scenarios="full", baselines=[], timing=False, progress=say, timeout_s=left - 15
        )
        results["steps"]["naive_full_correctness_s"] = round(time.monotonic() - t, 1)
        results["naive_full"] = {
            "status": fr.status,
            "reason": fr.reason,
            "summary": summary_line(fr),
            "correct": sum(s.correct for s in fr.scenarios),
            "total": len(fr.scenarios),
            "max_error_over_tol": max(
                (s.error / s.tolerance for s in fr.scenarios if s.error is not None and s.tolerance), default=None
            ),
        }
        (out / "naive_full.json").write_text(json.dumps(fr.to_dict(), indent=1))
        save()
    # summary
    print("\n== summary")
    print(f"naive quick: {results['naive_quick']['summary']}")
    for name, v in verdicts.items():
        print(
            f"cheat {name:20s} {v['status']:9s} rejected={v['rejected']} right_reason={v['right_reason']} ({v['s']}s)"
        )
    if "naive_full" in results:
        print(f"naive full (correctness only): {results['naive_full']['summary']}")
    print("steps:", json.dumps(results["steps"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
