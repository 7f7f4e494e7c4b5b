"""How the worker connects: wss:// verified against the CA it is given, and no token over plain ws:// to another
host unless the operator says so. The real worker (`python -m agentloop worker`) against small local servers.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from websockets.sync.server import serve

from agentloop.errors import ConfigError
from agentloop.worker.client import EXIT_CERTIFICATE_REFUSED, is_loopback, tls_context, worker_url
from tests.tls_certs import make_ca, make_server_certificate

REPO = Path(__file__).resolve().parents[2]
TOKEN = "tls-test-token"

pytestmark = pytest.mark.timeout(120)


def run_worker(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update(PYTHONPATH=str(REPO), KSEEK_WORKER_TOKEN=TOKEN)
    return subprocess.run(
        [sys.executable, "-m", "agentloop", "worker", "--state-dir", str(tmp_path / "state"), "--no-bwrap", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class HandshakeRecorder:
    """A websocket server (over TLS when given a context) that records each handshake's Authorization header and
    closes the socket at once."""

    def __init__(self, host: str, tls: ssl.SSLContext | None = None):
        self.authorizations: list[str | None] = []
        self.connected = threading.Event()
        self.server = serve(self._handler, host, 0, ssl=tls)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self, ws) -> None:
        self.authorizations.append(ws.request.headers.get("Authorization"))
        self.connected.set()
        ws.close()

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


def a_non_loopback_address() -> str | None:
    """This host's address on its network (no packet is sent), or None where it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.255", 9))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if is_loopback(address) else address


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("[::1]", True),
        ("0.0.0.0", True),
        ("gpu-dashboard.example", False),
        ("10.0.0.7", False),
        ("[2001:db8::1]", False),
        ("127.0.0.1.example", False),
    ],
)
def test_only_this_hosts_own_addresses_count_as_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_plain_ws_to_a_remote_host_is_refused_without_the_flag_and_wss_is_verified():
    with pytest.raises(ConfigError, match="in clear text to dashboard.example over plain ws://.*--insecure-plain-ws"):
        tls_context("ws://dashboard.example:8000/ws/worker/")
    assert tls_context("ws://dashboard.example:8000/ws/worker/", allow_plain_ws=True) is None
    assert tls_context("ws://127.0.0.1:8000/ws/worker/") is None
    context = tls_context("wss://dashboard.example/ws/worker/")
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_the_worker_refuses_plain_ws_to_a_remote_address_before_connecting(tmp_path):
    address = a_non_loopback_address()
    recorder = HandshakeRecorder("0.0.0.0") if address else None
    target = f"{address}:{recorder.port}" if recorder else "dashboard.invalid:8000"
    try:
        done = run_worker(tmp_path, "--server", f"ws://{target}")
        assert done.returncode == 2, done.stdout + done.stderr
        assert "refusing to send the worker token in clear text" in done.stderr
        assert "--insecure-plain-ws" in done.stderr and "Traceback" not in done.stderr, done.stderr
        if recorder:
            assert not recorder.connected.wait(1), "the worker connected although it refused"
    finally:
        if recorder:
            recorder.close()


def test_with_the_explicit_flag_the_worker_does_send_its_token_over_plain_ws(tmp_path):
    address = a_non_loopback_address()
    if address is None:
        address = "127.0.0.1"  # a host with no network: the flag's effect is then only that nothing refuses
    recorder = HandshakeRecorder("0.0.0.0")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update(PYTHONPATH=str(REPO), KSEEK_WORKER_TOKEN=TOKEN)
    worker = subprocess.Popen(
        [sys.executable, "-m", "agentloop", "worker", "--server", f"ws://{address}:{recorder.port}"]
        + ["--insecure-plain-ws", "--state-dir", str(tmp_path / "state"), "--no-bwrap"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert recorder.connected.wait(60)
        assert recorder.authorizations[0] == f"Bearer {TOKEN}"
    finally:
        worker.kill()
        worker.wait(timeout=30)
        recorder.close()


def tls_server_context(folder: Path):
    server = make_server_certificate(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server.cert_file, server.key_file)
    return server, context


def test_a_certificate_from_another_ca_is_refused_with_a_clear_message_and_status_5(tmp_path):
    _server, context = tls_server_context(tmp_path / "certs")
    other_ca, _, _ = make_ca(tmp_path / "other", name="Some other CA")
    recorder = HandshakeRecorder("127.0.0.1", context)
    try:
        done = run_worker(tmp_path, "--server", f"wss://localhost:{recorder.port}", "--ca-file", str(other_ca))
    finally:
        recorder.close()
    assert done.returncode == EXIT_CERTIFICATE_REFUSED == 5, done.stdout + done.stderr
    assert "its TLS certificate does not verify against the CA in" in done.stderr, done.stderr
    assert str(other_ca) in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert recorder.authorizations == [], "the token must not be sent to an unverified server"


def test_the_right_ca_from_the_environment_verifies_and_the_token_goes_over_tls(tmp_path):
    server, context = tls_server_context(tmp_path / "certs")
    recorder = HandshakeRecorder("127.0.0.1", context)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
    env.update(PYTHONPATH=str(REPO), KSEEK_WORKER_TOKEN=TOKEN, KSEEK_WORKER_CA_FILE=str(server.ca_file))
    worker = subprocess.Popen(
        [sys.executable, "-m", "agentloop", "worker", "--server", f"https://localhost:{recorder.port}"]
        + ["--state-dir", str(tmp_path / "state"), "--no-bwrap"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert recorder.connected.wait(60)
        assert recorder.authorizations[0] == f"Bearer {TOKEN}"
    finally:
        worker.kill()
        worker.wait(timeout=30)
        recorder.close()


def test_an_unreadable_ca_file_and_a_ca_file_for_plain_ws_are_refused_at_start(tmp_path):
    done = run_worker(tmp_path, "--server", "wss://localhost:1", "--ca-file", str(tmp_path / "missing.pem"))
    assert done.returncode == 2 and "cannot read the CA file" in done.stderr, done.stderr
    ca, _, _ = make_ca(tmp_path / "ca")
    done = run_worker(tmp_path, "--server", "ws://127.0.0.1:1", "--ca-file", str(ca))
    assert done.returncode == 2 and "use wss://" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "server",
    [
        "https://kernelseek.example",
        "https://kernelseek.example/",
        "wss://kernelseek.example/ws/worker",
        "https://kernelseek.example/ws/worker/",
    ],
)
def test_the_server_address_in_any_spelling_reaches_the_worker_route_with_its_trailing_slash(server):
    # The dashboard routes `ws/worker/` only: without the slash the handshake fails with HTTP 500 forever.
    assert worker_url(server) == "wss://kernelseek.example/ws/worker/"
