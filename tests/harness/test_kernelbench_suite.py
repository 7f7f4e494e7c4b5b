"""`task import-kernelbench FOLDER` (gpu_harness/kernelbench_suite.py), through the real CLI in a child process: a
folder of problems imports as a suite, several at a time, a line per problem, each imported and checked or refused
with its reason, the whole written to suite.json; a second run skips what is done and finishes what a stopped run
left (a folder written but not checked, a half-written folder)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness.cli import main
from gpu_harness.kernelbench_suite import available_memory
from gpu_harness.taskspec import load_spec

from .test_kernelbench_import import PROBLEMS

REPO = Path(__file__).resolve().parents[2]

# Two problems that each wait, when imported, until the other has started: the suite imports both only when it
# runs them at the same time (one at a time, the first would give up after its bound and be refused).
MEETS = '''"""Imported only while {partner} is being imported too."""

import pathlib
import time

import torch
from torch import nn

MARKS = pathlib.Path({marks!r})
(MARKS / {me!r}).touch()
_give_up = time.monotonic() + 120
while not (MARKS / {partner!r}).exists():
    if time.monotonic() > _give_up:
        raise RuntimeError("{partner} never started: the problems were not imported at the same time")
    time.sleep(0.05)


class Model(nn.Module):
    def forward(self, x):
        return x * {factor}


batch_size = 4
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "gpu_harness", "task", "import-kernelbench", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def progress(stderr: str) -> dict:
    """file -> the rest of its progress line ("imported as ...", "refused: ...")."""
    lines = [re.match(r"\[\s*(\d+)/(\d+)\] (\S+): (.*)", line) for line in stderr.splitlines()]
    return {m.group(3): m.group(4) for m in lines if m}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """A folder of five problems imported once, two at a time."""
    root = tmp_path_factory.mktemp("kbsuite")
    src, marks = root / "level", root / "marks"
    src.mkdir()
    marks.mkdir()
    (src / "1_meets_two.py").write_text(MEETS.format(marks=str(marks), me="1", partner="2", factor=2.0))
    (src / "2_meets_one.py").write_text(MEETS.format(marks=str(marks), me="2", partner="1", factor=3.0))
    for name in ("elementwise_relu", "hub_pretrained", "dropout_training"):
        shutil.copy(PROBLEMS / f"{name}.py", src / f"{name}.py")
    done = cli(str(src), "--dir", str(root / "out"), "--jobs", "2", cwd=root)
    return root, src, root / "out", done


def test_a_folder_imports_as_a_suite_in_parallel_with_a_line_per_problem_and_a_manifest(suite):
    root, src, out, done = suite
    assert done.returncode == 0, done.stderr
    lines = progress(done.stderr)
    assert set(lines) == {p.name for p in src.iterdir()}
    assert re.fullmatch(r"imported as kb_1_meets_two \(main, half, odd, double\), check passed \(\d+\.\d s\)",
                        lines["1_meets_two.py"])  # fmt: skip
    assert lines["2_meets_one.py"].startswith("imported as kb_2_meets_one")
    assert lines["elementwise_relu.py"].startswith("imported as elementwise_relu")
    assert lines["hub_pretrained.py"].startswith("refused: hub_pretrained.py downloads its model from a hub")
    assert lines["dropout_training.py"].startswith("refused: the forward is not deterministic")
    assert "3 imported and checked, 0 imported but too large to check here, 2 refused, 0 failed their check" in (
        done.stdout
    )
    assert f"KSEEK_TASKS_DIR={out.resolve()}" in done.stdout  # how the dashboard comes to list them

    manifest = json.loads((out / "suite.json").read_text())
    assert manifest["suite"] == "level" and manifest["source"] == str(src.resolve())
    assert manifest["counts"] == {"imported": 3, "imported, not checked": 0, "refused": 2, "check failed": 0}
    entries = {e["file"]: e for e in manifest["problems"]}
    assert list(entries)[:2] == ["1_meets_two.py", "2_meets_one.py"]  # KernelBench's order: by number
    for file in ("1_meets_two.py", "2_meets_one.py", "elementwise_relu.py"):
        e = entries[file]
        assert e["outcome"] == "imported" and e["scenarios"] == ["main", "half", "odd", "double"]
        assert e["check"].startswith("ran on ") and e["check"].endswith("outputs of the right shape and dtype")
        assert e["abi"] == load_spec(out / e["name"]).abi()
        assert len(e["sha256"]) == 64
    hub = entries["hub_pretrained.py"]
    assert hub["outcome"] == "refused" and "nothing was run" in hub["reason"] and "name" in hub
    assert not (out / hub["name"]).exists()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "elementwise_relu",
        "kb_1_meets_two",
        "kb_2_meets_one",
    ]


def test_a_second_run_skips_what_is_done_and_finishes_what_a_stopped_run_left(suite, tmp_path):
    root, src, out, first = suite
    assert first.returncode == 0, first.stderr
    again = tmp_path / "out"
    shutil.copytree(out, again)
    for mark in (root / "marks").iterdir():  # a problem imported again would now wait in vain and be refused
        mark.unlink()
    manifest = json.loads((again / "suite.json").read_text())
    manifest["problems"] = [e for e in manifest["problems"] if e["file"] != "elementwise_relu.py"]
    (again / "suite.json").write_text(json.dumps(manifest))  # stopped after writing the folder, before its check
    (again / ".kb_9_half.importing-x1y2").mkdir()  # a folder a stopped import left half written
    toml = again / "kb_1_meets_two" / "task.toml"
    written = toml.stat().st_mtime_ns

    done = cli(str(src), "--dir", str(again), "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = progress(done.stderr)
    for file, name in (("1_meets_two.py", "kb_1_meets_two"), ("2_meets_one.py", "kb_2_meets_one")):
        assert lines[file].startswith(f"skipped: imported as {name} before (same source, check passed)")
    assert lines["elementwise_relu.py"].startswith("checked elementwise_relu (main, half, odd, double), check passed")
    assert toml.stat().st_mtime_ns == written
    assert not (again / ".kb_9_half.importing-x1y2").exists()
    after = json.loads((again / "suite.json").read_text())
    assert after["counts"] == {"imported": 3, "imported, not checked": 0, "refused": 2, "check failed": 0}


def test_a_folder_that_holds_another_version_of_a_problem_is_left_alone_and_said(tmp_path):
    src, out = tmp_path / "level", tmp_path / "out"
    src.mkdir()
    shutil.copy(PROBLEMS / "hub_pretrained.py", src / "hub_pretrained.py")
    (src / "3_relu.py").write_text((PROBLEMS / "elementwise_relu.py").read_text())
    (out / "kb_3_relu").mkdir(parents=True)
    (out / "kb_3_relu" / "problem.py").write_text("# another version\n")
    done = cli(str(src), "--dir", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert progress(done.stderr)["3_relu.py"].startswith(
        f"refused: {out / 'kb_3_relu'} holds another version of 3_relu.py (or none): remove it"
    )
    assert (out / "kb_3_relu" / "problem.py").read_text() == "# another version\n"


@pytest.mark.skipif(available_memory() > 200 << 30, reason="this machine could check a 64 GiB weight")
def test_an_import_whose_check_would_exhaust_this_machine_is_kept_unchecked_and_said(tmp_path):
    src, out = tmp_path / "level", tmp_path / "out"
    src.mkdir()
    shutil.copy(PROBLEMS / "huge_weight_linear.py", src / "huge_weight_linear.py")  # a 64 GiB weight
    done = cli(str(src), "--dir", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = progress(done.stderr)["huge_weight_linear.py"]
    assert said.startswith("imported, not checked: its task check needs about 256 GiB (4 x its smallest scenario's")
    assert f"check it where there is more (python -m gpu_harness task check {out / 'huge_weight_linear'})" in said
    entry = json.loads((out / "suite.json").read_text())["problems"][0]
    assert entry["outcome"] == "imported, not checked" and entry["abi"] and load_spec(out / entry["name"])


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--jobs", "0"], "argument --jobs: '0': at least 1"),
        (["--name", "x"], "--name is for one problem;"),
        (["--level", "7"], "no KernelBench/level7 or level7 folder in it"),
    ],
)
def test_a_folders_arguments_are_checked_before_anything_runs(tmp_path, capsys, argv, says):
    (tmp_path / "1_a.py").write_text("raise SystemExit('ran')\n")
    try:
        status = main(["task", "import-kernelbench", str(tmp_path), "--dir", str(tmp_path / "out"), *argv])
    except SystemExit as e:
        status = e.code
    assert status == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
