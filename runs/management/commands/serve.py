"""`make run`'s last step: the dashboard (daphne) and its main job, a local agent worker, in one command.

- The local worker is the worker host named `local`. Its token is made anew at every start and handed to the
  worker process through its environment (never argv, which other users can read in `ps`), so no token is
  ever written to disk. Its agents' commands and kernels run under bubblewrap, which hides the server's data
  folder (the SQLite database, the secret key) from them. Where bubblewrap does not work, the worker refuses to
  start (exit status 4, with what to install) and the dashboard is served without it, unless `--unsandboxed`
  lets the worker run agents with no isolation (docs/protocol.md, section 3).
- On a site with no runs yet, a demo run is queued (runs/demo.py): the CPU task, driven by the replay model from
  agentloop/replays/matmul_cpu_demo.jsonl, with the goal and starting kernel recorded in that trace. Its tools
  and evaluations run for real. It ends within half a minute; an operator starts another from the runs list
  ("Start the demo") to watch one stream.
- Once the server listens, the generated admin password is printed again under the banner while it is still the
  admin's (ensure_admin keeps it in the data folder until it is changed).
- A second `serve` never breaks the first: it checks its port before anything else and refuses, with exit status 1,
  when something listens there; and it starts no local worker, so rotates no token, while the local worker of
  another `serve` on the same data folder runs (a lock file in the data folder, `local-worker.lock`, held by
  each `serve` that runs the local worker and by that worker, so that it is released, even after a kill -9,
  only when both are gone).
- Ctrl-C (or SIGTERM) stops both processes. If the server dies, the command exits with its status; if the
  worker dies, the server keeps serving and the worker is started again after a pause.
"""

import errno
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agentloop.sandbox import EXIT_NO_SANDBOX, INSTALL_HINT, working_bwrap
from kseek_site.envconfig import private_data_folder
from kseek_site.serving import daphne_argv
from runs.demo import demo_run_start
from runs.management.commands.ensure_admin import admin_password_notice
from runs.models import Run, WorkerHost
from runs.services import ServiceError, worker_host_create, worker_host_note_start, worker_host_rotate_token

LOCAL_WORKER = "local"
WORKER_RESTART_PAUSE_S = 5
WORKER_NO_SANDBOX = EXIT_NO_SANDBOX  # the worker's exit status where it has no working sandbox
LOCAL_WORKER_LOCK = "local-worker.lock"


def port_in_use(host: str, port: int) -> bool:
    """Whether something listens on host:port: a bind as daphne's (with SO_REUSEADDR, so that a port left in
    TIME_WAIT by a server that has just stopped counts as free) fails with EADDRINUSE."""
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as refused:
                if refused.errno == errno.EADDRINUSE:
                    return True
                raise
    return False


def refuse_a_busy_port(host: str, port: int) -> None:
    """CommandError, saying what to do, where something listens on host:port already."""
    if port_in_use(host, port):
        raise CommandError(
            f"{host}:{port} is already in use: another `make run` (or `manage.py serve`) may be serving there. "
            f"Stop it, or start this one on another port (`make run PORT={port + 1}`)"
        )


def take_local_worker_lock(data_dir: Path) -> int | None:
    """The local worker's lock (a descriptor to hand to the worker, so that it keeps the lock while it lives), or
    None when the local worker of another `serve` on this data folder holds it."""
    descriptor = os.open(private_data_folder(data_dir) / LOCAL_WORKER_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


class Command(BaseCommand):
    help = "Serve the dashboard with daphne and run a local agent worker beside it."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="serve only; run no local worker")
        parser.add_argument("--no-demo", action="store_true", help="do not queue the demo run on an empty site")
        parser.add_argument(
            "--check-port",
            action="store_true",
            help="only say whether the port is free, and exit (make run asks before it migrates and bootstraps)",
        )
        parser.add_argument(
            "--unsandboxed",
            action="store_true",
            help="let the local worker run agents without bubblewrap: their commands and kernels "
            "can then read its token and this host's files",
        )

    def handle(self, *args, host, port, no_worker, no_demo, unsandboxed=False, check_port=False, **options):
        base_dir = Path(settings.BASE_DIR)
        # Before anything is written or rotated: a second `make run` on a busy port must leave the first one whole.
        refuse_a_busy_port(host, port)
        if check_port:
            return
        self.worker_lock = None if no_worker else take_local_worker_lock(Path(settings.DATA_DIR))
        if not no_worker and self.worker_lock is None:
            self.stderr.write(
                "the local worker of another `serve` on this data folder is running; this one starts none (and "
                "leaves that worker's token as it is). Serving the dashboard without a local worker."
            )
            no_worker = True
        # the released kernels' development runs are imports, not runs of this site: they leave the demo due
        if not no_demo and not Run.objects.filter(imported_from="").exists():
            self.queue_demo_run(base_dir)
        self.stopping = False
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)

        server = subprocess.Popen(self.server_argv(host, port), cwd=base_dir)
        worker = None
        try:
            self.wait_for_port(host, port, server)
            self.stdout.write(self.style.SUCCESS(f"KernelSeek on http://{host}:{port}/"))
            # Again after daphne is up: the output of `bootstrap` scrolls away under its access log.
            notice = admin_password_notice()
            if notice:
                self.stdout.write(self.style.SUCCESS(notice))
            while not self.stopping:
                if server.poll() is not None:
                    raise CommandError(f"the server exited with status {server.returncode}")
                if not no_worker and worker is not None and worker.poll() == WORKER_NO_SANDBOX:
                    self.note_no_sandbox()
                    self.stderr.write(
                        "the local worker cannot run agents here: there is no working sandbox (its message above "
                        "says why). Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and start again, "
                        "or start `.venv/bin/python manage.py serve --unsandboxed` to run agents with no isolation. "
                        "Serving the dashboard without a worker; queued runs wait."
                    )
                    no_worker = True
                if not no_worker and (worker is None or worker.poll() is not None):
                    if worker is not None:
                        self.stderr.write(f"the local worker exited with status {worker.returncode}; restarting it")
                        time.sleep(WORKER_RESTART_PAUSE_S)
                    worker = self.start_worker(base_dir, host, port, unsandboxed)
                time.sleep(0.5)
        finally:
            for process in (worker, server):
                if process is not None and process.poll() is None:
                    process.terminate()
            for process in (worker, server):
                if process is not None:
                    try:
                        process.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        process.kill()

    @staticmethod
    def server_argv(host: str, port: int) -> list[str]:
        # With the worker socket's limits (kseek_site/serving.py): daphne's defaults drop a larger message unanswered.
        return daphne_argv(host, port)

    def request_stop(self, signum, frame):
        self.stopping = True

    def wait_for_port(self, host, port, server, timeout_s=60):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError(f"the server exited with status {server.returncode} while starting")
            try:
                with socket.create_connection((host, port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise CommandError(f"the server did not listen on {host}:{port} within {timeout_s} s")

    def start_worker(self, base_dir: Path, host: str, port: int, unsandboxed: bool = False) -> subprocess.Popen:
        existing = WorkerHost.objects.filter(name=LOCAL_WORKER).first()
        local, token = worker_host_rotate_token(host=existing) if existing else worker_host_create(name=LOCAL_WORKER)
        if local.start_problem:  # what a former start found; this one is being tried
            worker_host_note_start(host=local)
        env = {**os.environ, "KSEEK_WORKER_TOKEN": token}
        state_dir = Path(settings.DATA_DIR) / "local-worker"
        self.stdout.write(f"local worker: state in {state_dir}")
        argv = self.worker_argv(host, port, state_dir, unsandboxed)
        # The worker holds the lock too: a worker that outlives this command (kill -9 of it) still has the token.
        return subprocess.Popen(argv, cwd=base_dir, env=env, pass_fds=(self.worker_lock,))

    @staticmethod
    def note_no_sandbox() -> None:
        """Say on the pages (beside the local host, under the runs that wait) why the local worker did not start
        and what to do, in the words of the probe the worker itself ran."""
        _, why = working_bwrap()
        worker_host_note_start(
            host=WorkerHost.objects.get(name=LOCAL_WORKER),
            problem=(
                f"the local worker did not start: this host has no working sandbox ({why or 'bubblewrap failed'}), "
                f"and agent commands do not run without one. To fix: {INSTALL_HINT}, then start `make run` again; "
                "or start `.venv/bin/python manage.py serve --unsandboxed` to run agents with no isolation"
            ),
        )

    @staticmethod
    def worker_argv(host: str, port: int, state_dir: Path, unsandboxed: bool = False) -> list[str]:
        # The agent's shell must not read the server's database or secret key beside the worker's state.
        return [
            sys.executable,
            "-m",
            "agentloop",
            "worker",
            "--server",
            f"ws://{host}:{port}",
            "--gpus",
            "0",
            "--state-dir",
            str(state_dir),
            "--hide",
            str(settings.DATA_DIR),
            *(["--unsandboxed"] if unsandboxed else []),
        ]

    def queue_demo_run(self, base_dir: Path) -> None:
        try:
            run = demo_run_start()
        except ServiceError as refused:
            raise CommandError(str(refused)) from refused
        self.stdout.write(f"queued demo run {run.pk} ({run.task.name}, replay model)")
