"""`make test` on a machine without bubblewrap: the tests that need a sandbox skip with the reason, and fail
instead where KSEEK_REQUIRE_SANDBOX=1 (CI) says they must run. Through a real pytest process on PATH without
`bwrap`, on tests that need one (the loop's harness evaluator)."""

import os
import subprocess
import sys
from pathlib import Path

from tests.without_bwrap import path_without_bwrap

ROOT = Path(__file__).resolve().parents[2]
NEEDS_A_SANDBOX = "tests/agentloop/test_harness_evaluator.py"


def pytest_without_bwrap(tmp_path: Path, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "KSEEK_REQUIRE_SANDBOX"}
    environment.update(PATH=path_without_bwrap(tmp_path / "bin"), **env)
    argv = [sys.executable, "-m", "pytest", "-q", "-rsE", "-p", "no:cacheprovider", NEEDS_A_SANDBOX]
    return subprocess.run(argv, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)


def test_without_bubblewrap_the_tests_that_need_a_sandbox_skip_and_say_why(tmp_path):
    done = pytest_without_bwrap(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 skipped" in done.stdout and "failed" not in done.stdout
    assert "needs a working bubblewrap sandbox: `bwrap` is not on PATH" in done.stdout
    assert "apt-get install bubblewrap" in done.stdout


def test_where_ci_requires_the_sandbox_its_absence_fails_them(tmp_path):
    done = pytest_without_bwrap(tmp_path, KSEEK_REQUIRE_SANDBOX="1")
    assert done.returncode == 1
    assert "4 errors" in done.stdout and "skipped" not in done.stdout
    assert "KSEEK_REQUIRE_SANDBOX=1: sandbox tests must run here" in done.stdout
