"""The browser tests' site is SQLite with the in-memory channel layer whatever the configuration: what lets CI's
second pass (PostgreSQL and Redis, tests/conftest.py) leave the browser tests to the first, where they ran on the
same site."""

from tests.dashboard.test_browser import live_site_env


def test_the_browser_tests_site_is_sqlite_with_the_in_memory_channel_layer_whatever_the_configuration(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    env = live_site_env(tmp_path / "data")
    assert "DATABASE_URL" not in env and "REDIS_URL" not in env
    assert env["KSEEK_DATA_DIR"] == str(tmp_path / "data")
