"""A 403 is expected (audit finding 17): the server's log gets one line for it, never a traceback."""

import logging
from unittest import mock

import pytest
from django.test import Client

from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db


def test_a_viewer_refused_an_operators_page_is_logged_in_one_line(caplog):
    client = Client()
    client.force_login(make_user("vera", "viewer"))
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get("/traces/import/").status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Forbidden (Permission denied): /traces/import/"
    assert "Traceback" not in caplog.text and "PermissionDenied" not in caplog.text


def test_an_admins_refused_add_is_logged_in_one_line(caplog):
    client = Client()
    client.force_login(make_user("ada", is_staff=True, is_superuser=True))
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get("/admin/runs/evaluation/add/").status_code == 403  # recorded verdicts are read-only
    assert "Forbidden (Permission denied): /admin/runs/evaluation/add/" in caplog.text
    assert "Traceback" not in caplog.text


def test_a_server_error_keeps_its_traceback(caplog):
    """The filter drops only a denial's traceback: a real failure still shows where it happened."""
    client = Client(raise_request_exception=False)
    client.force_login(make_user("olga", "operator"))
    with caplog.at_level(logging.ERROR, logger="django.request"):
        with mock.patch("runs.run_pages.views_traces.TraceImportForm", side_effect=RuntimeError("boom")):
            assert client.get("/traces/import/").status_code == 500
    assert "Traceback" in caplog.text and "RuntimeError: boom" in caplog.text
