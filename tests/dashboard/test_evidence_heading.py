"""The kernel page's Evidence heading writes the goal baseline's figure with its interval, "no difference" where
that holds 1.0 (audit finding 13): at 390 px the spread table scrolls sideways, the heading does not."""

import re

import pytest
from django.urls import reverse

from runs.models import Evaluation
from tests.dashboard.helpers import make_user
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import a_run, measured

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "speedup,low,high,shown",
    [
        (1.06, 0.82, 1.31, "speed-up over naive: no difference (0.820–1.31×)"),
        (2.4, 2.2, 2.6, "speed-up over naive: 2.400× (2.20–2.60×)"),
    ],
)
def test_the_evidence_heading_writes_the_goal_baselines_figure_with_its_interval(client, speedup, low, high, shown):
    client.force_login(make_user("vera"))
    run = a_run()
    record(run, 0, "evaluation", measured(speedup, low, high))
    kernel_id = Evaluation.objects.get(run=run).kernel_id
    page = client.get(reverse("kernel_detail", args=[kernel_id])).content.decode()
    heading = re.search(r'<h2 id="lead-evaluation">(.*?)</h2>', page, re.S)
    assert heading, "the kernel page has its Evidence heading"
    figure = re.search(r'<span class="evidence-headline" id="evidence-headline">([^<]*)</span>', heading[1])
    assert figure and figure[1] == shown
