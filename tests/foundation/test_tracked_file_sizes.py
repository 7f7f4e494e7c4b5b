"""No tracked file over 1 MB unless tests/foundation/large_files.toml lists it with a reason (issue 37: the
repository grew 7x in three days, most of it in result files and a trace that no code read)."""

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT_BYTES = 1_000_000
ALLOWLIST = Path(__file__).with_name("large_files.toml")


def tracked_sizes(root: Path) -> dict[str, int]:
    """Each file git tracks (or would add: new and not ignored) under root, with its size in the working tree."""
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("needs a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = (name for name in listed.split("\0") if name)
    return {name: (root / name).stat().st_size for name in paths if (root / name).is_file()}


def allowed() -> dict[str, str]:
    return tomllib.loads(ALLOWLIST.read_text()).get("allowed", {})


def test_no_tracked_file_is_over_1_mb_unless_listed_with_a_reason():
    over = {name: size for name, size in tracked_sizes(ROOT).items() if size > LIMIT_BYTES}
    unlisted = {name: size for name, size in over.items() if name not in allowed()}
    assert not unlisted, f"over 1 MB and not in {ALLOWLIST.relative_to(ROOT)}: {unlisted}"


def test_every_large_file_entry_names_a_large_tracked_file_and_says_why():
    sizes = tracked_sizes(ROOT)
    for name, reason in allowed().items():
        assert isinstance(reason, str) and len(reason.split()) >= 3, f"{name}: give the reason in words"
        assert sizes.get(name, 0) > LIMIT_BYTES, f"{name} is not a tracked file over 1 MB: drop its entry"


PRODUCT_LIMIT_BYTES = 5_000_000
# What is not the product: the kernel lab (pyproject.toml ships none of it, CI compiles none of it), the tests,
# the docs, the benchmarks and the examples. Everything else is what `pip install .` ships or the site serves
# (templates, static, the tasks' folders) or CI compiles (kernels/*/<released>.cu, tasks/*/naive.cu).
NOT_PRODUCT = ("lab", "tests", "docs", "bench", "examples")


def product_bytes(sizes: dict[str, int]) -> int:
    return sum(size for name, size in sizes.items() if name.split("/", 1)[0] not in NOT_PRODUCT)


def test_the_product_is_under_5_mb_with_the_lab_apart():
    sizes = tracked_sizes(ROOT)
    product = product_bytes(sizes)
    assert sizes.get("kernels/load.py") and product > 1_000_000, "the product's files were not found"
    assert product <= PRODUCT_LIMIT_BYTES, f"the product is {product:,} bytes (limit {PRODUCT_LIMIT_BYTES:,})"
    assert product_bytes({"lab/x/results.json": 9_000_000, "kernels/k/k.cu": 10}) == 10
