"""CI's second pass (PostgreSQL and Redis) runs only the tests that reach the site's database or channel layer
(KSEEK_SITE_TESTS_ONLY=1, tests/conftest.py): a live site's database outage and the pages stay in it, a pure
harness test, a browser test (its site is SQLite in either pass) and a test that starts its own site processes on
the embedded defaults leave it, and without the variable nothing is left out."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    "tests/reliability/test_database_outage.py",  # a live site, through its `site` fixture
    "tests/dashboard/test_noise_pages.py",  # the test database
    "tests/harness/test_figures_intervals.py",  # pure figures: the same on any database
    "tests/dashboard/test_browser_tasks.py",  # the browser tests' site: SQLite in either pass
    "tests/foundation/test_sqlite_concurrency.py",  # its own site processes on the embedded defaults
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
    assert left[0] > 10 and left[1] >= 1 and left[2] >= 1 and f"{sum(left)} deselected" in out
    assert len(everything) == len(files) + sum(left)


def test_a_module_on_the_embedded_defaults_takes_both_urls_out_of_its_processes():
    # the mark keeps a module out of the PostgreSQL + Redis pass: it must start its site without either URL, or
    # that pass would have been the only one to run it against them
    mark = re.compile(r"^(?:pytestmark = |@)pytest\.mark\.embedded_defaults\b", re.M)
    marked = [p for p in (ROOT / "tests").rglob("test_*.py") if mark.search(p.read_text())]
    assert {p.name for p in marked} >= {"test_make_run.py", "test_data_folder_modes.py", "test_sqlite_concurrency.py"}
    for path in marked:
        text = path.read_text()
        assert '"DATABASE_URL"' in text and '"REDIS_URL"' in text, f"{path.relative_to(ROOT)} keeps a URL"
