"""GPU validation of the folder tasks of the cuda-sm90 target, in one process, for one device call
(docs/benchmarks.md, "Folder tasks on the H200"):

    python3 tests/harness/gpu_validation_tasks.py --out DIR [--tasks softmax_rows,rmsnorm] [--cheats quick]
        [--kernel TASK=PATH ...]

For each task: its starting kernel (or the --kernel given for it) on the full scenario set with the default
baselines (correct on every scenario? the baselines' figures, the evaluation's wall time), then every cheat of
its cheats folder (rejected for its reason?). Writes results.json and one table per task under DIR; prints a
summary last. Needs no Django and no pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpu_harness import evaluate, get_task, list_tasks  # noqa: E402
from gpu_harness.cheats import check_cheats  # noqa: E402
from gpu_harness.report import render_table, summary_line  # noqa: E402
from gpu_harness.tasks import use_folder  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--tasks",
        default="",
        help="comma-separated names or folders (default: every cuda-sm90 folder task but attention_fwd, whose"
        " naive start takes minutes on the full grid and which tests/harness/gpu_validation.py covers)",
    )
    ap.add_argument("--scenarios", default="full")
    ap.add_argument("--cheats", default="quick", help="scenarios for the cheats; 'none' skips them")
    ap.add_argument("--kernel", action="append", default=[], help="TASK=PATH: judge PATH instead of the start")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [use_folder(t) if "/" in t else t for t in args.tasks.split(",") if t]
    if not names:
        names = [n for n in list_tasks() if getattr(get_task(n), "target", "") == "cuda-sm90" and n != "attention_fwd"]
    kernels = dict(k.split("=", 1) for k in args.kernel)
    results, summary = {}, []
    for name in names:
        task = get_task(name)
        kernel = kernels.get(name, task.starting_kernel)
        t0 = time.monotonic()
        r = evaluate(name, kernel, scenarios=args.scenarios, progress=lambda m: print(m, flush=True))
        (out / f"{name}.txt").write_text(render_table(r) + "\n")
        print(render_table(r), flush=True)
        entry = {"kernel": str(kernel), "eval": r.to_dict(), "eval_wall_s": round(time.monotonic() - t0, 1)}
        summary.append(f"{Path(kernel).name} {args.scenarios}: {summary_line(r)}")
        if args.cheats != "none" and getattr(task, "cheats_dir", None):
            cheats = check_cheats(name, scenarios=args.cheats, timeout_s=120.0)
            entry["cheats"] = [
                {"cheat": c.path.name, "expected": c.expected, "status": c.status, "ok": c.ok, "said": c.said[:500],
                 "wall_s": c.wall_s}
                for c in cheats
            ]  # fmt: skip
            for c in cheats:
                summary.append(f"  cheat {c.path.stem:20s} {c.status:9s} {c.verdict} ({c.wall_s:.1f}s)")
            summary.append(f"  {sum(c.ok for c in cheats)}/{len(cheats)} cheats rejected for their reason")
        results[name] = entry
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print("\n== summary")
    print("\n".join(summary))
    bad = [
        n
        for n, e in results.items()
        if not e["eval"]["status"] == "correct" or not all(c["ok"] for c in e.get("cheats", []))
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
