"""A real KernelSeek site for fault tests: its own database, daphne processes that can be killed and started
again, and real agent workers (`python -m agentloop worker`) as subprocesses.

The site's database is not pytest-django's test database: the servers are other processes. On SQLite it is a
file in the test's folder; when DATABASE_URL names PostgreSQL, a database of its own is created on that server
and dropped at the end. REDIS_URL, when set, is passed on (a Redis channel layer; several processes share it).
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kseek_site.serving import daphne_argv
from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]
DEMO_TRACE = ROOT / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
DEMO_MODEL = "replay:agentloop/replays/matmul_cpu_demo.jsonl"  # the model that replays it, as the start form names it
LIVE_REDIS_DB = 9


def wait_until(condition, timeout: float, *, interval: float = 0.2, while_alive: subprocess.Popen | None = None):
    """Poll `condition` until it returns something true; returns it, or None on timeout or when the process ends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if while_alive is not None and while_alive.poll() is not None:
            return condition() or None
        time.sleep(interval)
    return None


def spool_pending(state_dir: Path) -> int:
    """How many events a running worker's spool (`state_dir`/spool.jsonl) holds unacknowledged: its event lines
    less its ack lines. Read only: `Spool` itself would compact the file under the worker. An acknowledged event's
    line stays in the file until the spool compacts it, so the count of event lines alone is no measure."""
    pending = set()
    path = state_dir / "spool.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except ValueError:  # the line being written
            continue
        if "event" in record:
            pending.add((str(record["event"]["run_id"]), int(record["event"]["seq"])))
        elif "ack" in record:
            run_id, seq = record["ack"]
            pending.discard((str(run_id), int(seq)))
    return len(pending)


def postgres_url() -> str | None:
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else None


class LiveSite:
    """One site: `setup()` migrates and loads the tasks; `start_server()` starts a daphne; `django(code)` runs a
    snippet against the site's database in a subprocess and returns what it prints as JSON."""

    def __init__(self, folder: Path, *, database_url: str | None = None):
        self.folder = folder
        self.data_dir = folder / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.servers: dict[int, subprocess.Popen] = {}  # port -> process
        self.workers: list[subprocess.Popen] = []
        self.pg_name = None
        base = database_url or postgres_url()
        if base:
            self.pg_name = f"kseek_rel_{secrets.token_hex(4)}"
            self.pg_admin = base.rsplit("/", 1)[0] + "/postgres"
            self.database_url = base.rsplit("/", 1)[0] + "/" + self.pg_name
        else:
            self.database_url = None

    # ------------------------------------------------------------------------------------------ the site
    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "DEBUG"}}
        env.update(
            KSEEK_DATA_DIR=str(self.data_dir),
            DJANGO_SETTINGS_MODULE="kseek_site.settings",
            LOG_LEVEL="WARNING",
            PYTHONPATH=str(ROOT),
        )
        if self.database_url:
            env["DATABASE_URL"] = self.database_url
        if env.get("REDIS_URL"):
            # A Redis database of its own: the site's run ids start at 1 like every other site's, and group
            # names (run.1) must not meet those of another test session or a benchmark on the same Redis.
            env["REDIS_URL"] = env["REDIS_URL"].rsplit("/", 1)[0] + f"/{LIVE_REDIS_DB}"
        env.update(extra)
        return env

    def setup(self) -> LiveSite:
        """The site's database, migrated and with the tasks synced: a copy of this process's template for the
        environment the site's commands see (made by the first site that needs it), so that each test pays for a
        file copy or a CREATE DATABASE ... TEMPLATE instead of two Django starts and every migration."""
        template = SiteTemplate.for_site(self)
        if self.pg_name:
            import psycopg

            with psycopg.connect(self.pg_admin, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.pg_name}" TEMPLATE "{template.pg_name}"')
        else:
            template.copy_sqlite(self.data_dir / "kernelseek.sqlite3")
        return self

    def migrate(self) -> None:
        self.manage("migrate", "--noinput")
        self.manage("sync_tasks")

    def manage(self, *args) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}"
        return done.stdout

    def django(self, code: str, **variables):
        """Run `code` with Django set up against this site; it must assign `result`, which comes back as JSON."""
        script = (
            "import django, json, sys\ndjango.setup()\n"
            + "\n".join(f"{name} = json.loads({json.dumps(json.dumps(value))})" for name, value in variables.items())
            + "\n"
            + code
            + "\nprint('RESULT ' + json.dumps(result, default=str))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"snippet failed:\n{done.stderr[-3000:]}"
        line = [out for out in done.stdout.splitlines() if out.startswith("RESULT ")][-1]
        return json.loads(line[len("RESULT ") :])

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Read the site's database directly (fast: no Django start)."""
        if self.pg_name:
            import psycopg

            with psycopg.connect(self.database_url, autocommit=True) as conn:
                return conn.execute(sql.replace("?", "%s"), params).fetchall()
        conn = sqlite3.connect(self.data_dir / "kernelseek.sqlite3", timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    # ------------------------------------------------------------------------------------------- servers
    def start_server(self, port: int | None = None, **env) -> int:
        port = port or free_port()
        log = open(self.folder / f"daphne-{port}.log", "a")
        process = subprocess.Popen(
            daphne_argv("127.0.0.1", port),
            cwd=ROOT,
            env=self.env(**env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.servers[port] = process

        def listening():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return True
            except OSError:
                return False

        assert wait_until(listening, 60, while_alive=process), f"daphne did not start:\n{self.server_log(port)}"
        return port

    def server_log(self, port: int) -> str:
        path = self.folder / f"daphne-{port}.log"
        return path.read_text()[-4000:] if path.exists() else ""

    def kill_server(self, port: int, sig=signal.SIGKILL) -> None:
        process = self.servers.pop(port)
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    # ------------------------------------------------------------------------------------------- workers
    def worker_token(self, name: str) -> str:
        return self.django(
            "from runs.services import worker_host_create\n_, result = worker_host_create(name=name)", name=name
        )

    def session_for(self, username: str, role: str | None = None) -> str:
        """A signed-in session (cookie value) for a new user with `role` (a group name), or none."""
        return self.django(
            "from django.contrib.auth import get_user_model\nfrom django.contrib.auth.models import Group\n"
            "from django.test import Client\n"
            "user = get_user_model().objects.create_user(username, password='pw-123456789')\n"
            "if role: user.groups.add(Group.objects.get_or_create(name=role)[0])\n"
            "client = Client()\nclient.force_login(user)\nresult = client.cookies['sessionid'].value",
            username=username,
            role=role,
        )

    def start_worker(self, port: int, token: str, state_dir: Path) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
        env.update(PYTHONPATH=str(ROOT), KSEEK_WORKER_TOKEN=token)
        state_dir.mkdir(parents=True, exist_ok=True)
        log = open(state_dir.parent / f"{state_dir.name}.log", "a")
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentloop",
                "worker",
                "--server",
                f"ws://127.0.0.1:{port}",
                "--gpus",
                "0",
                "--state-dir",
                str(state_dir),
                "--no-bwrap",
            ],
            cwd=state_dir.parent,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers.append(process)
        return process

    @staticmethod
    def worker_log(state_dir: Path) -> str:
        path = state_dir.parent / f"{state_dir.name}.log"
        return path.read_text()[-4000:] if path.exists() else ""

    def queue_demo_run(self, *, review_mode: str = "auto") -> int:
        """The replay demo (the CPU task; real compiles and evaluations, scripted model turns), queued."""
        first = json.loads(DEMO_TRACE.read_text().splitlines()[0])
        config = first["payload"]["config"]
        return self.django(
            "from runs.models import Task\nfrom runs.services import run_start\n"
            "run = run_start(task=Task.objects.get(name=config['task']), model=model,"
            " starting_kernel=config['starting_kernel'], goal_baseline=config['goal']['baseline'],"
            " goal_speedup=config['goal']['speedup'], review_mode=review_mode, budget_steps=200)\n"
            "result = run.pk",
            config=config,
            model=DEMO_MODEL,
            review_mode=review_mode,
        )

    # ------------------------------------------------------------------------------------------ teardown
    def close(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        for port in list(self.servers):
            self.kill_server(port)
        if self.pg_name:
            import psycopg

            with psycopg.connect(self.pg_admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')


class SiteTemplate(LiveSite):
    """A site that is never served: its database, migrated and with the tasks synced, is what `LiveSite.setup`
    copies. One per environment a site's commands see (a test may name its own tasks folder), kept for the
    process and dropped at its exit. Its secret key is not copied: each site makes its own, so that sites on one
    Redis server keep their own channel prefix."""

    _made: dict[tuple, SiteTemplate] = {}

    def __init__(self, folder: Path, *, settings_env: dict, database_url: str | None):
        super().__init__(folder, database_url=database_url)
        self.settings_env = settings_env

    @classmethod
    def for_site(cls, site: LiveSite) -> SiteTemplate:
        settings_env = {k: v for k, v in site.env().items() if k.startswith("KSEEK_") and k != "KSEEK_DATA_DIR"}
        key = (site.pg_admin if site.pg_name else None, tuple(sorted(settings_env.items())))
        if key not in cls._made:
            folder = Path(tempfile.mkdtemp(prefix="kseek-site-template-"))
            template = cls(folder, settings_env=settings_env, database_url=site.database_url)
            atexit.register(template.remove)
            if template.pg_name:
                import psycopg

                with psycopg.connect(template.pg_admin, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{template.pg_name}"')
            template.migrate()
            cls._made[key] = template
        return cls._made[key]

    def env(self, **extra) -> dict:
        return super().env(**{**self.settings_env, **extra})

    def copy_sqlite(self, path: Path) -> None:
        copy_sqlite_database(self.data_dir / "kernelseek.sqlite3", path)

    def remove(self) -> None:
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def copy_sqlite_database(source: Path, target: Path) -> None:
    """SQLite's backup of `source` into `target`: a consistent copy whatever journal mode the source is in."""
    source_db = sqlite3.connect(source)
    target_db = sqlite3.connect(target)
    try:
        source_db.backup(target_db)
    finally:
        target_db.close()
        source_db.close()


def kill(process: subprocess.Popen) -> None:
    """SIGKILL: no cleanup, no last flush."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
