"""A reviewer's own question added to the bank, and what the agent loop gets back from the bank."""

import pytest
from django.contrib.auth import get_user_model

from questionbank.bank import BankEntry
from questionbank.models import BankQuestion
from questionbank.selectors import bank_entries
from questionbank.services import (
    BankQuestionInvalid,
    BankServiceError,
    bank_question_add,
    bank_question_set_active,
    bank_sync,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer():
    return get_user_model().objects.create_user("alice", password="x" * 12)


def test_a_reviewers_question_joins_the_bank_active_with_its_author(reviewer):
    row = bank_question_add("  What does the  profiler say first?  ", "layer", ["plateau", "start"], reviewer)
    assert row.key == "reviewer-what-does-the-profiler-say-first"
    assert (row.text, row.category, row.triggers, row.active, row.added_by) == (
        "What does the profiler say first?",
        "layer",
        ["plateau", "start"],
        True,
        reviewer,
    )
    assert BankEntry(row.key, row.text, "layer", ("plateau", "start")) in bank_entries()


def test_reviewers_questions_with_the_same_first_words_get_different_keys(reviewer):
    long_start = "What would change if the kernel were designed for the whole chip at once and not block by block"
    first = bank_question_add(long_start + ", first?", "layer", ["plateau"], reviewer)
    second = bank_question_add(long_start + ", second?", "layer", ["plateau"], reviewer)
    assert first.key != second.key and len(second.key) <= 80 and second.key.startswith("reviewer-")


@pytest.mark.parametrize(
    "text, category, triggers, message",
    [
        ("Why?", "trivia", ["plateau"], "unknown category 'trivia'"),
        ("Why?", "layer", ["lunch"], "unknown trigger(s) 'lunch'"),
        ("Why?", "layer", [], "triggers must be a non-empty list"),
        ("   ", "layer", ["plateau"], "text is empty"),
        ("y" * 300 + "?", "layer", ["plateau"], "text is 301 characters"),
    ],
)
def test_a_bad_reviewer_question_is_refused_with_the_reason(reviewer, text, category, triggers, message):
    with pytest.raises(BankQuestionInvalid) as caught:
        bank_question_add(text, category, triggers, reviewer)
    assert message in str(caught.value)
    assert BankQuestion.objects.count() == 0


def test_a_question_already_in_the_bank_is_refused_naming_its_entry(reviewer):
    bank_sync([BankEntry("layer-time", "Where does the time go?", "layer", ("plateau",))])
    with pytest.raises(BankQuestionInvalid, match="already in the bank as layer-time"):
        bank_question_add("where does the time   go?", "limit", ["plateau"], reviewer)


def test_a_reviewers_question_can_be_retired_but_a_file_entry_only_in_the_file(reviewer):
    row = bank_question_add("What would you measure first?", "process", ["start"], reviewer)
    assert bank_question_set_active(row.key, False).active is False
    assert row.key not in [e.key for e in bank_entries()]
    bank_sync([BankEntry("layer-time", "Where does the time go?", "layer", ("plateau",))])
    with pytest.raises(BankServiceError, match="comes from bank.toml"):
        bank_question_set_active("layer-time", False)
    with pytest.raises(BankServiceError, match="no bank question"):
        bank_question_set_active("reviewer-nothing", False)


def test_sync_refuses_reviewer_keys_and_duplicates():
    with pytest.raises(BankServiceError, match="belong to the dashboard"):
        bank_sync([BankEntry("reviewer-x", "X?", "layer", ("plateau",))])
    with pytest.raises(BankServiceError, match="duplicate bank key"):
        bank_sync(
            [BankEntry("layer-x", "X?", "layer", ("plateau",)), BankEntry("layer-x", "Y?", "layer", ("plateau",))]
        )
