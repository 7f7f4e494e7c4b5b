"""KSEEK_BEHIND_TLS_PROXY: one switch makes the settings safe behind a TLS proxy; without it the site serves plain
http as `make run` does.

Each case runs in a fresh interpreter, because Django reads its settings once per process.
"""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What a production host sets besides the switch (docs/deployment.md, "Settings").
PRODUCTION = {
    "KSEEK_BEHIND_TLS_PROXY": "1",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "kernelseek.example",
    "CSRF_TRUSTED_ORIGINS": "https://kernelseek.example",
    "DEBUG": "0",
}

# A GET of the login page (it needs no database), as the proxy forwards it or as a client reaching daphne
# directly sends it.
REQUEST_PROBE = """
import json, django
from django.conf import settings
django.setup()
from django.test import Client
client = Client()
plain = client.get("/accounts/login/", HTTP_HOST="kernelseek.example")
forwarded = client.get("/accounts/login/", HTTP_HOST="kernelseek.example", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location"), plain.get("Strict-Transport-Security")],
    "forwarded": [forwarded.status_code, forwarded.get("Strict-Transport-Security")],
    "csrf_cookie_secure": bool(forwarded.cookies["csrftoken"]["secure"]) if "csrftoken" in forwarded.cookies else None,
    "session_cookie_secure": settings.SESSION_COOKIE_SECURE,
}))
"""


def site_env(tmp_path: Path, **overrides) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"}}
    env.pop("KSEEK_BEHIND_TLS_PROXY", None)
    env.update(
        KSEEK_DATA_DIR=str(tmp_path / "data"), DJANGO_SETTINGS_MODULE="kseek_site.settings", PYTHONPATH=str(ROOT)
    )
    env.update(overrides)
    return env


def check_deploy(tmp_path: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=site_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def requests_seen(tmp_path: Path, **env) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", REQUEST_PROBE],
        cwd=ROOT,
        env=site_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_check_deploy_is_clean_with_the_tls_proxy_switch_and_production_values(tmp_path):
    done = check_deploy(tmp_path, **PRODUCTION)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout, done.stdout + done.stderr


def test_without_the_switch_check_deploy_names_the_four_transport_warnings(tmp_path):
    without = {k: v for k, v in PRODUCTION.items() if k != "KSEEK_BEHIND_TLS_PROXY"}
    done = check_deploy(tmp_path, **without)
    assert done.returncode != 0
    for code in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert code in done.stderr, done.stderr


def test_behind_the_proxy_plain_http_is_redirected_and_https_gets_hsts_and_secure_cookies(tmp_path):
    seen = requests_seen(tmp_path, **PRODUCTION)
    status, location, hsts = seen["plain"]
    assert (status, location, hsts) == (301, "https://kernelseek.example/accounts/login/", None)
    status, hsts = seen["forwarded"]
    assert status == 200
    assert hsts == "max-age=31536000; includeSubDomains; preload"
    assert seen["csrf_cookie_secure"] is True and seen["session_cookie_secure"] is True


def test_the_hsts_lifetime_comes_from_the_environment(tmp_path):
    seen = requests_seen(tmp_path, **PRODUCTION, KSEEK_HSTS_SECONDS="3600")
    assert seen["forwarded"][1] == "max-age=3600; includeSubDomains; preload"


def test_the_default_serves_plain_http_unchanged_and_ignores_a_forwarded_protocol(tmp_path):
    seen = requests_seen(tmp_path, ALLOWED_HOSTS="kernelseek.example")
    # No redirect, no HSTS, cookies usable over http: `make run` on loopback works as before. A client's
    # X-Forwarded-Proto is not trusted either (nothing stands in front to set it).
    assert seen["plain"] == [200, None, None]
    assert seen["forwarded"] == [200, None]
    assert seen["csrf_cookie_secure"] is False and seen["session_cookie_secure"] is False


def test_behind_the_proxy_a_request_without_a_forwarded_protocol_is_named_in_the_log_once(tmp_path):
    # A proxy that does not set X-Forwarded-Proto sends browsers round a redirect loop; the log says why.
    done = subprocess.run(
        [sys.executable, "-c", REQUEST_PROBE],
        cwd=ROOT,
        env=site_env(tmp_path, **PRODUCTION),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("came without X-Forwarded-Proto") == 1, done.stderr[-3000:]
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in done.stderr
