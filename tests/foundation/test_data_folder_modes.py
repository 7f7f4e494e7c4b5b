"""The data folder holds the SQLite database (sessions, token hashes), the secret key and the admin password:
only the user who runs the site may enter it (0700) or read the database and its -wal/-shm files (0600), under
a umask that would leave them readable to everyone. Real `manage.py` processes, started as `make run` starts
them."""

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# its own site processes, on the embedded defaults: the first CI pass only (tests/conftest.py)
pytestmark = pytest.mark.embedded_defaults
DATABASE = "kernelseek.sqlite3"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """`manage.py ARGS` on the SQLite data folder `data_dir`, under the common umask 022."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"}}
    env.pop("KSEEK_ADMIN_PASSWORD", None)  # ensure_admin then generates one and keeps it in the folder
    env["KSEEK_DATA_DIR"] = str(data_dir)
    argv = ["sh", "-c", 'umask 022 && exec "$@"', "sh", sys.executable, "manage.py", *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True)


def test_a_fresh_data_folder_is_made_private_and_so_is_its_database(tmp_path):
    data_dir = tmp_path / "data"
    manage(data_dir, "migrate", "--noinput")
    manage(data_dir, "ensure_admin")

    assert mode(data_dir) == 0o700
    assert mode(data_dir / DATABASE) == 0o600
    assert mode(data_dir / "secret_key") == 0o600
    assert mode(data_dir / "admin_password") == 0o600


def test_a_data_folder_an_older_version_left_readable_is_narrowed_at_the_next_start(tmp_path):
    data_dir = tmp_path / "data"
    manage(data_dir, "migrate", "--noinput")
    # As an older version left it: the folder 0755, the database and its -wal and -shm files 0644, the -wal and
    # -shm kept in place by a connection that is still open (a running server's).
    data_dir.chmod(0o755)
    (data_dir / DATABASE).chmod(0o644)
    held_open = sqlite3.connect(data_dir / DATABASE)
    try:
        held_open.execute("PRAGMA journal_mode=WAL")
        held_open.execute("CREATE TABLE IF NOT EXISTS kept_open (x)")
        held_open.commit()
        companions = [data_dir / (DATABASE + suffix) for suffix in ("-wal", "-shm")]
        for companion in companions:
            companion.chmod(0o644)

        manage(data_dir, "migrate", "--noinput")

        assert mode(data_dir) == 0o700
        assert mode(data_dir / DATABASE) == 0o600
        assert [mode(companion) for companion in companions] == [0o600, 0o600]
    finally:
        held_open.close()


MODES_WHILE_CONNECTED = """
import os, stat, sys
from runs.models import Task
Task.objects.exists()  # the site's connection is open, in WAL mode, from here on
folder = os.environ["KSEEK_DATA_DIR"]
for name in sorted(os.listdir(folder)):
    print(name, oct(stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode)))
"""


def test_the_wal_and_shm_files_the_site_makes_while_it_runs_are_private(tmp_path):
    """SQLite makes the -wal and -shm files with the database file's mode; it removes them when the last
    connection closes, so they are looked at from inside a process of the site."""
    data_dir = tmp_path / "data"
    manage(data_dir, "migrate", "--noinput")
    listed = manage(data_dir, "shell", "-c", MODES_WHILE_CONNECTED).stdout.splitlines()
    seen = dict(line.split() for line in listed if line.startswith(DATABASE))
    assert seen[f"{DATABASE}-wal"] == seen[f"{DATABASE}-shm"] == seen[DATABASE] == "0o600"
