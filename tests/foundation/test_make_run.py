"""`make run` on a fresh data folder serves the site: the README's first command, started for real."""

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def served_site(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}}
    env.update(KSEEK_DATA_DIR=str(tmp_path / "data"), KSEEK_ADMIN_PASSWORD="served-site-password")
    log = open(tmp_path / "make-run.log", "w+")
    process = subprocess.Popen(
        ["make", "run", f"PORT={port}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                urllib.request.urlopen(base + "/accounts/login/", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"make run did not serve (exit {process.poll()}):\n{log.read()[-4000:]}")
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def test_make_run_serves_the_runs_page_to_a_signed_in_user_and_redirects_anonymous_ones(served_site):
    anonymous = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        anonymous.open(served_site + "/")
    assert redirect.value.code == 302
    assert redirect.value.headers["Location"].startswith("/accounts/login/")

    jar = CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login_page = browser.open(served_site + "/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page).group(1)
    form = urllib.parse.urlencode(
        {"username": "admin", "password": "served-site-password", "csrfmiddlewaretoken": token, "next": "/"}
    ).encode()
    request = urllib.request.Request(served_site + "/accounts/login/", data=form, headers={"Referer": served_site + "/accounts/login/"})
    page = browser.open(request).read().decode()
    assert "<h1>Runs</h1>" in page
    assert browser.open(served_site + "/static/css/kseek.css").status == 200
