import functools
import os
import re
from pathlib import Path

import pytest

# `make test` runs the suite on two xdist workers: what keeps them apart, and the `alone` marker (tests/parallel.py).
pytest_plugins = ["tests.parallel"]

# Tests that need a GPU carry @pytest.mark.gpu and are skipped where none is present (CI never has one).
# Tests that need a working bubblewrap (agent commands, the sandboxed harness, a worker or `make run` whose
# agents run anything) carry @pytest.mark.sandbox: skipped with the reason where none works, and failed instead
# when KSEEK_REQUIRE_SANDBOX=1 (CI sets it, as KSEEK_REQUIRE_BROWSER for the browser tests).
REQUIRE_SANDBOX = "KSEEK_REQUIRE_SANDBOX"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# With KSEEK_SITE_TESTS_ONLY=1 only the tests that reach the site's database or channel layer are run: CI's second
# pass (PostgreSQL and Redis, .ci/run) runs those again; the rest (the harness's, the agent loop's) behave the same
# on either and ran in the first pass (docs/testing.md, "CI time").
SITE_TESTS_ONLY = "KSEEK_SITE_TESTS_ONLY"
# A test reaches the site when it asks pytest-django for a database, a client or settings (not django_db_blocker,
# which pytest-django's own autouse fixtures ask for in every test), or when its module names Django, the site's
# apps, a live site, a database or the channel layer (these words err towards running a test again, never skipping
# one that needs the second configuration).
_SITE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "admin_user",
    "site",  # tests/reliability/conftest.py's live site
    "client",
    "admin_client",
    "live_server",
    "settings",
    "django_user_model",
}
_SITE_WORDS = re.compile(
    r"django|\bfrom runs\b|\bimport runs\b|\bruns\.\w|kseek_site|questionbank\.models|LiveSite|live_site|"
    r"live_server|DATABASE_URL|REDIS_URL|postgres|sqlite|manage\.py|\bfrom channels\b|channel_layer|make run|make_run"
)


@functools.cache
def _module_names_the_site(path: str) -> bool:
    return bool(_SITE_WORDS.search(Path(path).read_text(encoding="utf-8", errors="replace")))


# The browser tests' site (tests/dashboard/test_browser.py's `live_site`) is SQLite with the in-memory channel layer
# whatever DATABASE_URL and REDIS_URL say (`live_site_env`; tests/foundation/test_site_tests_only.py holds it to
# that): a test whose only site is that one runs the same in both passes, and runs in the first. Its module's words
# (it names the fixture, Django's manage.py) say nothing more about such a test.
_FIXED_SITE_FIXTURES = {"live_site"}
# A module whose tests start the site as processes of their own on the embedded defaults (SQLite, the in-memory
# channel layer: DATABASE_URL and REDIS_URL taken out of those processes' environment) and reach no site from the
# test's process marks itself `embedded_defaults` (`make run`, the data folder's modes, SQLite's concurrency): they
# too run the same in both passes. tests/foundation/test_site_tests_only.py holds each such module to that.
EMBEDDED_DEFAULTS_MARK = "embedded_defaults"


def reaches_the_site(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db") is not None:
        return True
    fixtures = set(getattr(item, "fixturenames", ()))
    if _SITE_FIXTURES & fixtures:
        return True
    if _FIXED_SITE_FIXTURES & fixtures or item.get_closest_marker(EMBEDDED_DEFAULTS_MARK) is not None:
        return False
    return _module_names_the_site(str(item.path))


def pytest_collection_modifyitems(config, items):
    if os.environ.get(SITE_TESTS_ONLY) == "1":
        reaches = {item.nodeid: reaches_the_site(item) for item in items}
        config.hook.pytest_deselected(items=[item for item in items if not reaches[item.nodeid]])
        items[:] = [item for item in items if reaches[item.nodeid]]
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (none on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def no_sandbox_reason() -> str | None:
    """Why agent commands cannot run under bubblewrap here (the probe agentloop itself uses), or None."""
    from agentloop.sandbox import INSTALL_HINT, working_bwrap

    path, why = working_bwrap()
    return None if path else f"needs a working bubblewrap sandbox: {why}; {INSTALL_HINT}"


def pytest_runtest_setup(item):
    if item.get_closest_marker("sandbox") is None:
        return
    why = no_sandbox_reason()
    if why is None:
        return
    if os.environ.get(REQUIRE_SANDBOX) == "1":
        pytest.fail(f"{why} ({REQUIRE_SANDBOX}=1: sandbox tests must run here)", pytrace=False)
    pytest.skip(why)


@pytest.fixture
def database_url_in_use() -> str:
    return os.environ.get("DATABASE_URL", "")


# Passwords the tests' own process sets or checks are hashed with MD5: the site's PBKDF2 (a million rounds) costs
# 0.4 s a hash on CI's machine, and the suite creates and signs in users in hundreds of tests (docs/testing.md, "CI
# time"). No test asserts the hasher; the site's own hashers stay behind it, so a hash made by a live site's
# process (which keeps the site's settings and so PBKDF2, as the live login tests want) is still checked here.
FAST_TEST_HASHER = "django.contrib.auth.hashers.MD5PasswordHasher"


def pytest_configure(config):
    # Connections opened in asgiref's worker threads (async tests, consumers) are only closed by
    # close_old_connections, which keeps them open for CONN_MAX_AGE; at 0 they close after each call, so the test
    # database on PostgreSQL can be dropped at the end of the session.
    try:
        from django.conf import settings
    except ImportError:  # a GPU host runs `pytest -m gpu tests/harness` without Django installed
        return
    if settings.configured:
        settings.DATABASES["default"]["CONN_MAX_AGE"] = 0
        settings.PASSWORD_HASHERS = [FAST_TEST_HASHER, *settings.PASSWORD_HASHERS]
        if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
            _flush_postgresql_by_delete()


def _flush_postgresql_by_delete() -> None:
    """A transactional test ends with Django's flush, which on PostgreSQL is one TRUNCATE of every table: a new file
    for each table and index, some 0.8 s on CI's machine, against 0.02 s for a DELETE of each (the tables hold a
    test's few rows). Django's foreign keys on PostgreSQL are DEFERRABLE INITIALLY DEFERRED and the flush runs in
    one transaction, so the order of the DELETEs does not matter; the tables end empty as after the TRUNCATE, and
    neither resets a sequence. A flush that resets sequences or cascades (not one pytest-django's plain
    transactional test asks for) keeps Django's TRUNCATE. Only the tests' own process: live sites and `manage.py`
    are other processes."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush


@pytest.fixture(autouse=True)
def _release_thread_connections():
    """Close the database connections that threads other than the test's own keep after a test, so that nothing
    holds the test database at the end (PostgreSQL cannot drop a database that has connections):
    - the worker socket's event writer keeps its thread's connection until it has been idle for a second
      (runs/event_writer.py); a test's event loop may end before that;
    - an async test's `sync_to_async(...)` ORM calls run on asgiref's one shared thread, and plain sync_to_async
      (unlike channels' database_sync_to_async) never closes the connection it opened there."""
    yield
    import sys

    event_writer = sys.modules.get("runs.event_writer")
    if event_writer is not None:
        event_writer.EventWriter.release_connection()
    asgiref_sync = sys.modules.get("asgiref.sync")
    if asgiref_sync is not None and "django.db" in sys.modules:
        from django.db import connections

        asgiref_sync.SyncToAsync.single_thread_executor.submit(connections.close_all).result()
