"""Reviewer audit finding 7: the bank page's "Add a question" said one limit and the bank another. Its text box
took up to 1,000 characters (its maxlength, and the form's refusal: "at most 1000 characters"), while the bank
holds a question of at most 240 (questionbank.bank.TEXT_MAX_LENGTH, the file's rule), so 241 to 1,000 characters
were typed and then refused, and over 1,000 were refused naming the wrong limit. Now the page, the form and the
bank agree on 240."""

import html

import pytest
from django.urls import reverse

from questionbank.bank import TEXT_MAX_LENGTH
from questionbank.models import BankQuestion
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(client):
    client.force_login(make_user("rita", "reviewer"))
    return client


def test_the_bank_pages_text_box_holds_the_banks_limit_and_says_it(reviewer):
    page = reviewer.get(reverse("bank")).content.decode()
    assert 'maxlength="240"' in page and TEXT_MAX_LENGTH == 240
    assert "at most 240 characters" in page


@pytest.mark.parametrize("length", [241, 1_001])
def test_a_question_over_the_banks_limit_is_refused_naming_that_limit(reviewer, length):
    text = "Why " + "x" * (length - 5) + "?"
    response = reviewer.post(reverse("bank_add"), {"text": text, "category": "layer", "triggers": ["plateau"]})
    assert response.status_code == 400 and not BankQuestion.objects.filter(key__startswith="reviewer-").exists()
    assert f"Ensure this value has at most 240 characters (it has {length})." in html.unescape(
        response.content.decode()
    )


def test_a_question_of_the_banks_limit_is_added(reviewer):
    text = "Why " + "x" * (TEXT_MAX_LENGTH - 5) + "?"
    response = reviewer.post(reverse("bank_add"), {"text": text, "category": "layer", "triggers": ["plateau"]})
    assert response.status_code == 302 and BankQuestion.objects.filter(text=text).exists()
