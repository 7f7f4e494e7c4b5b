"""What the task commands tell a new user, through the real CLI in a child process: where `task new` wrote its
folder and how the dashboard comes to offer it, and what to install when `task import-kernelbench` cannot run
without torch (as `task check` says), instead of a traceback."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "tests" / "harness" / "kernelbench_problems" / "batchnorm_buffers.py"


def cli(*args, cwd: Path, blocked_torch: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KSEEK_TASKS_DIR"}
    if blocked_torch is not None:
        # A sitecustomize that makes `import torch` fail, as on a host where torch is not installed.
        blocked_torch.mkdir(exist_ok=True)
        (blocked_torch / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(blocked_torch), env.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-m", "gpu_harness", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_task_new_in_the_current_folder_says_where_it_wrote_and_how_the_dashboard_finds_it(tmp_path):
    done = cli("task", "new", "my_op", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'my_op'}/" in done.stdout
    assert "is not where tasks are found" in done.stdout
    assert "--dir tasks" in done.stdout and f"KSEEK_TASKS_DIR={tmp_path}" in done.stdout
    assert "manage.py sync_tasks" in done.stdout


def test_task_new_among_the_found_tasks_says_only_to_sync(tmp_path):
    env_dir = tmp_path / "team-tasks"
    env_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "gpu_harness", "task", "new", "my_op", "--dir", str(env_dir)],
        cwd=tmp_path, env={**os.environ, "KSEEK_TASKS_DIR": str(env_dir)}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the dashboard lists it after" in done.stdout and "manage.py sync_tasks" in done.stdout
    assert "is not where tasks are found" not in done.stdout


def test_import_kernelbench_without_torch_says_what_to_install_instead_of_a_traceback(tmp_path):
    done = cli("task", "import-kernelbench", str(PROBLEM), "--dir", str(tmp_path), cwd=tmp_path,
               blocked_torch=tmp_path / "no-torch")  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "needs torch" in done.stderr and "install" in done.stderr and "pip install torch" in done.stderr
    assert not (tmp_path / "batchnorm_buffers").exists()


def test_a_suites_hint_names_the_suite_folder_as_the_task_root_not_one_of_its_tasks(tmp_path, monkeypatch):
    # The hint after a KernelBench level named its first task folder and said to move it into tasks/, which would
    # leave the suite and its other problems behind (new-user audit finding 7).
    from gpu_harness.cli import _how_the_dashboard_finds_suite

    monkeypatch.delenv("KSEEK_TASKS_DIR", raising=False)
    hint = _how_the_dashboard_finds_suite(tmp_path / "kb1")
    assert f"KSEEK_TASKS_DIR={tmp_path / 'kb1'} for the server" in hint and "move" not in hint
    assert "manage.py sync_tasks" in hint
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(tmp_path / "kb1"))
    assert _how_the_dashboard_finds_suite(tmp_path / "kb1").startswith(
        "then: the dashboard lists its tasks, and the suite"
    )
