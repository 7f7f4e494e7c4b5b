"""The flush that ends a transactional test leaves every table of the test database empty, rows that reference
one another included: on PostgreSQL the tests' process flushes with a DELETE of each table instead of Django's
TRUNCATE (tests/conftest.py, `_flush_postgresql_by_delete`)."""

import pytest
from django.core.management import call_command
from django.db import connection

from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run


def rows_per_table() -> dict[str, int]:
    with connection.cursor() as cursor:
        rows = {}
        for table in connection.introspection.django_table_names(only_existing=True, include_views=False):
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            rows[table] = cursor.fetchone()[0]
    return rows


@pytest.mark.django_db(transaction=True)
def test_the_flush_after_a_transactional_test_empties_every_table_whatever_references_what():
    make_run()  # a run and the task it references
    make_user("olga", "operator")  # a user in a group the data migrations made
    before = rows_per_table()
    assert before["runs_run"] and before["auth_user_groups"]  # rows that reference rows of other tables
    # What pytest-django's transactional test runs at its end (Django's TransactionTestCase._fixture_teardown),
    # less the post_migrate signal that then makes the content types and permissions again.
    call_command(
        "flush", verbosity=0, interactive=False, reset_sequences=False, allow_cascade=False, inhibit_post_migrate=True
    )
    left = rows_per_table()
    assert left.keys() == before.keys() and not any(left.values()), {t: rows for t, rows in left.items() if rows}
