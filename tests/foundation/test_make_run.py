"""`make run` on a fresh data folder serves the site: the README's first command, started for real."""

import os
import re
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

from tests.live_server import free_port, serving
from tests.without_bwrap import path_without_bwrap

ROOT = Path(__file__).resolve().parents[2]
# its own site processes, on the embedded defaults: the first CI pass only (tests/conftest.py)
pytestmark = pytest.mark.embedded_defaults


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


def make_run_env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}}
    env.update(KSEEK_DATA_DIR=str(data_dir), KSEEK_ADMIN_PASSWORD="served-site-password")
    return env


@pytest.fixture(scope="module")
def served_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("make-run")


@pytest.fixture(scope="module")
def served_data_dir(served_folder) -> Path:
    return served_folder / "data"


@pytest.fixture(scope="module")
def served_site(served_folder, served_data_dir):
    """One `make run` for the module's tests of a served site: each start costs 11-14 s on CI's machine (docs/
    testing.md, "CI time"). They only read the site, sign in, or start other servers on its data folder that must
    leave it as it was; the test without bubblewrap starts its own."""
    port = free_port()
    env = make_run_env(served_data_dir)
    log_path = served_folder / "make-run.log"
    with serving(["make", "run", f"PORT={port}"], port=port, env=env, log_path=log_path) as base:
        yield base


def signed_in(base: str):
    """A client signed in as the admin `make run` made, and the page the login led to (the runs list)."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    login_page = browser.open(base + "/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page).group(1)
    form = urllib.parse.urlencode(
        {"username": "admin", "password": "served-site-password", "csrfmiddlewaretoken": token, "next": "/"}
    ).encode()
    request = urllib.request.Request(
        base + "/accounts/login/", data=form, headers={"Referer": base + "/accounts/login/"}
    )
    return browser, browser.open(request).read().decode()


def test_make_run_serves_the_runs_page_to_a_signed_in_user_and_redirects_anonymous_ones(served_site):
    anonymous = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        anonymous.open(served_site + "/")
    assert redirect.value.code == 302
    assert redirect.value.headers["Location"].startswith("/accounts/login/")

    browser, page = signed_in(served_site)
    assert "<h1>Runs</h1>" in page
    assert browser.open(served_site + "/static/css/kseek.css").status == 200


@pytest.mark.sandbox  # the local worker starts only where bubblewrap works
def test_make_run_loads_the_bank_and_released_kernels_and_its_local_worker_streams_the_demo_run(
    served_site, served_data_dir
):
    import sqlite3

    database = sqlite3.connect(served_data_dir / "kernelseek.sqlite3", timeout=20)
    assert database.execute("select count(*) from questionbank_bankquestion where active").fetchone()[0] >= 40
    # every kernels/*/release.toml of the checkout (attention's, softmax_rows', ...), each once
    shipped = {tomllib.loads(p.read_text())["name"] for p in (ROOT / "kernels").glob("*/release.toml")}
    released = [name for (name,) in database.execute("select release_name from runs_kernel where released")]
    assert "attention-fwd-sm90" in shipped and sorted(released) == sorted(shipped)
    deadline = time.monotonic() + 120
    steps = 0
    while time.monotonic() < deadline:
        row = database.execute("select status, step_count from runs_run where imported_from = ''").fetchone()
        steps = row[1] if row else 0
        # the local worker claimed the demo run and its events are being stored, evaluations included
        if steps >= 5 and database.execute("select count(*) from runs_evaluation").fetchone()[0] >= 1:
            break
        time.sleep(1)
    else:
        pytest.fail(f"the demo run did not stream: {steps} steps stored")
    assert row[0] in ("running", "succeeded", "failed", "waiting_review")


def test_the_local_worker_hides_the_servers_data_folder_from_its_agents():
    from django.conf import settings

    from runs.management.commands.serve import Command

    argv = Command.worker_argv("127.0.0.1", 8000, settings.DATA_DIR / "local-worker")
    assert argv[argv.index("--hide") + 1] == str(settings.DATA_DIR)


def test_the_server_reads_every_frame_and_message_up_to_the_limit_it_announces_to_workers():
    import subprocess as sp

    from kseek_site.serving import MESSAGE_MAX_BYTES
    from runs.management.commands.serve import Command

    argv = Command.server_argv("127.0.0.1", 8000)
    for option in ("--websocket-max-frame-size", "--websocket-max-message-size"):
        assert argv[argv.index(option) + 1] == str(MESSAGE_MAX_BYTES)
        # an option daphne knows (a misspelt one makes daphne exit at start)
        assert option in sp.run([argv[0], "--help"], capture_output=True, text=True).stdout


def local_worker_row(data_dir: Path) -> tuple[str, str] | None:
    """(token hash, connection) of the local worker host, as the database holds them now."""
    import sqlite3

    database = sqlite3.connect(data_dir / "kernelseek.sqlite3", timeout=20)
    try:
        return database.execute("select token_hash, connection from runs_workerhost where name = 'local'").fetchone()
    finally:
        database.close()


def connected_local_worker(data_dir: Path) -> tuple[str, str]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        row = local_worker_row(data_dir)
        if row and row[1]:
            return row
        time.sleep(0.5)
    pytest.fail("the local worker of `make run` did not connect")


@pytest.mark.sandbox  # the local worker starts only where bubblewrap works
def test_a_second_make_run_refuses_a_busy_port_and_never_takes_the_first_ones_local_worker(
    served_site, served_data_dir, tmp_path
):
    data_dir = served_data_dir
    first = connected_local_worker(data_dir)
    port = int(served_site.rsplit(":", 1)[1])

    again = subprocess.run(
        ["make", "run", f"PORT={port}"], cwd=ROOT, env=make_run_env(data_dir), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert again.returncode != 0
    assert local_worker_row(data_dir) == first, "the second `make run` rotated the running local worker's token"
    assert f"127.0.0.1:{port} is already in use" in again.stderr
    # At once, as the README says: before it migrates or bootstraps (new-user audit finding 8: it ran both first).
    assert "migrate" not in again.stdout and "bootstrap" not in again.stdout + again.stderr

    # On another port, the same data folder: served, but with no local worker of its own.
    other_port = free_port()
    second_serve = [sys.executable, "manage.py", "serve", "--port", str(other_port), "--no-demo"]
    log_path = tmp_path / "second-serve.log"
    with serving(second_serve, port=other_port, env=make_run_env(data_dir), log_path=log_path) as second:
        assert urllib.request.urlopen(second + "/accounts/login/").status == 200
        assert local_worker_row(data_dir) == first
    assert "the local worker of another `serve` on this data folder is running" in log_path.read_text()
    assert local_worker_row(data_dir) == first


def test_without_bubblewrap_the_pages_say_the_local_worker_did_not_start_why_and_how_to_fix_it(tmp_path, data_dir):
    import sqlite3

    port = free_port()
    env = {**make_run_env(data_dir), "PATH": path_without_bwrap(tmp_path / "bin")}
    log_path = tmp_path / "make-run.log"
    with serving(["make", "run", f"PORT={port}"], port=port, env=env, log_path=log_path) as base:
        deadline = time.monotonic() + 120
        while "Serving the dashboard without a worker" not in log_path.read_text():
            assert time.monotonic() < deadline, "the local worker did not give up for want of a sandbox"
            time.sleep(0.5)
        database = sqlite3.connect(data_dir / "kernelseek.sqlite3", timeout=20)
        (demo_run,) = database.execute("select id from runs_run where status = 'queued'").fetchone()
        database.close()

        browser, runs_list = signed_in(base)
        run_page = browser.open(f"{base}/runs/{demo_run}/").read().decode()
        workers_page = browser.open(f"{base}/workers/").read().decode()
    for page in (runs_list, run_page, workers_page):
        assert "the local worker did not start: this host has no working sandbox (`bwrap` is not on PATH)" in page
        assert "apt-get install bubblewrap" in page and "manage.py serve --unsandboxed" in page
