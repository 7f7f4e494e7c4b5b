"""The settings pick their database, channel layer and secrets from the environment.

Each case runs in a fresh interpreter, because Django reads its settings once per process.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "name": settings.DATABASES["default"]["NAME"],
    "host": settings.DATABASES["default"].get("HOST"),
    "options": settings.DATABASES["default"].get("OPTIONS", {}),
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "layer_config": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}),
    "secret": settings.SECRET_KEY,
    "debug": settings.DEBUG,
    "hosts": settings.ALLOWED_HOSTS,
    "first_app": settings.INSTALLED_APPS[0],
    "large_gain_ratio": settings.KSEEK_LARGE_GAIN_RATIO,
    "login_failure_limit": settings.AXES_FAILURE_LIMIT,
    "login_cooloff_s": settings.AXES_COOLOFF_TIME.total_seconds(),
    "trusted_proxies": settings.KSEEK_TRUSTED_PROXIES,
}))
"""


def probe_settings(tmp_path: Path, **env_overrides) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        # A channel prefix the session's shell sets (a shared Redis) would name every probed site alike.
        if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "KSEEK_CHANNEL_PREFIX"}
    }
    env.update({"DJANGO_SETTINGS_MODULE": "kseek_site.settings", "KSEEK_DATA_DIR": str(tmp_path)})
    env.update(env_overrides)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_defaults_are_sqlite_in_the_data_folder_with_wal_and_immediate_transactions(tmp_path):
    found = probe_settings(tmp_path)
    assert found["engine"] == "django.db.backends.sqlite3"
    assert Path(found["name"]).parent == tmp_path
    assert found["options"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in found["options"]["init_command"]
    assert found["options"]["timeout"] == 20
    assert probe_settings(tmp_path, KSEEK_SQLITE_BUSY_TIMEOUT_S="4")["options"]["timeout"] == 4
    assert found["layer"] == "kseek_site.layers.LocalChannelLayer"
    assert found["debug"] is False
    assert found["hosts"] == ["localhost", "127.0.0.1", "[::1]"]
    assert found["first_app"] == "daphne"


def test_database_url_selects_postgresql_through_psycopg(tmp_path):
    found = probe_settings(tmp_path, DATABASE_URL="postgres://kseek:pw@db.example:5433/kernelseek")
    assert found["engine"] == "django.db.backends.postgresql"
    assert (found["name"], found["host"]) == ("kernelseek", "db.example")


def test_redis_url_selects_the_redis_channel_layer(tmp_path):
    found = probe_settings(tmp_path, REDIS_URL="redis://cache.example:6390/2")
    assert found["layer"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert found["layer_config"]["hosts"] == ["redis://cache.example:6390/2"]


def test_each_site_on_redis_names_its_channels_under_its_own_prefix_unless_one_is_set(tmp_path):
    redis = "redis://cache.example:6390/2"
    first = probe_settings(tmp_path / "a", REDIS_URL=redis)["layer_config"]["prefix"]
    again = probe_settings(tmp_path / "a", REDIS_URL=redis)["layer_config"]["prefix"]
    other = probe_settings(tmp_path / "b", REDIS_URL=redis)["layer_config"]["prefix"]
    # One site (one SECRET_KEY: here its generated file, shared by its processes) keeps one prefix; another
    # site's differs, and neither is channels' shared default.
    assert first == again and first != other and "asgi" not in (first, other)
    assert (
        probe_settings(tmp_path / "a", REDIS_URL=redis, KSEEK_CHANNEL_PREFIX="kseek-staging.")["layer_config"]["prefix"]
        == "kseek-staging."
    )


def test_a_channel_prefix_that_channels_could_not_name_is_refused_at_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "SECRET_KEY"}}
    env.update(
        DJANGO_SETTINGS_MODULE="kseek_site.settings",
        KSEEK_DATA_DIR=str(tmp_path),
        REDIS_URL="redis://cache.example:6390/2",
        KSEEK_CHANNEL_PREFIX="site one!",
    )
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "KSEEK_CHANNEL_PREFIX='site one!' must be 1 to 40 letters" in done.stderr


def test_secret_key_is_generated_once_kept_private_and_reused(tmp_path):
    first = probe_settings(tmp_path)["secret"]
    second = probe_settings(tmp_path)["secret"]
    assert first == second and len(first) >= 50
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_secret_key_from_the_environment_wins_and_writes_nothing(tmp_path):
    assert probe_settings(tmp_path, SECRET_KEY="from-env-" + "x" * 50)["secret"].startswith("from-env-")
    assert not (tmp_path / "secret_key").exists()


def test_debug_and_allowed_hosts_come_from_the_environment(tmp_path):
    found = probe_settings(tmp_path, DEBUG="true", ALLOWED_HOSTS="kseek.example, 10.0.0.5")
    assert found["debug"] is True
    assert found["hosts"] == ["kseek.example", "10.0.0.5"]


def test_a_malformed_debug_value_is_refused_with_its_name(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DEBUG"}
    env.update({"DJANGO_SETTINGS_MODULE": "kseek_site.settings", "KSEEK_DATA_DIR": str(tmp_path), "DEBUG": "maybe"})
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in done.stderr


def test_this_test_session_uses_the_database_the_environment_names(db):
    # CI runs the suite twice; this makes sure the second run really is on PostgreSQL.
    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected
    expected_layer = "RedisPubSubChannelLayer" if os.environ.get("REDIS_URL") else "LocalChannelLayer"
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"].endswith(expected_layer)


@pytest.mark.parametrize("command", [["makemigrations", "--check", "--dry-run"]])
def test_migrations_are_complete(db, command):
    from django.core.management import call_command

    call_command(*command)  # exits non-zero (SystemExit) when a model change has no migration


def test_the_large_gain_ratio_comes_from_the_environment_and_is_checked(tmp_path):
    assert probe_settings(tmp_path)["large_gain_ratio"] == 1.2
    assert probe_settings(tmp_path, KSEEK_LARGE_GAIN_RATIO="1.5")["large_gain_ratio"] == 1.5
    env = {k: v for k, v in os.environ.items()}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "kseek_site.settings",
            "KSEEK_DATA_DIR": str(tmp_path),
            "KSEEK_LARGE_GAIN_RATIO": "0.5",
        }
    )
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "must be at least 1.0" in done.stderr


def probe_fails(tmp_path: Path, **env_overrides) -> str:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="kseek_site.settings", KSEEK_DATA_DIR=str(tmp_path), **env_overrides)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    return done.stderr


def test_the_login_throttle_comes_from_the_environment_and_is_checked(tmp_path):
    found = probe_settings(tmp_path)
    assert (found["login_failure_limit"], found["login_cooloff_s"], found["trusted_proxies"]) == (5, 900, 0)
    found = probe_settings(
        tmp_path, KSEEK_LOGIN_FAILURE_LIMIT="10", KSEEK_LOGIN_COOLOFF_MINUTES="2", KSEEK_TRUSTED_PROXIES="1"
    )
    assert (found["login_failure_limit"], found["login_cooloff_s"], found["trusted_proxies"]) == (10, 120, 1)
    assert "KSEEK_LOGIN_FAILURE_LIMIT='0' must be at least 1" in probe_fails(tmp_path, KSEEK_LOGIN_FAILURE_LIMIT="0")
    assert "KSEEK_TRUSTED_PROXIES='one' is not a whole number" in probe_fails(tmp_path, KSEEK_TRUSTED_PROXIES="one")


@pytest.mark.parametrize(
    ("name", "value"),
    [("KSEEK_WEBHOOK_URL", "hooks.slack.com/services/T0/B0/x"), ("KSEEK_SITE_URL", "kernelseek.example")],
)
def test_a_webhook_or_site_address_without_http_or_https_is_refused_at_start_with_its_name(tmp_path, name, value):
    # Unchecked, a webhook address without a scheme killed the sender thread at each notice (no retry, no "gave up"
    # line), and a site address without one made every notice's run_url a path that is not a link.
    env = {k: v for k, v in os.environ.items() if k not in {"KSEEK_WEBHOOK_URL", "KSEEK_SITE_URL"}}
    env.update({"DJANGO_SETTINGS_MODULE": "kseek_site.settings", "KSEEK_DATA_DIR": str(tmp_path), name: value})
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"{name}={value!r} is not an http:// or https:// address" in done.stderr


def test_the_webhook_and_site_addresses_come_from_the_environment(tmp_path):
    probe = PROBE.replace(
        '"engine":', '"webhook": settings.KSEEK_WEBHOOK_URL, "site": settings.KSEEK_SITE_URL, "engine":'
    )
    env = {k: v for k, v in os.environ.items() if k not in {"KSEEK_WEBHOOK_URL", "KSEEK_SITE_URL"}}
    env.update(
        DJANGO_SETTINGS_MODULE="kseek_site.settings",
        KSEEK_DATA_DIR=str(tmp_path),
        KSEEK_WEBHOOK_URL=" https://hooks.example/kernelseek/ ",
        KSEEK_SITE_URL="https://kernelseek.example/",
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # The receiver's path as given (its slash may matter to it); the site's without one, as links append theirs.
    assert (found["webhook"], found["site"]) == ("https://hooks.example/kernelseek/", "https://kernelseek.example")


def test_a_redis_url_without_its_scheme_is_refused_at_start_with_its_name(tmp_path):
    # Unchecked, the site started and failed later, at every socket and notice (HTTP 500 to each worker).
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "SECRET_KEY"}}
    env.update(
        DJANGO_SETTINGS_MODULE="kseek_site.settings", KSEEK_DATA_DIR=str(tmp_path), REDIS_URL="cache.example:6379"
    )
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "REDIS_URL='cache.example:6379' must start with redis://, rediss:// or unix://" in done.stderr
