"""Every read of the question bank's own rows.

The evidence of which questions help is read from runs' rows, so it lives above this app, in
`runs.selectors_bank` (questionbank is the lower layer: it imports nothing from `runs`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db.models import QuerySet

from questionbank import effectiveness as eff
from questionbank.bank import BankEntry
from questionbank.models import BankQuestion


def large_gain_ratio() -> float:
    """The ratio of best verified speedups (after / before) from which a gain counts as large (a setting)."""
    return float(getattr(settings, "KSEEK_LARGE_GAIN_RATIO", eff.DEFAULT_LARGE_GAIN_RATIO))


# ------------------------------------------------------------------------------------------------ the bank


def bank_questions(*, category: str | None = None, active: bool | None = None) -> QuerySet[BankQuestion]:
    rows = BankQuestion.objects.select_related("added_by")
    if category:
        rows = rows.filter(category=category)
    if active is not None:
        rows = rows.filter(active=active)
    return rows.order_by("key")


def bank_entries(*, active_only: bool = True, task_target: str | None = None) -> list[BankEntry]:
    """The bank as the agent loop uses it (file entries and reviewers' own), in key order; with `task_target`
    (the harness's name: "cpu", "cuda-sm90"), only the entries that apply to a task of it."""
    entries = (
        BankEntry(
            key=row.key,
            text=row.text,
            category=row.category,
            triggers=tuple(row.triggers),
            active=row.active,
            targets=tuple(row.targets),
        )
        for row in bank_questions(active=True if active_only else None)
    )
    return [entry for entry in entries if entry.applies_to(task_target)]


def bank_texts_by_key(keys: Iterable[str]) -> dict[str, str]:
    """The text of each of `keys` that is a bank question's key (active or not: a trace written before an entry
    was retired still names it), as {key: text}; words that are no key are left out."""
    wanted = list(keys)
    if not wanted:
        return {}
    return dict(BankQuestion.objects.filter(key__in=wanted).values_list("key", "text"))
