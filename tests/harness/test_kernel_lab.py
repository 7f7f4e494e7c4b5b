"""The kernel lab, apart from the product (issue 37): lab/attention_fwd_sm90/ keeps the versions, scripts and
results of the released kernel in kernels/attention_fwd_sm90/. Its summary table is what its evaluations say,
plain JSON is kept only for releases, and every path the repository's docs and scripts give to a file of either
folder leads to one."""

import glob
import re
import subprocess
import tomllib
from pathlib import Path

from .conftest import load_kernel_tool

ROOT = Path(__file__).resolve().parents[2]
RELEASED = ROOT / "kernels" / "attention_fwd_sm90"
LAB = ROOT / "lab" / "attention_fwd_sm90"
_PATH = r"[A-Za-z0-9_.{},*/-]+"
_FULL_PATH = re.compile(r"(?:kernels|lab)/attention_fwd_sm90/" + _PATH)
# results/x, versions/x, tools/x, ../x written from inside one of the two folders
_RELATIVE_PATH = re.compile(
    r"(?<![A-Za-z0-9_./-])(?:(?:\.\./)+" + _PATH + r"|(?:results|versions|tools)/" + _PATH + ")"
)
_TEXT_SUFFIXES = (".md", ".sh", ".py", ".toml", ".txt", ".cfg", ".ini")


def test_the_lab_summary_table_is_what_its_evaluations_say():
    table = load_kernel_tool("results_table")
    summary = LAB / "results" / "summary.md"
    assert summary.read_text() == table.table(), "run: python lab/attention_fwd_sm90/tools/results_table.py --write"
    assert len(table.evaluations()) == summary.read_text().count("| `")  # one row per evaluation


def test_the_summary_table_writes_each_figure_with_its_noise():
    # a geomean whose interval holds 1.0 is no speed-up: the table says "no difference", as the pages do, and
    # every other figure carries its interval (v34 against FA3 on an H100, 2026-12-06: 1.015x, 0.973x to 1.08x)
    rows = {
        line.split("`")[-2]: line for line in (LAB / "results" / "summary.md").read_text().splitlines() if "| `" in line
    }
    v34_fa3 = rows["lab/attention_fwd_sm90/results/eval_full_v34_fa3_h100_2026-12-06.json.xz"]
    assert "| no difference (0.973–1.08x) (90) |" in v34_fa3
    assert re.search(r"\| 1\.\d{3}x \([\d.]+–[\d.]+x\) \(176\) \|", v34_fa3)  # cuDNN's, with its interval


def test_the_summary_table_says_on_which_card_and_where_the_child_ran():
    # the same file measured on an H100 and an H200, or contained and not, gives other figures (FA3's slowed in
    # the sandbox on 2026-12-07): each row names its card and its child's sandbox, as the JSON records them
    rows = {
        line.split("`")[-2]: line for line in (LAB / "results" / "summary.md").read_text().splitlines() if "| `" in line
    }
    contained = rows["lab/attention_fwd_sm90/results/eval_full_v38_contained_h100_2026-12-07.json.xz"]
    uncontained = rows["lab/attention_fwd_sm90/results/eval_full_v38_uncontained_h100_2026-12-07.json.xz"]
    on_h200 = rows["lab/attention_fwd_sm90/results/eval_full_v38_sandboxed_h200_2026-12-07.json.xz"]
    assert "| H100 80GB HBM3 | bubblewrap | 180/180 |" in contained
    assert "| H100 80GB HBM3 | none | 180/180 |" in uncontained
    assert "| H200 | bubblewrap | 180/180 |" in on_h200


def test_full_json_is_kept_plain_only_for_the_releases():
    # The releases are the kernel README's "### vN" heading (the released file) and the lab's releases.md "## vN"
    # headings (the ones before it), each naming its evaluation; the current one's JSON is what release.toml cites,
    # in the product's folder, and nothing else is there.
    headings = [line for line in (RELEASED / "README.md").read_text().splitlines() if line.startswith("### v")]
    headings += [line for line in (LAB / "releases.md").read_text().splitlines() if line.startswith("## v")]
    named = {Path(p).name for line in headings for p in re.findall(r"results/(eval_[\w.-]+\.json)", line)}
    manifest = tomllib.loads((RELEASED / "release.toml").read_text())
    assert [p.name for p in (RELEASED / "results").iterdir()] == [Path(manifest["results"]).name]
    plain = {p.name for p in (LAB / "results").glob("*.json")}
    assert plain and plain <= named, sorted(plain - named)
    others = [p.name for p in (LAB / "results").iterdir() if p.suffix not in (".json", ".xz", ".gz", ".md")]
    assert not others, others


def _expand(pattern: str) -> list[str]:
    braces = re.search(r"\{([^{}]*)\}", pattern)
    if not braces:
        return [pattern]
    head, tail = pattern[: braces.start()], pattern[braces.end() :]
    return [name for choice in braces.group(1).split(",") for name in _expand(head + choice + tail)]


def _leads_somewhere(pattern: str, bases: list[Path]) -> bool:
    pattern = pattern.rstrip(".,;:")
    if pattern.count("}") > pattern.count("{"):  # the end of a shell default, ${1:-path}
        pattern = pattern.removesuffix("}")
    if not all((base / pattern).resolve().is_relative_to(ROOT) for base in [*bases, ROOT]):
        return True  # beside the checkout (../shared/ from the repository root): not this repository's to check
    return all(any(glob.glob(str(base / name)) for base in bases) for name in _expand(pattern))


def _text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    names = [
        n
        for n in listed.split("\0")
        if n.endswith(_TEXT_SUFFIXES) and not n.startswith("lab/attention_fwd_sm90/results/")
    ]
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def test_every_path_to_the_released_kernel_or_its_lab_leads_to_a_file():
    broken = []
    for path in _text_files():
        text = path.read_text(errors="replace")
        inside = next((folder for folder in (RELEASED, LAB) if path.is_relative_to(folder)), None)
        found = [(token, [ROOT]) for token in _FULL_PATH.findall(text)]
        if inside:  # relative to the file's folder, or to its kernel folder (scripts run from there)
            found += [(token, [path.parent, inside]) for token in _RELATIVE_PATH.findall(text)]
        broken += [f"{path.relative_to(ROOT)}: {token}" for token, bases in found if not _leads_somewhere(token, bases)]
    assert not broken, "\n".join(broken)
