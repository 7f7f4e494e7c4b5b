"""CI's second pass (PostgreSQL and Redis) runs only the tests that reach the site's database or channel layer
(KSEEK_SITE_TESTS_ONLY=1, tests/conftest.py): a live site's database outage and the pages stay in it, a pure
harness test and a browser test (its site is SQLite in either pass) leave it, and without the variable nothing is
left out."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    "tests/reliability/test_database_outage.py",  # a live site, through its `site` fixture
    "tests/dashboard/test_noise_pages.py",  # the test database
    "tests/harness/test_figures_intervals.py",  # pure figures: the same on any database
    "tests/dashboard/test_browser_tasks.py",  # the browser tests' site: SQLite in either pass
]


def collected(only_site: bool) -> tuple[list[str], str]:
    env = {k: v for k, v in os.environ.items() if k != "KSEEK_SITE_TESTS_ONLY"}
    if only_site:
        env["KSEEK_SITE_TESTS_ONLY"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *FILES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split("::")[0] for line in done.stdout.splitlines() if "::" in line], done.stdout


def test_the_second_pass_keeps_the_tests_that_reach_the_site_and_only_those():
    files, out = collected(only_site=True)
    assert set(files) == set(FILES[:2])
    assert files.count(FILES[0]) == 1
    everything, _ = collected(only_site=False)
    left = [everything.count(path) for path in FILES[2:]]
    assert left[0] > 10 and left[1] >= 1 and f"{sum(left)} deselected" in out
    assert len(everything) == len(files) + sum(left)
