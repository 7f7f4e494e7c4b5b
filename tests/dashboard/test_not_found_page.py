"""A page that does not exist says so inside the site, with why where the page knows it and the ways back
(templates/404.html): before, it was Django's bare "Not Found" with no link anywhere."""

import pytest
from django.urls import reverse

from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/kernels/99999999/", ": no such kernel."),
        ("/evaluations/99999999/", ": no such evaluation."),
        ("/tasks/no_such_task/", ": no task named &#x27;no_such_task&#x27;."),
        ("/kernels/softmax-rows-sm90/", "."),  # no URL matches: no reason beyond the path
    ],
)
def test_a_missing_page_says_what_is_missing_and_links_back_into_the_site(viewer, path, reason):
    response = viewer.get(path)
    assert response.status_code == 404
    page = response.content.decode()
    assert f"Nothing here is at <code>{path}</code>{reason}" in page
    assert "Resolver404" not in page
    for name in ("home", "kernels", "tasks"):
        assert f'href="{reverse(name)}"' in page


def test_a_missing_page_renders_for_someone_not_signed_in(client):
    response = client.get("/no/such/page/")
    assert (
        response.status_code == 404 and "Nothing here is at <code>/no/such/page/</code>." in response.content.decode()
    )
