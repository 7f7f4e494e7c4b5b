"""The bank page can leave the demo, replayed and imported runs out of its figures."""

import re

import pytest
from django.urls import reverse

from questionbank.services import bank_sync
from runs.models import Question, Run
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run, make_task
from tests.questionbank.test_selectors import ENTRIES, RunBuilder, naive

pytestmark = pytest.mark.django_db


def chart(html: str) -> str:
    return re.search(r'id="bank-data"[^>]*>(.*?)</script>', html, re.S).group(1)


def test_the_bank_page_leaves_out_the_kinds_of_run_ticked(client):
    client.force_login(make_user("vera"))
    bank_sync(ENTRIES)
    task = make_task(goal_baseline="naive")
    replayed = RunBuilder(make_run(task))  # make_run's model is a replay
    replayed.evaluate(replayed.run.starting_kernel, "correct", naive(1.0))
    replayed.ask("layer-reuse", "approve")
    replayed.evaluate("// k1", "correct", naive(1.6))
    assert Question.objects.count() == 1 and Run.objects.get().model.startswith("replay:")
    page = client.get(reverse("bank")).content.decode()
    assert re.search(r'name="exclude" value="replay"(?! checked)', page)
    left_out = client.get(reverse("bank") + "?exclude=replay&exclude=nonsense").content.decode()
    assert 'name="exclude" value="replay" checked' in left_out
    assert '"layer-reuse"' in chart(page) and '"layer-reuse"' not in chart(left_out)


def test_the_bank_page_names_the_targets_of_a_question_not_made_for_every_target(client):
    from questionbank.bank import BankEntry

    client.force_login(make_user("vera"))
    bank_sync(
        [
            BankEntry("layer-reuse", "Which data is fetched twice?", "layer", ("plateau",)),
            BankEntry("layer-warps", "What does each warp own?", "layer", ("plateau",), targets=("gpu",)),
        ]
    )
    page = client.get(reverse("bank")).content.decode()
    row = {
        key: re.search(rf"<tr><td>{key}</td>(.*?)</tr>", page, re.S).group(1) for key in ("layer-reuse", "layer-warps")
    }
    assert "(gpu only)" in row["layer-warps"]
    assert "only)" not in row["layer-reuse"]
