"""The database unavailable for a while: the server refuses events without acknowledging them (nack with retry,
so the worker keeps them in its spool) and stores them once it is back, each once.

On SQLite "unavailable" is another process holding the write lock past the server's busy timeout (the site's 20 s
shortened to a few, KSEEK_SQLITE_BUSY_TIMEOUT_S: waiting out 20 s made this CI's slowest test); on PostgreSQL the
site's database stops taking connections and the server's are terminated.
"""

import sqlite3

import pytest

from tests.reliability.live import postgres_url
from tests.reliability.wire import WireWorker, usage_event

pytestmark = pytest.mark.timeout(300)


class SqliteWriteLock:
    """Holds SQLite's write lock from another connection, as a long write by another process would."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, *exc):
        self.conn.execute("ROLLBACK")
        self.conn.close()


class PostgresClosed:
    """The site's database refuses connections (even a superuser's) and the open ones are terminated."""

    def __init__(self, site):
        self.site = site

    def _admin(self, sql):
        import psycopg

        with psycopg.connect(self.site.pg_admin, autocommit=True) as conn:
            conn.execute(sql)

    def __enter__(self):
        self._admin(f'ALTER DATABASE "{self.site.pg_name}" WITH ALLOW_CONNECTIONS false')
        self._admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{self.site.pg_name}'")
        return self

    def __exit__(self, *exc):
        self._admin(f'ALTER DATABASE "{self.site.pg_name}" WITH ALLOW_CONNECTIONS true')


SQLITE_BUSY_TIMEOUT_S = "4"  # long enough for the server's own writes on a loaded machine, short to wait out


def outage(site):
    return PostgresClosed(site) if postgres_url() else SqliteWriteLock(site.data_dir / "kernelseek.sqlite3")


def test_events_sent_while_the_database_is_down_are_nacked_for_retry_then_stored_once_when_it_is_back(site):
    port = site.start_server(KSEEK_SQLITE_BUSY_TIMEOUT_S=SQLITE_BUSY_TIMEOUT_S)
    token = site.worker_token("gpu-outage")
    site.queue_demo_run()
    worker = WireWorker(port, token)
    run_id = worker.claim()
    for seq in range(3):
        worker.send(usage_event(run_id, seq))
    assert all(r["type"] == "ack" for r in worker.replies_for(3))

    with outage(site):
        for seq in range(3, 8):
            worker.send(usage_event(run_id, seq))
        refused = worker.replies_for(5, timeout=60)
    assert [(r["type"], r["retry"]) for r in refused] == [("nack", True)] * 5, refused
    assert "database" in refused[0]["error"]

    # Back: the worker sends its spool again (here by hand, the events unchanged), plus one repeat of an
    # event stored before the outage.
    for seq in [2] + list(range(3, 8)):
        worker.send(usage_event(run_id, seq))
    assert all(r["type"] == "ack" for r in worker.replies_for(6)), "the server did not recover"
    worker.close()

    rows = site.query("select seq from runs_step where run_id = ? order by seq", (run_id,))
    assert [seq for (seq,) in rows] == list(range(8))
    ((count, last, tokens_in),) = site.query(
        "select step_count, last_seq, tokens_in from runs_run where id = ?", (run_id,)
    )
    assert (count, last, tokens_in) == (8, 7, 8)
