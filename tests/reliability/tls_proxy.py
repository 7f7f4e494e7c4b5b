"""Debian's nginx in front of a live site, terminating TLS with a certificate from the test's own CA, configured
with the file a team copies (deploy/nginx/kernelseek.conf, docs/deployment.md): the test fills in its
placeholders and wraps it in the few main-context lines nginx needs to run unprivileged in a folder of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.live_server import free_port
from tests.reliability.live import ROOT, wait_until
from tests.tls_certs import ServerCertificate

TEMPLATE = ROOT / "deploy" / "nginx" / "kernelseek.conf"
PLACEHOLDER = re.compile(r"@[A-Z_]+@")


def render_site_config(values: dict[str, str]) -> str:
    """The template with every @NAME@ replaced outside its comments (which name them to explain them); a name
    left over, or one given that it lacks, is an error."""
    lines = TEMPLATE.read_text().splitlines(keepends=True)
    code = [i for i, line in enumerate(lines) if not line.lstrip().startswith("#")]
    names = {name for i in code for name in PLACEHOLDER.findall(lines[i])}
    assert names == {f"@{name}@" for name in values}, f"placeholders {sorted(names)} vs values {sorted(values)}"
    for i in code:
        for name, value in values.items():
            lines[i] = lines[i].replace(f"@{name}@", value)
    return "".join(lines)


def nginx_path() -> str:
    path = shutil.which("nginx") or "/usr/sbin/nginx"
    assert os.access(path, os.X_OK), "nginx not found: apt-get install -y nginx (.ci/run installs it)"
    return path


class TlsProxy:
    """nginx on 127.0.0.1: https on `https_port`, the plain-http redirect on `http_port`."""

    def __init__(self, folder: Path, certificate: ServerCertificate, daphne_ports: list[int]):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.https_port, self.http_port = free_port(), free_port()
        self.base = f"https://localhost:{self.https_port}"
        site = render_site_config(
            {
                "SERVER_NAME": "localhost",
                "HTTPS_LISTEN": f"127.0.0.1:{self.https_port}",
                "HTTP_LISTEN": f"127.0.0.1:{self.http_port}",
                "CERTIFICATE": str(certificate.cert_file),
                "CERTIFICATE_KEY": str(certificate.key_file),
                "DAPHNE_SERVERS": "\n    ".join(f"server 127.0.0.1:{port};" for port in daphne_ports),
            }
        )
        (folder / "kernelseek.conf").write_text(site)
        temp = {name: folder / name for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
        for path in temp.values():
            path.mkdir(exist_ok=True)
        # Root's nginx hands requests to unprivileged workers, which could not enter the test's private folder.
        user = "user root;\n" if os.geteuid() == 0 else ""
        (folder / "nginx.conf").write_text(
            f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'} info;\nevents {{ worker_connections 512; }}\n"
            "http {\n"
            # Which daphne process (upstream) served each request, after the request line and status.
            "    log_format upstream '\"$request\" $status $upstream_addr';\n"
            f"    access_log {folder / 'access.log'} upstream;\n"
            f"    client_body_temp_path {temp['client_body']};\n    proxy_temp_path {temp['proxy']};\n"
            f"    fastcgi_temp_path {temp['fastcgi']};\n    uwsgi_temp_path {temp['uwsgi']};\n"
            f"    scgi_temp_path {temp['scgi']};\n"
            f"    include {folder / 'kernelseek.conf'};\n"
            "}\n"
        )
        self.process: subprocess.Popen | None = None

    def start(self) -> TlsProxy:
        argv = [nginx_path(), "-p", str(self.folder), "-c", str(self.folder / "nginx.conf"), "-e", "stderr"]
        tested = subprocess.run([*argv, "-t"], capture_output=True, text=True, timeout=30)
        assert tested.returncode == 0, f"nginx -t refused the configuration:\n{tested.stderr}"
        log = open(self.folder / "nginx.out", "a")
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def listening():
            try:
                with socket.create_connection(("127.0.0.1", self.https_port), timeout=0.5):
                    return True
            except OSError:
                return False

        assert wait_until(listening, 30, while_alive=self.process), f"nginx did not start:\n{self.log()}"
        return self

    def log(self) -> str:
        parts = [self.folder / name for name in ("nginx.out", "error.log")]
        return "\n".join(p.read_text()[-3000:] for p in parts if p.exists())

    def access_log(self) -> str:
        path = self.folder / "access.log"
        return path.read_text() if path.exists() else ""

    def upstreams_used(self) -> set[str]:
        """The daphne addresses nginx passed requests to."""
        return {line.rsplit(" ", 1)[-1] for line in self.access_log().splitlines() if "127.0.0.1:" in line}

    def close(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)


def worker_argv(server: str, state_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agentloop", "worker", "--server", server, "--gpus", "0"] + [
        "--state-dir",
        str(state_dir),
        "--no-bwrap",
        *extra,
    ]


def worker_env(token: str, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update(PYTHONPATH=str(ROOT), KSEEK_WORKER_TOKEN=token, **extra)
    return env
