"""Every cheating CPU kernel in tasks/matmul_cpu/cheats must be rejected, for the reason its header names."""

import re
from pathlib import Path

import pytest

from gpu_harness import evaluate, get_task
from gpu_harness.report import render_table

from .conftest import needs_gxx

CHEATS = sorted((Path(__file__).resolve().parents[2] / "tasks" / "matmul_cpu" / "cheats").glob("*.cpp"))
SCENARIOS = ["m7_n13_k5", "m127_n255_k65"]


def expected_reason(path: Path) -> str:
    m = re.search(r"expect: (.+)", path.read_text())
    assert m, f"{path.name} has no '// expect: <reason>' line"
    return m.group(1).strip()


def test_there_are_cheats_to_run():
    assert len(CHEATS) >= 10


def test_the_task_folder_names_these_cheats():
    assert get_task("matmul_cpu").cheats_dir == CHEATS[0].parent  # tasks/matmul_cpu/task.toml's `cheats`


@needs_gxx
@pytest.mark.parametrize("path", CHEATS, ids=[p.stem for p in CHEATS])
def test_cheating_kernel_is_rejected_with_the_right_reason(path):
    r = evaluate("matmul_cpu", path, scenarios=SCENARIOS, timeout_s=15)
    assert r.status in ("error", "incorrect"), render_table(r)
    assert not r.all_correct
    said = " ".join([r.reason or ""] + [s.reason or "" for s in r.scenarios])
    assert expected_reason(path) in said, said
