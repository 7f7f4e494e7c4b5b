"""The test database taken back to an earlier migration of `runs` and forward again: for the tests of a migration
that moves data (rows written in the old shape, then the migration run on them). Only in a transactional test
(`pytest.mark.django_db(transaction=True)`): a schema change cannot happen inside the test's transaction."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def _executor() -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()  # what the previous migrate left applied
    return executor


def migrate_to(name: str) -> Apps:
    """Migrate `runs` to its migration `name` (back or forward); the models as they were then."""
    executor = _executor()
    target = [("runs", name)]
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def latest() -> str:
    return _executor().loader.graph.leaf_nodes("runs")[0][1]


@contextlib.contextmanager
def at_migration(name: str) -> Iterator[Apps]:
    """The database at `runs`'s migration `name` while the block runs (its models given), at the newest after."""
    newest = latest()
    try:
        yield migrate_to(name)
    finally:
        migrate_to(newest)
