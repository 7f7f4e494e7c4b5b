"""Every write to the question bank's rows.

Two sources of entries: the file `bank.toml` (mirrored by `bank_sync`, which `manage.py load_bank` calls) and
reviewers adding their own from the dashboard (`bank_question_add`). Reviewer entries carry keys starting with
`reviewer-`, which the file may not use, so that a sync never takes a reviewer's entry for one removed from the
file. Nothing is ever deleted: asked questions link to their entry, and history must keep that link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from django.db import transaction
from django.utils.text import slugify

from questionbank.bank import (
    KEY_MAX_LENGTH,
    REVIEWER_KEY_PREFIX,
    BankEntry,
    entry_problems,
    entry_targets,
    targets_problems,
)
from questionbank.models import BankQuestion

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class BankServiceError(Exception):
    """A request that the bank's data does not allow; the message is meant for the user. The bank's own error
    (not `runs.services.ServiceError`): questionbank is the lower layer and imports nothing from `runs`."""


class BankQuestionInvalid(BankServiceError):
    """A reviewer's question that the bank cannot take; the message says why."""


@dataclass
class SyncReport:
    """What a sync changed, by key. Each key of the file (and each deactivated row) is in exactly one list."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    reactivated: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"created {len(self.created)}, updated {len(self.updated)}, reactivated {len(self.reactivated)}, "
            f"deactivated {len(self.deactivated)}, unchanged {len(self.unchanged)}"
        )


def _normalised(text: str) -> str:
    return " ".join(text.split())


def bank_sync(entries: list[BankEntry]) -> SyncReport:
    """Make the file's entries the bank's rows, all or nothing.

    New keys are created; changed ones updated; rows from the file whose key is no longer in it are
    deactivated (never deleted). Reviewer-added rows are left as they are. Running it twice changes nothing.
    """
    keys = [e.key for e in entries]
    if len(set(keys)) != len(keys):
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        raise BankServiceError(f"duplicate bank key(s): {', '.join(duplicates)}")
    reviewer_keys = [k for k in keys if k.startswith(REVIEWER_KEY_PREFIX)]
    if reviewer_keys:
        raise BankServiceError(
            f"keys starting with {REVIEWER_KEY_PREFIX!r} belong to the dashboard: {', '.join(reviewer_keys)}"
        )

    report = SyncReport()
    with transaction.atomic():
        rows = {row.key: row for row in BankQuestion.objects.select_for_update()}
        for entry in entries:
            wanted = {
                "text": entry.text,
                "category": entry.category,
                "triggers": list(entry.triggers),
                "active": entry.active,
                "targets": list(entry.targets),
            }
            row = rows.get(entry.key)
            if row is None:
                BankQuestion.objects.create(key=entry.key, **wanted)
                report.created.append(entry.key)
                continue
            differs = [name for name, value in wanted.items() if getattr(row, name) != value]
            if not differs:
                report.unchanged.append(entry.key)
                continue
            was_active = row.active
            for name in differs:
                setattr(row, name, wanted[name])
            row.save(update_fields=differs + ["updated_at"])
            if entry.active and not was_active:
                report.reactivated.append(entry.key)
            elif was_active and not entry.active:
                report.deactivated.append(entry.key)
            else:
                report.updated.append(entry.key)
        in_file = set(keys)
        for key, row in sorted(rows.items()):
            if key in in_file or key.startswith(REVIEWER_KEY_PREFIX) or not row.active:
                continue
            row.active = False
            row.save(update_fields=["active", "updated_at"])
            report.deactivated.append(key)
    return report


def _reviewer_key(text: str) -> str:
    """A readable key for a reviewer's question: the prefix and the first words of its text, made unique."""
    room = KEY_MAX_LENGTH - len(REVIEWER_KEY_PREFIX) - 4  # keep room for a "-NNN" suffix
    words = slugify(text)[:room].rstrip("-") or "question"
    base = REVIEWER_KEY_PREFIX + words
    key, n = base, 2
    while BankQuestion.objects.filter(key=key).exists():
        key, n = f"{base}-{n}", n + 1
    return key


def bank_question_add(
    text: str,
    category: str,
    triggers: list[str],
    added_by: User | AnonymousUser | None = None,
    *,
    targets: list[str] | tuple[str, ...] = (),
) -> BankQuestion:
    """A reviewer's own question, added to the bank from the dashboard, active at once.

    Checked as strictly as the file's entries (known category, known decision points, short non-empty text,
    known target kinds: the loader's own checks); `targets` empty is every target, as an entry without them is.
    The same text as an entry already in the bank is refused, naming that entry.
    """
    text = _normalised(text or "")
    triggers = list(triggers or [])
    problems = entry_problems("reviewer-new", text, category, triggers, label="the new question")
    # None is the loader's "not given" (every target); an empty list in the file is an error, here it is the form's
    # nothing ticked.
    problems += targets_problems(list(targets) or None, label="the new question")
    if problems:
        raise BankQuestionInvalid("; ".join(p.removeprefix("the new question: ") for p in problems))
    with transaction.atomic():
        same = next((row for row in BankQuestion.objects.all() if _normalised(row.text).lower() == text.lower()), None)
        if same is not None:
            state = "" if same.active else " (inactive)"
            raise BankQuestionInvalid(f"this question is already in the bank as {same.key}{state}")
        return BankQuestion.objects.create(
            key=_reviewer_key(text),
            text=text,
            category=category,
            triggers=triggers,
            targets=list(entry_targets(targets)),
            active=True,
            added_by=cast("User | None", added_by if getattr(added_by, "pk", None) else None),  # no AnonymousUser
        )


def bank_question_set_active(key: str, active: bool) -> BankQuestion:
    """Retire (or bring back) a reviewer's question. Entries from the file are retired by editing the file."""
    row = BankQuestion.objects.filter(key=key).first()
    if row is None:
        raise BankServiceError(f"no bank question {key!r}")
    if not key.startswith(REVIEWER_KEY_PREFIX):
        raise BankServiceError(f"{key} comes from bank.toml: retire it there (set active = false or remove it)")
    if row.active != active:
        row.active = active
        row.save(update_fields=["active", "updated_at"])
    return row
