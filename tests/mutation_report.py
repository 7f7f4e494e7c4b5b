"""Per-module figures of the last mutation run (`make mutation`): how many of each module's mutants the tests
killed, out of those that are not equivalent to the original.

mutmut (configured in pyproject.toml, [tool.mutmut]) makes each small change to the listed modules and runs the
tests that reach the changed function; a change no test notices "survives". Some changes cannot be noticed
because they do not change behaviour (equivalent mutants); each is listed, with why, in
tests/mutation_equivalent.toml and left out of the figure. A change to a branch that only PostgreSQL takes (the
event store's SQL for it, its refusals of data) cannot be noticed on the SQLite database `make mutation` runs on;
each is listed in the same file's [postgresql_only] table, counted apart ("pg only") and checked by a run on
PostgreSQL (docs/testing.md).

    python tests/mutation_report.py            # the table
    python tests/mutation_report.py --survivors  # and each surviving mutant's name (`mutmut show NAME`)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "tests" / "mutation_equivalent.toml"
KILLED = {"killed", "timeout"}  # a mutant that makes the tests hang is caught too (mutmut counts it so)


def results(mutmut: str) -> dict[str, str]:
    """mutant name -> status, as `mutmut results --all true` prints them."""
    done = subprocess.run([mutmut, "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mutmut results failed: {done.stderr.strip()[-2000:]}")
    out = {}
    for line in done.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and ".x" in name:
            out[name] = status
    if not out:
        sys.exit("no mutation results: run `make mutation` first")
    return out


def module_of(mutant: str) -> str:
    # gpu_harness.depcheck.x_check_headers__mutmut_3 -> gpu_harness/depcheck.py
    return mutant.split(".x", 1)[0].replace(".", "/") + ".py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants too")
    parser.add_argument("--mutmut", default=str(Path(sys.executable).with_name("mutmut")))
    args = parser.parse_args()
    listed = tomllib.loads(EQUIVALENT.read_text())
    equivalent, postgresql_only = listed.get("equivalent", {}), listed.get("postgresql_only", {})
    by_module: dict[str, Counter] = defaultdict(Counter)
    survivors = []
    for name, status in sorted(results(args.mutmut).items()):
        if name in equivalent:
            kind = "equivalent"
        elif status in KILLED:
            kind = "killed"  # a PostgreSQL-only mutant killed anyway (say, by a run on PostgreSQL) counts as killed
        elif name in postgresql_only:
            kind = "postgresql"
        else:
            kind = status
        by_module[module_of(name)][kind] += 1
        if kind == "survived":
            survivors.append(name)
    print(
        f"{'module':40}{'mutants':>9}{'equiv.':>8}{'pg only':>9}{'killed':>8}{'survived':>10}{'other':>7}"
        f"{'killed %':>10}"
    )
    for module, counts in sorted(by_module.items()):
        total = sum(counts.values())
        judged = total - counts["equivalent"] - counts["postgresql"]
        other = judged - counts["killed"] - counts["survived"]
        share = f"{100 * counts['killed'] / judged:.1f}" if judged else "-"
        print(
            f"{module:40}{total:>9}{counts['equivalent']:>8}{counts['postgresql']:>9}{counts['killed']:>8}"
            f"{counts['survived']:>10}{other:>7}{share:>10}"
        )
    if args.survivors:
        print("\nsurvivors (`mutmut show NAME` prints the change):")
        print("\n".join(f"  {name}" for name in survivors) or "  none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
