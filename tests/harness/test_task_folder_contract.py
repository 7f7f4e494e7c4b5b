"""docs/tasks.md's promises that an outside user's task folder meets through the commands and the cpu target:
`task check` names the file, field and line of a function reference.py lacks (and of a kernel file that does not
export the symbol); `tasks` lists the good folders beside a broken one, which it reports; `--timeout` is a number
of seconds > 0; on the cpu target `[baselines] versions` keys the baseline cache and `[child.env]` has `{cache}`
and the user's variables win (the target's own thread settings above both)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness.build import cache_dir
from gpu_harness.cli import main
from gpu_harness.runner import ChildSession, with_cache_folder
from gpu_harness.tasks import TaskError, load_folder_task
from gpu_harness.tasks.data_cpu import CPU_CHILD_ENV
from gpu_harness.taskscaffold import scaffold

from .conftest import edit_task_folder, needs_gxx

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def line_of(folder, piece):
    text = (folder / "task.toml").read_text()
    assert piece in text, piece
    return text[: text.index(piece)].count("\n") + 1


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "gpu_harness", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


# ---- a function reference.py lacks: task.toml's file, field and line, every one at once ----


def test_task_check_names_the_line_of_each_function_reference_py_lacks(folder, capsys):
    edit_task_folder(
        folder,
        ('function = "reference"', 'function = "refrence"'),
        ('numpy = { function = "numpy_scale_add" }', 'numpy = { function = "numpy_scale_ad" }'),
        ("[tolerance]", '[spot_check]\nsample = "rows"\nwhole = "whole_check"\n\n[tolerance]'),
    )
    toml, ref = folder.resolve() / "task.toml", folder.resolve() / "reference.py"
    assert main(["task", "check", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "NOT a valid task (3 problem(s))" in err
    line = line_of(folder, 'function = "refrence"')
    assert f"{toml}:{line}: reference.function: {ref} has no function 'refrence'" in err
    assert f"{toml}:{line_of(folder, 'numpy = {')}: baselines.numpy.function: {ref} has no function 'numpy_scale_ad'" in err  # fmt: skip
    assert f"{toml}:{line_of(folder, 'whole = ')}: spot_check.whole: {ref} has no function 'whole_check'" in err


def test_an_input_maker_reference_py_lacks_is_named_at_its_init_line(folder, capsys):
    edit_task_folder(folder, ('init = { dist = "uniform", low = -1.0, high = 1.0 }', 'init = { function = "make_y" }'))
    assert main(["task", "check", str(folder)]) == 2
    line = line_of(folder, 'init = { function = "make_y" }')
    assert f"task.toml:{line}: args.y.init: {folder.resolve() / 'reference.py'} has no function 'make_y'" in capsys.readouterr().err  # fmt: skip


def test_the_judges_own_check_says_the_same_as_a_task_error(folder):
    edit_task_folder(folder, ('function = "reference"', 'function = "refrence"'))
    with pytest.raises(TaskError, match=r"task\.toml:\d+: reference\.function: .*reference\.py has no function 'refrence'"):  # fmt: skip
        load_folder_task(folder).self_check()


@needs_gxx
def test_a_kernel_that_does_not_export_the_symbol_is_named_with_its_task_toml_line(folder):
    edit_task_folder(folder, ('default = ["numpy"]', 'default = ["numpy"]\nnaive = { kernel = "naive.cpp" }'))
    (folder / "naive.cpp").write_text('extern "C" int kseek_other(void) { return 1; }\n')
    p = _cli("task", "check", str(folder))
    line = line_of(folder, 'default = ["numpy"]') + 1  # the baseline's own line (a comment above names one too)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"baseline naive ({folder.resolve() / 'naive.cpp'}, named at {folder.resolve() / 'task.toml'}:{line}: baselines.naive.kernel) does not export kseek_demo_op" in p.stderr  # fmt: skip


# ---- `tasks`: the good ones listed, a broken one reported ----


def test_tasks_lists_the_good_folders_and_reports_a_broken_one(tmp_path):
    scaffold("good_op", tmp_path)
    broken = scaffold("broken_op", tmp_path)
    edit_task_folder(broken, ("speedup = 1.0", "speedup = 1.0\nspeed_up = 2.0"))
    scaffold("bad_reference", tmp_path)
    (tmp_path / "bad_reference" / "reference.py").write_text("import no_such_module_here\n")
    p = _cli("tasks", env={"KSEEK_TASKS_DIR": str(tmp_path)})
    assert p.returncode == 1
    listed = [line.split("\t")[0] for line in p.stdout.splitlines()]
    assert {"matmul_cpu", "attention_fwd", "good_op"} <= set(listed) and "broken_op" not in listed
    line = line_of(broken, "speed_up")
    assert f"broken_op: NOT a valid task ({broken.resolve()}):" in p.stderr
    assert f"{broken.resolve() / 'task.toml'}:{line}: goal.speed_up: unknown field" in p.stderr
    assert "bad_reference" in listed  # listing reads task.toml only: reference.py is imported when it runs


# ---- --timeout ----


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "soon"])
@pytest.mark.parametrize(
    "command",
    [["task", "import-kernelbench", "x.py"], ["task", "cheats", "matmul_cpu"], ["eval", "matmul_cpu", "k.cpp"]],
)
def test_a_timeout_is_a_number_of_seconds_above_zero(command, value, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--timeout", value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --timeout: " in err and f"'{value}'" in err and "seconds" in err


# ---- the cpu target: [baselines] versions and [child.env] ----


def test_the_cpu_targets_baseline_cache_key_is_the_tasks_versions_function(folder):
    assert load_folder_task(folder).versions().startswith("numpy ")  # the default
    edit_task_folder(folder, ("[baselines]", '[baselines]\nversions = "library_versions"'))
    with (folder / "reference.py").open("a") as f:
        f.write('\n\ndef library_versions():\n    return "mylib 1.2, numpy " + np.__version__\n')
    assert load_folder_task(folder).versions().startswith("mylib 1.2, numpy ")


def test_the_cpu_targets_child_env_has_cache_and_the_user_wins(folder, monkeypatch, tmp_path):
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DEMO_MINE", "the user's")
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    monkeypatch.delenv("DEMO_CACHE", raising=False)
    edit_task_folder(
        folder,
        (
            "[goal]",
            '[child.env]\nDEMO_CACHE = "{cache}/demo"\nDEMO_MINE = "the task\'s"\nOMP_NUM_THREADS = "4"\n\n[goal]',
        ),
    )
    env = load_folder_task(folder).child_env()
    assert env == {"DEMO_CACHE": "{cache}/demo", **CPU_CHILD_ENV}  # {cache}: the runner's to resolve
    assert str(cache_dir()) == str(tmp_path / "cache")
    child = ChildSession.environment(with_cache_folder(env, str(cache_dir())))  # what an uncontained child gets
    assert child["DEMO_CACHE"] == str(tmp_path / "cache" / "demo")
    assert child["DEMO_MINE"] == "the user's" and child["OMP_NUM_THREADS"] == "1"  # numpy's BLAS: one thread


# ---- the numbers docs/tasks.md quotes ----


def test_the_docs_matmul_cpu_column_quotes_the_folders_numbers():
    from gpu_harness.taskspec import load_spec

    doc = (REPO / "docs" / "tasks.md").read_text()
    spec = load_spec(REPO / "tasks" / "matmul_cpu")
    rule = spec.tolerance
    row = next(line for line in doc.splitlines() if line.startswith("| `[tolerance]` |"))
    quoted = re.search(r'\| `baseline = "(\w+)"`, `factor = ([0-9.e-]+)`, `floor = ([0-9.e-]+)` \|$', row)
    assert quoted and (quoted[1], float(quoted[2]), float(quoted[3])) == (rule.baseline, rule.factor, rule.floor)
    goal = next(line for line in doc.splitlines() if line.startswith("| `[goal]` |"))
    assert goal.endswith(f"| `{spec.goal_baseline}`, `{spec.goal_speedup}` |")
    assert f"matmul_cpu: {len(list(spec.cheats.iterdir()))}/{len(list(spec.cheats.iterdir()))} rejected" in doc
    assert f"| {len(spec.scenarios)} shapes:" in doc and f"| {len(spec.quick_ids)} ids |" in doc


def test_the_docs_limits_are_the_loaders():
    from gpu_harness import taskspec

    doc = " ".join((REPO / "docs" / "tasks.md").read_text().split())
    assert f"at most {taskspec.MAX_SCENARIOS} scenarios" in doc
    assert f"more than {taskspec.MAX_SCENARIO_BYTES >> 30} GiB" in doc
    assert f"at most {taskspec.FORMULA_MAX_CHARS} characters and {taskspec.FORMULA_MAX_DEPTH} levels" in doc
    # what a level is: the doc once said "levels of nesting", though parentheses add none and a flat sum of more
    # than FORMULA_MAX_DEPTH + 1 terms is refused
    depth = taskspec.FORMULA_MAX_DEPTH
    assert f"a sum of {depth + 1} terms, `a+b+...`, is {depth} deep" in doc and "parentheses alone add none" in doc
    taskspec.parse_formula("+".join(["m"] * (depth + 1)))
    taskspec.parse_formula("(" * (depth + 5) + "m" + ")" * (depth + 5))
    with pytest.raises(taskspec.FormulaError, match="nests too deep"):
        taskspec.parse_formula("+".join(["m"] * (depth + 2)))
    assert f"no integer power beyond 2^{taskspec.FORMULA_MAX_BITS}" in doc


@needs_gxx
def test_task_check_takes_a_tasks_name_as_eval_does(tmp_path, monkeypatch, capsys):
    """`task check NAME` finds the task of that name (KSEEK_TASKS_DIR's folders too), as `eval` and `task cheats`
    take one; a name no task has is still refused as a folder that is not a task."""
    monkeypatch.chdir(tmp_path)  # no folder named like the task here
    assert main(["task", "check", "matmul_cpu"]) == 0
    assert "OK, task 'matmul_cpu'" in capsys.readouterr().out
    assert main(["task", "check", "no_such_task"]) == 2


def test_task_new_under_the_name_of_a_task_found_first_says_that_one_wins(tmp_path, capsys):
    assert main(["task", "new", "matmul_cpu", "--dir", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "note: the task 'matmul_cpu' is already" in said and "Give this folder another name" in said
    assert main(["task", "new", "my_own_op", "--dir", str(tmp_path)]) == 0
    assert "already" not in capsys.readouterr().out
