"""The bank page counts a large gain only beyond the noise, writes each mean gain with its interval, and says
"noise unknown" where a verdict holds no interval, never counting it as a large gain."""

import json
import re

import pytest
from django.urls import reverse

from questionbank.services import bank_sync
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run, make_task
from tests.questionbank.test_selectors import ENTRIES, RunBuilder, naive

pytestmark = pytest.mark.django_db


def row(page: str, first_cell: str) -> list[str]:
    """The cells of the table row that starts with `first_cell`, as text."""
    cells = re.search(rf"<tr><td>{re.escape(first_cell)}</td>(.*?)</tr>", page, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", cells, re.S)]


def a_run(task, key, before, after, noise):
    builder = RunBuilder(make_run(task), noise=noise)
    builder.evaluate(builder.run.starting_kernel, "correct", naive(before))
    builder.ask(key, "approve")
    builder.evaluate("// faster", "correct", naive(after))


@pytest.fixture
def page(client):
    client.force_login(make_user("vera"))
    bank_sync(ENTRIES)
    task = make_task(goal_baseline="naive")
    a_run(task, "layer-reuse", 1.0, 1.5, 0.01)  # x1.5, far beyond 1% noise: a large gain
    a_run(task, "limit-evidence", 1.0, 1.25, 0.1)  # x1.25 in 10% noise either side: not a large gain
    a_run(task, "process-plan", 1.0, 2.0, None)  # x2.0 from verdicts without intervals: noise unknown
    return client.get(reverse("bank")).content.decode()


def test_a_gain_beyond_the_noise_is_a_large_gain_with_its_interval(page):
    # key, question, category, asked, mean gain, large gains, vetoed, active
    cells = row(page, "layer-reuse")
    assert cells[3] == "1.500× (1.47–1.53×)"  # 1.485 / 1.01 to 1.515 / 0.99, 3 significant digits
    assert cells[4] == "1 (1.00)"


def test_a_rise_of_1_25_inside_the_noise_is_not_a_large_gain(page):
    cells = row(page, "limit-evidence")
    assert cells[3] == "1.250× (1.02–1.53×)" and cells[4] == "0 (0.00)"


def test_a_gain_without_intervals_is_shown_as_noise_unknown_not_as_a_large_gain(page):
    cells = row(page, "process-plan")
    assert cells[3] == "2.000× (noise unknown)"
    assert cells[4] == "0, 1 noise unknown"  # no rate: none of its gains is known to be large or not
    categories = {name: row(page, name) for name in ("Move to another layer", "Reject a claimed limit")}
    assert all("noise unknown" not in " ".join(cells) for cells in categories.values())
    process = row(page, "Process")
    # category: asked, with a gain measured, mean gain, large gains, vetoed, runs
    assert process[2:4] == ["2.000× (noise unknown)", "0, 1 noise unknown"]


def test_the_chart_draws_each_mean_gain_with_its_interval_and_the_tables_words(page):
    chart = json.loads(re.search(r'id="bank-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    by_key = dict(zip(chart["questions"], zip(chart["question_interval"], chart["question_gain_text"], strict=True)))
    (low, high), words = by_key["layer-reuse"]
    assert low == pytest.approx(1.485 / 1.01) and high == pytest.approx(1.515 / 0.99)
    assert words == "1.500× (1.47–1.53×)"
    assert by_key["process-plan"] == ([None, None], "2.000× (noise unknown)")  # no error bar, and said so
    assert len(chart["category_interval"]) == len(chart["categories"]) == len(chart["category_gain_text"])
