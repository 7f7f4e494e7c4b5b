"""`manage.py load_bank`: the file mirrored into BankQuestion rows, idempotently, never deleting."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from questionbank.bank import load_bank
from questionbank.models import BankQuestion
from questionbank.services import bank_question_add
from runs.services import question_propose
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db

ENTRY = """
[[question]]
key = "{key}"
category = "{category}"
triggers = ["plateau"]
text = "{text}"
"""


def write_bank(path, *entries):
    path.write_text("".join(ENTRY.format(**e) for e in entries), encoding="utf-8")
    return path


def load(path) -> str:
    out = io.StringIO()
    call_command("load_bank", "--path", str(path), stdout=out)
    return out.getvalue()


A = {"key": "layer-a", "category": "layer", "text": "Where does the time go?"}
B = {"key": "limit-b", "category": "limit", "text": "What shows the limit?"}


def test_loading_twice_creates_once_and_then_reports_nothing_changed(tmp_path):
    bank = write_bank(tmp_path / "bank.toml", A, B)
    first = load(bank)
    assert "2 entries" in first and "created 2," in first and "layer-a, limit-b" in first
    stamps = dict(BankQuestion.objects.values_list("key", "updated_at"))
    second = load(bank)
    assert "created 0, updated 0, reactivated 0, deactivated 0, unchanged 2" in second
    assert dict(BankQuestion.objects.values_list("key", "updated_at")) == stamps  # not even re-saved


def test_an_entry_removed_from_the_file_is_deactivated_and_keeps_its_history(tmp_path):
    bank = write_bank(tmp_path / "bank.toml", A, B)
    load(bank)
    asked = question_propose(
        run=make_run(), text=B["text"], source="self", bank_entry=BankQuestion.objects.get(key="limit-b")
    )
    out = load(write_bank(bank, A))
    assert "deactivated: limit-b" in out
    row = BankQuestion.objects.get(key="limit-b")
    assert row.active is False
    asked.refresh_from_db()
    assert asked.bank_entry_id == row.pk
    # Put back into the file, it is the same row again, active.
    out = load(write_bank(bank, A, B))
    assert "reactivated: limit-b" in out and BankQuestion.objects.get(key="limit-b").active is True
    assert BankQuestion.objects.count() == 2


def test_a_changed_entry_is_updated_in_place(tmp_path):
    bank = write_bank(tmp_path / "bank.toml", A)
    load(bank)
    pk = BankQuestion.objects.get(key="layer-a").pk
    out = load(write_bank(bank, dict(A, text="Where does the time really go?", category="hypothesis")))
    assert "updated: layer-a" in out
    row = BankQuestion.objects.get(key="layer-a")
    assert (row.pk, row.text, row.category) == (pk, "Where does the time really go?", "hypothesis")


def test_an_entry_retired_in_the_file_is_deactivated(tmp_path):
    bank = write_bank(tmp_path / "bank.toml", A)
    load(bank)
    bank.write_text(bank.read_text() + "active = false\n")
    assert "deactivated: layer-a" in load(bank)
    assert BankQuestion.objects.get(key="layer-a").active is False


def test_a_bad_file_is_refused_whole_and_nothing_is_written(tmp_path):
    bank = write_bank(tmp_path / "bank.toml", A, B)
    load(bank)
    before = list(BankQuestion.objects.order_by("key").values_list("key", "text", "category", "active"))
    write_bank(
        bank,
        dict(A, text="A new text that must not land?"),
        dict(B, category="trivia"),
        {"key": "process-c", "category": "process", "text": "Next?"},
    )
    with pytest.raises(CommandError, match=r"entry 2 \(limit-b\): unknown category 'trivia'"):
        load(bank)
    assert list(BankQuestion.objects.order_by("key").values_list("key", "text", "category", "active")) == before


def test_a_duplicate_key_is_refused_naming_it(tmp_path):
    bank = write_bank(tmp_path / "bank.toml", A, dict(A, text="Again?"))
    with pytest.raises(CommandError, match="duplicate key 'layer-a'"):
        load(bank)
    assert BankQuestion.objects.count() == 0


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read the bank file"):
        load(tmp_path / "absent.toml")


def test_reviewers_questions_survive_a_load_of_the_file(tmp_path):
    mine = bank_question_add("What would a profiler say first?", "layer", ["plateau"], None)
    load(write_bank(tmp_path / "bank.toml", A))
    mine.refresh_from_db()
    assert mine.active is True


def test_the_default_file_loads_the_shipped_bank():
    out = io.StringIO()
    call_command("load_bank", stdout=out)
    assert BankQuestion.objects.filter(active=True).count() == len(load_bank()) >= 40


def test_bootstrap_loads_the_bank(monkeypatch):
    monkeypatch.setenv("KSEEK_ADMIN_PASSWORD", "correct-horse-battery")
    out = io.StringIO()
    call_command("bootstrap", stdout=out)
    assert "bootstrap: load_bank" in out.getvalue()
    assert BankQuestion.objects.count() == len(load_bank())


def test_an_entrys_targets_are_stored_updated_and_read_back(tmp_path):
    from questionbank.selectors import bank_entries

    bank = tmp_path / "bank.toml"
    bank.write_text(ENTRY.format(**A) + 'targets = ["gpu"]\n' + ENTRY.format(**B), encoding="utf-8")
    load(bank)
    assert dict(BankQuestion.objects.values_list("key", "targets")) == {"layer-a": ["gpu"], "limit-b": []}
    assert {e.key: e.targets for e in bank_entries()} == {"layer-a": ("gpu",), "limit-b": ()}
    assert [e.key for e in bank_entries(task_target="cpu")] == ["limit-b"]
    assert "unchanged 2" in load(bank)
    # Made for every target again: the row follows the file, in place.
    out = load(write_bank(bank, A, B))
    assert "updated: layer-a" in out and BankQuestion.objects.get(key="layer-a").targets == []
    assert [e.key for e in bank_entries(task_target="cpu")] == ["layer-a", "limit-b"]


def test_a_file_with_malformed_targets_is_refused_whole_by_the_command(tmp_path):
    bank = tmp_path / "bank.toml"
    bank.write_text(ENTRY.format(**A) + 'targets = ["gpu", "fpga"]\n' + ENTRY.format(**B), encoding="utf-8")
    with pytest.raises(CommandError, match=r"entry 1 \(layer-a\): unknown target\(s\) 'fpga' \(known: cpu, gpu\)"):
        load(bank)
    assert BankQuestion.objects.count() == 0


def test_the_shipped_bank_loads_with_its_targets():
    call_command("load_bank", stdout=io.StringIO())
    assert BankQuestion.objects.get(key="layer-grid-last-wave").targets == ["gpu"]
    assert BankQuestion.objects.get(key="layer-memory-reuse").targets == []
