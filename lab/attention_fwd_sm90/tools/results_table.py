"""The lab's summary table: one row per harness evaluation of attention_fwd_sm90 (the release's JSON in
kernels/attention_fwd_sm90/results/, every other one in lab/attention_fwd_sm90/results/, plain or .json.xz).

    python lab/attention_fwd_sm90/tools/results_table.py            # print the table
    python lab/attention_fwd_sm90/tools/results_table.py --write    # rewrite lab/attention_fwd_sm90/results/summary.md

Runs anywhere (the standard library and the harness's figures, `gpu_harness/figures.py`, which needs nothing
else). tests/harness/test_kernel_lab.py holds summary.md to what the JSONs say.
"""

import argparse
import hashlib
import json
import lzma
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from gpu_harness import figures  # noqa: E402  (the repository root first)

FOLDERS = (ROOT / "kernels" / "attention_fwd_sm90" / "results", ROOT / "lab" / "attention_fwd_sm90" / "results")
VERSIONS = ROOT / "lab" / "attention_fwd_sm90" / "versions"
SUMMARY = ROOT / "lab" / "attention_fwd_sm90" / "results" / "summary.md"
BASELINE_ORDER = ("flash", "cudnn", "fa3", "fa4")  # the columns' order; any other baseline follows by name
_VERSION = re.compile(r"_(v\d+)")

HEADER = """# attention_fwd_sm90: every harness evaluation, one row each

Made by `python lab/attention_fwd_sm90/tools/results_table.py --write` from the JSONs it names (paths from the
repository root; `.xz` ones read with `xz -dc`). Full JSON is kept plain only for the releases (the kernel
README's "### vN" heading, releases.md's "## vN" ones); the others are xz-compressed, bit for bit. "correct" = scenarios judged correct of
those run; each baseline's column is the geomean of per-scenario speed-ups with its 95% interval, as every page
writes it ("no difference" where the interval holds 1.0; the count of scenarios in brackets where the baseline
ran fewer); "started" is the evaluation's own start time (UTC); "device" the card it ran on, "child" where its
candidate and baselines ran (`bubblewrap`: the child's sandbox, `none`: uncontained, `-`: not recorded, before the
sandbox); the figures of two rows compare only on one device; "source" is the file of
`versions/` whose sha256 is the evaluated kernel's, or the start of that sha256 where none is (a build that was
not kept as a version, named in the JSON's file name).
"""


def read_json(path: Path) -> dict:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def evaluations() -> list[Path]:
    return [p for folder in FOLDERS for p in folder.glob("eval_*.json*") if p.name.endswith((".json", ".json.xz"))]


def versions_by_sha256() -> dict[str, str]:
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p.name for p in VERSIONS.glob("*.cu")}


def row(path: Path, versions: dict[str, str]) -> dict:
    result = read_json(path)
    scenarios = result.get("scenarios") or []
    source = versions.get(result.get("kernel_sha256"))
    version = _VERSION.match("_" + source) if source else _VERSION.search(path.name)
    geomean = {name: g for name, g in (result.get("geomean") or {}).items() if g.get("speedup")}
    return {
        "version": version.group(1) if version else "-",
        "source": source or f"sha256 {(result.get('kernel_sha256') or '?')[:12]}",
        "started": (result.get("started_at") or "")[:16].replace("T", " "),
        "device": (figures.device_of(result) or "-").removeprefix("NVIDIA "),
        "child": result.get("child_sandbox") or "-",
        "correct": f"{sum(bool(s.get('correct')) for s in scenarios)}/{len(scenarios)}",
        "geomean": geomean,
        "texts": {name: figures.verdict_speedup_text(result, name, times="x") for name in geomean},
        "json": path.relative_to(ROOT).as_posix(),
    }


def _cell(r: dict, name: str, scenarios: int) -> str:
    g = r["geomean"].get(name)
    if not g:
        return ""
    count = "" if g.get("count") == scenarios else f" ({g.get('count')})"
    return f"{r['texts'][name]}{count}"


def _version_number(r: dict) -> int:
    return int(r["version"][1:]) if r["version"] != "-" else -1


def table() -> str:
    versions = versions_by_sha256()
    rows = sorted(
        (row(p, versions) for p in evaluations()), key=lambda r: (_version_number(r), r["started"], r["json"])
    )
    seen = {name for r in rows for name in r["geomean"]}
    baselines = [b for b in BASELINE_ORDER if b in seen] + sorted(seen - set(BASELINE_ORDER))
    lines = [
        "| version | source | started | device | child | correct | "
        + " | ".join(f"x vs {b}" for b in baselines)
        + " | JSON |",
        "|---" * (7 + len(baselines)) + "|",
    ]
    for r in rows:
        total = int(r["correct"].split("/")[1])
        cells = [_cell(r, b, total) for b in baselines]
        lines.append(
            f"| {r['version']} | {r['source']} | {r['started']} | {r['device']} | {r['child']} | {r['correct']} | "
            + " | ".join(cells)
            + f" | `{r['json']}` |"
        )
    return HEADER + "\n" + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {SUMMARY.relative_to(ROOT)}")
    text = table()
    if parser.parse_args().write:
        SUMMARY.write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
