"""No Python module over 800 lines outside migrations, tests and lab (issue 37: a module that long holds more than
one job; it is split by what it does, as gpu_harness/taskspec/ was split by the sections of task.toml)."""

from pathlib import Path

from tests.foundation.test_tracked_file_sizes import ROOT, tracked_sizes

LIMIT_LINES = 800
EXEMPT_FOLDERS = ("migrations", "tests", "lab")  # generated schema steps, tests, and a kernel's lab notebook


def modules_over(root: Path, names, limit: int = LIMIT_LINES) -> dict[str, int]:
    """Each .py file of `names` (paths under root) outside the exempt folders, with more than `limit` lines."""
    over = {}
    for name in names:
        path = Path(name)
        if path.suffix != ".py" or any(part in EXEMPT_FOLDERS for part in path.parts):
            continue
        with open(root / name, "rb") as f:
            lines = sum(1 for _ in f)
        if lines > limit:
            over[name] = lines
    return over


def test_no_module_outside_migrations_tests_and_lab_is_over_800_lines():
    over = modules_over(ROOT, tracked_sizes(ROOT))
    assert not over, f"over {LIMIT_LINES} lines (split by what each part does): {over}"


def test_the_rule_counts_lines_and_spares_only_migrations_tests_and_lab(tmp_path):
    for name in ("app/big.py", "app/migrations/0001_initial.py", "tests/test_big.py", "lab/run.py", "app/notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n" * 801)
    (tmp_path / "app/edge.py").write_text("x = 1\n" * 800)
    names = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()]
    assert modules_over(tmp_path, names) == {"app/big.py": 801}
