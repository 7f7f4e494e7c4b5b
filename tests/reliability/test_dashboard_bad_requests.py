"""Requests a client gets wrong, through a real daphne (issue 34, items 10 and 12): an id out of the database's
range or written in other digits than ASCII is a 400 or 404 with the reason, never a 500; a page answers a method
it does not serve with 405 and the methods it does; a refused form is a 400."""

import http.client
import re
import urllib.parse

import pytest

from tests.reliability.live import LiveSite

pytestmark = pytest.mark.timeout(300)

BEYOND_INT64 = "99999999999999999999"


class Client:
    """A signed-in session on the live site (a new user `username` with `role`) over plain HTTP, any method."""

    def __init__(self, site: LiveSite, port: int, username: str = "olga", role: str = "operator"):
        self.port = port
        self.cookie = f"sessionid={site.session_for(username, role)}"
        status, headers, _ = self.request("GET", "/")
        assert status == 200
        self.csrf = re.search(r"csrftoken=([^;]+)", headers["Set-Cookie"]).group(1)
        self.cookie += f"; csrftoken={self.csrf}"

    def request(
        self, method: str, path: str, fields: dict | None = None, *, accept_json: bool = False
    ) -> tuple[int, dict, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        # The CSRF token rides along on every request (as the pages' scripts send it), so that a PUT or DELETE is
        # judged by the view, not refused by the CSRF check first.
        headers = {"Cookie": self.cookie, "X-CSRFToken": getattr(self, "csrf", "")}
        if accept_json:  # as the pages' scripts ask: a JSON answer, not a redirect
            headers["Accept"] = "application/json"
        body = None
        if fields is not None:
            body = urllib.parse.urlencode({"csrfmiddlewaretoken": self.csrf, **fields})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read().decode()
        finally:
            connection.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    site = LiveSite(tmp_path_factory.mktemp("bad-requests")).setup()
    try:
        port = site.start_server()
        yield site, port, Client(site, port)
    finally:
        site.close()


def test_an_id_out_of_range_or_in_other_digits_in_a_query_string_is_a_400_or_404_with_the_reason(live):
    site, port, client = live
    run_id = site.queue_demo_run()
    answers = {
        f"/runs/compare/?runs={BEYOND_INT64},{run_id}": (404, f"no such run: #{BEYOND_INT64}"),
        f"/runs/compare/?runs={run_id},{BEYOND_INT64}&format=json": (404, f"no such run: #{BEYOND_INT64}"),
        f"/runs/compare/?runs=%C2%B2,{run_id}": (400, "run ids are numbers: ² is not"),
        f"/runs/compare/?runs=%D9%A7,{run_id}": (400, "run ids are numbers: ٧ is not"),
        f"/runs/compare/?study={BEYOND_INT64}": (404, f"no study {BEYOND_INT64} with runs"),
        "/runs/compare/?study=%C2%B2": (404, "no study ² with runs"),
        f"/runs/{run_id}/fork/?seq=%C2%B2": (400, "name the step to fork at"),
        f"/runs/{run_id}/fork/?seq={BEYOND_INT64}": (400, "name the step to fork at"),
        f"/kernels/diff/?a={BEYOND_INT64}&b=1": (404, ""),
        "/kernels/diff/?a=%C2%B2&b=1": (400, "pick two kernels by id"),
        f"/runs/{run_id}/steps/?after={BEYOND_INT64}": (400, "after must be a whole number"),
    }
    # The runs list's search takes a run's number ("#7") among other words: another digit is a word like any.
    answers[f"/?q=%23{BEYOND_INT64}"] = (200, "No runs match")
    answers["/?q=%C2%B2"] = (200, "No runs match")
    answers["/runs/rows/?q=%C2%B2"] = (200, "")
    for path, (status, reason) in answers.items():
        got, _, body = client.request("GET", path)
        assert (got, reason in body) == (status, True), (path, got, body[-300:])
    assert "Traceback" not in site.server_log(port)


def test_a_read_only_page_answers_405_with_the_methods_it_serves(live):
    site, port, client = live
    for path in ["/", "/runs/1/", "/runs/compare/?runs=1,2", "/kernels/", "/review/", "/tasks/", "/bank/"]:
        for method in ["PUT", "DELETE", "POST", "TRACE", "PATCH"]:
            status, headers, _ = client.request(method, path, {} if method == "POST" else None)
            assert (status, headers.get("Allow")) == (405, "GET, HEAD"), (method, path)
        assert client.request("GET", path)[0] != 405 and client.request("HEAD", path)[0] != 405
    status, headers, _ = client.request("PUT", "/workers/")
    assert (status, headers.get("Allow")) == (405, "GET, HEAD, POST")


def test_a_refused_worker_form_answers_400_with_its_error_and_makes_no_host(live):
    site, port, client = live
    status, _, page = client.request("POST", "/workers/", {"name": "not a slug!", "gpus": ""})
    assert status == 400 and "Enter a valid “slug”" in page
    status, _, page = client.request("POST", "/workers/", {"name": "gpu-a", "gpus": "H200"})
    assert status == 200 and 'id="new-token"' in page
    status, _, page = client.request("POST", "/workers/", {"name": "gpu-a", "gpus": "H200"})
    assert status == 400 and "a host of this name exists" in page
    assert site.query("SELECT name FROM runs_workerhost") == [("gpu-a",)]
