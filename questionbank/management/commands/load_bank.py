"""Mirror questionbank/bank.toml into the database: `make run` calls it (through bootstrap) at every start."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from questionbank.bank import DEFAULT_PATH, BankError, load_bank
from questionbank.services import BankServiceError, bank_sync


class Command(BaseCommand):
    help = (
        "Load the question bank file into the database, idempotently. Entries removed from the file are "
        "deactivated, never deleted. A file with any bad entry is refused whole and nothing is written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--path", default=str(DEFAULT_PATH), help=f"bank file (default: {DEFAULT_PATH})")

    def handle(self, *args: object, path: str, **options: object) -> None:
        try:
            entries = load_bank(path)
            report = bank_sync(entries)
        except (BankError, BankServiceError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"question bank: {len(entries)} entries in {path}; {report.summary()}")
        for label, keys in (
            ("created", report.created),
            ("updated", report.updated),
            ("reactivated", report.reactivated),
            ("deactivated", report.deactivated),
        ):
            if keys:
                self.stdout.write(f"  {label}: {', '.join(keys)}")
