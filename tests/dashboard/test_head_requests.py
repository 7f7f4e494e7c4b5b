"""A HEAD request is answered with its GET's headers and no body (kseek_site/head_requests.py).

The site's whole middleware stack is run here without the test client, which drops a HEAD's body itself and so
hid that the site sent one: daphne dropped only its first 64 KiB piece, and a HEAD of a trace export, a large page
or the Plotly asset put the rest on the wire, where a client read it as the next response."""

import pytest
from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.test import RequestFactory
from django.urls import reverse

from runs.services import kernel_record
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_as_viewer(client):
    """request(method, path) -> the response of the site's own handler and middleware, signed in."""
    client.force_login(make_user("vera"))
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    handler = BaseHandler()
    handler.load_middleware()

    def request(method: str, path: str):
        return handler.get_response(RequestFactory().generic(method, path, HTTP_COOKIE=cookie))

    return request


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_head_of_a_trace_export_sends_its_headers_and_no_body(site_as_viewer):
    run = make_run()
    path = reverse("trace_export", args=[run.pk])
    got = site_as_viewer("GET", path)
    assert got.status_code == 200 and body_of(got).startswith(b'{"v": 1')
    head = site_as_viewer("HEAD", path)
    assert head.status_code == 200
    assert head["Content-Disposition"] == got["Content-Disposition"]
    assert body_of(head) == b""


def test_a_head_of_a_page_larger_than_an_asgi_piece_sends_no_body_and_keeps_its_length(site_as_viewer):
    task = make_task()
    a = kernel_record(source="// a\n" + "int a;\n" * 20000, task=task, language="cpp")
    b = kernel_record(source="// b\n" + "int b;\n" * 20000, task=task, language="cpp")
    path = reverse("kernel_diff") + f"?a={a.pk}&b={b.pk}"
    got = site_as_viewer("GET", path)
    assert len(got.content) > 64 * 1024  # more than the ASGI handler's first piece
    head = site_as_viewer("HEAD", path)
    assert head.status_code == 200 and body_of(head) == b""
    assert int(head["Content-Length"]) == len(got.content)


def test_a_head_of_the_plotly_asset_sends_no_body(site_as_viewer):
    head = site_as_viewer("HEAD", reverse("plotly_js"))
    assert head.status_code == 200 and int(head["Content-Length"]) > 1_000_000
    assert body_of(head) == b""
