"""The figure-labels audit: every speed-up a page, export or chart shows says whether it was measured here or is
a claim, whether it is a quick-set figure or a full one, and whether it is inside the noise. Each test holds one
finding of the audit; every verdict comes in through the worker's store (or the trace import), pages through
their views."""

import html
import re

import pytest
from django.urls import reverse

from runs.models import Evaluation
from tests.dashboard.helpers import make_user
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import a_run, measured

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def shown(response) -> str:
    """A page as its reader sees its text: HTML entities unescaped."""
    return html.unescape(response.content.decode())


def text_of(markup: str) -> str:
    """Markup as its words: tags dropped, white space as one space."""
    return " ".join(re.sub(r"<[^>]+>", " ", markup).split())


def test_the_kernel_pages_verified_here_writes_a_figure_inside_the_noise_as_no_difference(viewer):
    """Finding 1: "Verified here" wrote the bare point (1.060× over naive · verified: full set, measured here)
    where the interval holds 1.0, which every other page writes "no difference (…)"."""
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    kernel = Evaluation.objects.get(run=run).kernel
    page = shown(viewer.get(reverse("kernel_detail", args=[kernel.pk])))
    row = text_of(re.search(r'<li class="verified-row">(.*?)</li>', page, re.S).group(1))
    assert "no difference (0.820–1.31×) over naive" in row
    assert "1.060×" not in row
