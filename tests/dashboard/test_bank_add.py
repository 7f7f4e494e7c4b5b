"""A reviewer's own question from the bank page may name the kinds of target it is for, as a bank.toml entry's
`targets` does (questionbank/README.md): stored, shown on the page, and honoured when questions are offered."""

import re

import pytest
from django.urls import reverse

from questionbank.models import BankQuestion
from questionbank.selectors import bank_entries
from questionbank.services import BankQuestionInvalid, bank_question_add
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(client):
    client.force_login(make_user("rita", "reviewer"))
    return client


def add(client, text: str, targets: list[str]):
    return client.post(
        reverse("bank_add"), {"text": text, "category": "layer", "triggers": ["plateau"], "targets": targets}
    )


def row_of(page: str, key: str) -> str:
    return re.search(rf"<tr><td>{key}</td>(.*?)</tr>", page, re.S).group(1)


def offered_to(task_target: str) -> set[str]:
    return {entry.key for entry in bank_entries(task_target=task_target)}


def test_the_bank_page_offers_the_target_kinds_of_the_bank_file(reviewer):
    page = reviewer.get(reverse("bank")).content.decode()
    assert re.findall(r'name="targets" value="(\w+)"', page) == ["cpu", "gpu"]


def test_a_reviewers_gpu_only_question_is_shown_so_and_never_offered_to_a_cpu_task(reviewer):
    response = add(reviewer, "What does each warp own?", ["gpu"])
    assert response.status_code == 302
    question = BankQuestion.objects.get()
    assert question.targets == ["gpu"]
    assert "(gpu only)" in row_of(reviewer.get(reverse("bank")).content.decode(), question.key)
    assert offered_to("cuda-sm90") == {question.key} and offered_to("cpu") == set()


@pytest.mark.parametrize("targets", [[], ["gpu", "cpu"]])
def test_a_reviewers_question_with_no_target_or_every_target_ticked_is_for_every_target(reviewer, targets):
    assert add(reviewer, "Which data is fetched twice?", targets).status_code == 302
    question = BankQuestion.objects.get()
    assert question.targets == []
    assert "only)" not in row_of(reviewer.get(reverse("bank")).content.decode(), question.key)
    assert offered_to("cpu") == offered_to("cuda-sm90") == {question.key}


def test_a_target_the_bank_does_not_know_is_refused_on_the_page_and_stores_nothing(reviewer):
    response = add(reviewer, "What does each lane own?", ["tpu"])
    assert response.status_code == 400 and "tpu is not one of the available choices" in response.content.decode()
    assert not BankQuestion.objects.exists()


def test_the_service_refuses_targets_by_the_bank_files_own_rule():
    with pytest.raises(BankQuestionInvalid, match=r"unknown target\(s\) 'tpu' \(known: cpu, gpu\)"):
        bank_question_add("What does each lane own?", "layer", ["plateau"], targets=["tpu"])
    with pytest.raises(BankQuestionInvalid, match="a target is listed twice"):
        bank_question_add("What does each lane own?", "layer", ["plateau"], targets=["gpu", "gpu"])
    assert not BankQuestion.objects.exists()
