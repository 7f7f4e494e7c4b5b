"""Static assets: plotly.js sent compressed to a browser that takes gzip, and a favicon."""

import gzip

import pytest
from django.urls import reverse

from runs.views_assets import PLOTLY_JS
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.parametrize("offered", ["gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "*"])
def test_plotly_is_sent_gzip_compressed_to_a_browser_that_takes_gzip(client, offered):
    response = client.get(reverse("plotly_js"), headers={"accept-encoding": offered})
    assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in response["Vary"] and "max-age=86400" in response["Cache-Control"]
    compressed = body(response)
    assert len(compressed) < PLOTLY_JS.stat().st_size / 3  # 4.8 MB -> about 1.4 MB
    assert gzip.decompress(compressed) == PLOTLY_JS.read_bytes()


def test_plotly_is_sent_as_it_is_to_a_client_that_takes_no_gzip(client):
    for offered in (None, "identity", "gzip;q=0, br", "br"):
        headers = {"accept-encoding": offered} if offered else {}
        response = client.get(reverse("plotly_js"), headers=headers)
        assert response.status_code == 200 and not response.has_header("Content-Encoding"), offered
        assert body(response) == PLOTLY_JS.read_bytes()


def test_every_page_names_a_favicon_that_is_served(client):
    client.force_login(make_user("vera"))
    html = client.get(reverse("home")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert client.get("/favicon.ico")["Location"] == "/static/favicon.svg"
