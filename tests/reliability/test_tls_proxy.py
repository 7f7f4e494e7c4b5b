"""The production shape over TLS (docs/deployment.md): Debian's nginx in front, terminating TLS with a certificate
from the test's own CA and passing websocket upgrades; daphne behind it with KSEEK_BEHIND_TLS_PROXY=1; the real
worker (`python -m agentloop worker`) on wss:// with --ca-file; a browser over https.

Two daphne processes where REDIS_URL is set (CI's second pass: the channel layer must cross processes, so a
browser on one process hears of a worker's events on the other); one process on the in-memory layer otherwise
(CI's first pass). Everything else is the same in both.
"""

from __future__ import annotations

import os
import re
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from tests.agentloop.test_worker_tls import a_non_loopback_address
from tests.live_server import free_port
from tests.reliability.live import LiveSite, spool_pending, wait_until
from tests.reliability.test_worker_restart import assert_trace_stored_exactly, run_status, stored_steps
from tests.reliability.tls_proxy import TlsProxy, worker_argv, worker_env
from tests.tls_certs import make_ca, make_server_certificate

pytestmark = pytest.mark.timeout(600)
FINISHED = ("succeeded", "failed", "stopped")
PASSWORD = "pw-123456789"  # LiveSite.session_for's


@pytest.fixture(scope="module")
def shape(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    certificate = make_server_certificate(folder / "certs", hosts=("localhost", "127.0.0.1"))
    site = LiveSite(folder / "site").setup()
    proxy = None
    try:
        # The proxy names its upstreams' ports and the servers need the proxy's origin: ports first.
        daphne_ports = [free_port() for _ in range(2 if os.environ.get("REDIS_URL") else 1)]
        proxy = TlsProxy(folder / "nginx", certificate, daphne_ports)
        behind_proxy = {
            "KSEEK_BEHIND_TLS_PROXY": "1",
            "ALLOWED_HOSTS": "localhost",
            "CSRF_TRUSTED_ORIGINS": proxy.base,
            "KSEEK_TRUSTED_PROXIES": "1",
        }
        ports = [site.start_server(port, **behind_proxy) for port in daphne_ports]
        proxy.start()
        yield {"site": site, "proxy": proxy, "certificate": certificate, "ports": ports, "folder": folder}
    finally:
        if proxy:
            proxy.close()
        site.close()


def start_worker(shape, name: str, *extra: str) -> tuple[subprocess.Popen, object]:
    site = shape["site"]
    state_dir = shape["folder"] / name
    state_dir.mkdir()
    token = site.worker_token(name)
    log = open(shape["folder"] / f"{name}.log", "a")
    process = subprocess.Popen(
        worker_argv(shape["proxy"].base.replace("https://", "wss://"), state_dir, *extra),
        cwd=shape["folder"],
        env=worker_env(token),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    site.workers.append(process)
    return process, state_dir


def worker_log(shape, name: str) -> str:
    return (shape["folder"] / f"{name}.log").read_text()[-4000:]


def https_get(shape, path: str):
    context = ssl.create_default_context(cafile=shape["certificate"].ca_file)
    return urllib.request.urlopen(shape["proxy"].base + path, context=context, timeout=15)


def test_the_dashboard_is_served_over_https_with_hsts_and_plain_http_is_redirected(shape):
    with https_get(shape, "/accounts/login/") as response:
        assert response.status == 200
        assert response.headers["Strict-Transport-Security"].startswith("max-age=31536000")
        cookies = response.headers.get_all("Set-Cookie")
        assert any(c.startswith("csrftoken=") and "Secure" in c for c in cookies), cookies
    plain = f"http://127.0.0.1:{shape['proxy'].http_port}/accounts/login/"

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.build_opener(NoRedirect).open(plain, timeout=15)
    assert refused.value.code == 301
    assert refused.value.headers["Location"] == "https://127.0.0.1/accounts/login/"


def test_the_real_worker_takes_a_run_over_wss_through_the_proxy_and_every_event_is_stored(shape):
    site = shape["site"]
    run_id = site.queue_demo_run()
    worker, state_dir = start_worker(shape, "gpu-wss", "--ca-file", str(shape["certificate"].ca_file))
    try:
        connected = wait_until(lambda: "connected to wss://" in worker_log(shape, "gpu-wss"), 60, while_alive=worker)
        assert connected, worker_log(shape, "gpu-wss") + shape["proxy"].log()
        finished = wait_until(lambda: run_status(site, run_id) in FINISHED, 400, while_alive=worker)
        assert finished, worker_log(shape, "gpu-wss") + shape["proxy"].log()
        wait_until(lambda: spool_pending(state_dir) == 0, 30)
    finally:
        worker.kill()
        worker.wait(timeout=30)
    events = assert_trace_stored_exactly(site, state_dir, run_id)
    assert events[-1]["payload"]["status"] == "succeeded", events[-1]
    assert f"connected to wss://localhost:{shape['proxy'].https_port}/ws/worker/" in worker_log(shape, "gpu-wss")
    # The socket went through nginx, upgraded there (101), not around it.
    assert '"GET /ws/worker/ HTTP/1.1" 101' in shape["proxy"].access_log()


def test_a_worker_given_another_ca_refuses_the_proxy_with_a_clear_message(shape, tmp_path):
    other_ca, _, _ = make_ca(tmp_path / "other", name="Not the dashboard's CA")
    before = shape["proxy"].access_log().count("/ws/worker/")
    worker, _ = start_worker(shape, "gpu-wrong-ca", "--ca-file", str(other_ca))
    assert worker.wait(timeout=60) == 5, worker_log(shape, "gpu-wrong-ca")
    log = worker_log(shape, "gpu-wrong-ca")
    assert "its TLS certificate does not verify against the CA in" in log and str(other_ca) in log, log
    assert "Traceback" not in log, log
    assert shape["proxy"].access_log().count("/ws/worker/") == before, "no request (and no token) may have been sent"


def test_a_worker_refuses_to_send_its_token_over_plain_ws_to_another_host(shape, tmp_path):
    host = a_non_loopback_address() or "dashboard.invalid"
    done = subprocess.run(
        worker_argv(f"ws://{host}:{shape['proxy'].http_port}", tmp_path / "state"),
        env=worker_env("never-sent"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"refusing to send the worker token in clear text to {host} over plain ws://" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_trace_just_over_the_import_limit_gets_the_imports_own_413_through_the_proxy(shape):
    """nginx's body limit leaves room for the form around the file: a trace a byte over KSEEK_TRACE_UPLOAD_MAX_BYTES
    (32 MiB by default) reaches Django, whose refusal names both sizes, where nginx's own bare 413 would have
    refused even a trace within the limit (the multipart framing is counted in the body)."""
    limit = 32 * 2**20
    context = ssl.create_default_context(cafile=shape["certificate"].ca_file)
    base = shape["proxy"].base
    cookies = f"sessionid={shape['site'].session_for('otto', 'operator')}"
    page = urllib.request.Request(base + "/traces/import/", headers={"Cookie": cookies})
    with urllib.request.urlopen(page, context=context, timeout=30) as answer:
        csrf = re.search(r"csrftoken=([^;]+)", answer.headers["Set-Cookie"]).group(1)
    boundary = "kseek-tls-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{csrf}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="trace"; filename="big.jsonl"\r\n\r\n'
        ).encode()
        + b"x" * (limit + 1)
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = {
        "Cookie": f"{cookies}; csrftoken={csrf}",
        "Origin": base,
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }
    upload = urllib.request.Request(base + "/traces/import/", data=body, headers=headers)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(upload, context=context, timeout=120)
    page_text = refused.value.read().decode()
    assert refused.value.code == 413
    assert f"the import takes at most {limit:,} bytes" in page_text, page_text[:500]


@pytest.mark.browser
def test_a_browser_over_https_sees_a_live_run_through_the_proxy(shape):
    from tests.dashboard.test_browser import CHROMIUM_ARGS, chromium_path

    path = chromium_path()
    from playwright.sync_api import sync_playwright

    site = shape["site"]
    site.session_for("tess", "viewer")  # a user with LiveSite's password; the browser signs in through the form
    run_id = site.queue_demo_run()
    # Trust only the test certificate's key: not a blanket --ignore-certificate-errors.
    args = [*CHROMIUM_ARGS, f"--ignore-certificate-errors-spki-list={shape['certificate'].spki_sha256}"]
    worker = None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=args)
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(30_000)
            page.goto(shape["proxy"].base + "/accounts/login/")
            page.fill("input[name=username]", "tess")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_selector("h1:has-text('Runs')")
            page.goto(f"{shape['proxy'].base}/runs/{run_id}/")
            page.wait_for_selector("#live-state.live-on")  # the page's socket is open, through the proxy

            worker, _ = start_worker(shape, "gpu-browser", "--ca-file", str(shape["certificate"].ca_file))
            # The page was loaded while the run was queued: what follows arrives over its socket, live.
            page.wait_for_selector("#step-1", timeout=120_000)
            finished = wait_until(lambda: run_status(site, run_id) in FINISHED, 400, while_alive=worker)
            assert finished, worker_log(shape, "gpu-browser")
            last_seq = stored_steps(site, run_id)[-1][0]
            page.wait_for_selector(f"#step-{last_seq}", timeout=60_000)
            page.wait_for_selector("#run-status:has-text('Succeeded')")
        finally:
            browser.close()
            if worker:
                worker.kill()
                worker.wait(timeout=30)
    socket_upgrades = shape["proxy"].access_log()
    assert f'"GET /ws/runs/{run_id}/ HTTP/1.1" 101' in socket_upgrades, socket_upgrades[-2000:]
    # With two processes, nginx spread the requests (the page's, its socket's, the worker's) over both.
    assert shape["proxy"].upstreams_used() == {f"127.0.0.1:{port}" for port in shape["ports"]}
