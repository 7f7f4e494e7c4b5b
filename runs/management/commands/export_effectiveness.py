"""Export the question-effectiveness figures as JSON or CSV, for analysis outside the dashboard.

A command of `runs`, not of the bank: the figures are read from runs' rows (runs.selectors_bank)."""

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from questionbank import effectiveness
from questionbank.selectors import large_gain_ratio
from runs import selectors_bank as selectors
from runs.csv_cells import spreadsheet_csv

TABLES = {
    "questions": selectors.effectiveness_by_question,
    "categories": selectors.effectiveness_by_category,
    "sources": selectors.effectiveness_by_source,
    "asked": lambda: [a.as_dict() for a in selectors.attributions()],
}
# A large gain is one beyond the noise; `large_gain_unknown` counts those whose noise is unknown (neither large nor
# not), and the rate is over the others (questionbank.effectiveness). Per asked question, `large_gain` is then
# empty (JSON null) and `large_gain_label` says "noise unknown".
_FIGURES = [
    "asked",
    "attributed",
    "mean_gain",
    "mean_gain_low",
    "mean_gain_high",
    "large_gains",
    "large_gain_unknown",
    "large_gain_rate",
    "runs",
    "vetoed",
]
# Column names, so that an empty table still writes its header.
COLUMNS = {
    "questions": ["key", "text", "category", "active", "added_by", *_FIGURES],
    "categories": ["category", "label", *_FIGURES],
    "sources": ["source", *_FIGURES],
    "asked": [f.name for f in dataclasses.fields(effectiveness.Attribution)],
}


class Command(BaseCommand):
    help = (
        "Write the question-effectiveness figures: per bank question, per category, per source, and per asked "
        "question (best verified speedup before and after it, gain, each with its 95% interval, and whether the "
        "gain is large beyond the noise, or its noise unknown). JSON holds every table; CSV one."
    )

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument(
            "--table",
            choices=sorted(TABLES),
            default=None,
            help="the table to write (CSV: default questions; JSON: default all of them)",
        )
        parser.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")

    def handle(self, *args, format, table, output, **options):
        if format == "csv":
            name = table or "questions"
            text = self._csv(TABLES[name](), COLUMNS[name])
        else:
            names = [table] if table else sorted(TABLES)
            document = {
                "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "large_gain_ratio": large_gain_ratio(),
                **{name: TABLES[name]() for name in names},
            }
            text = json.dumps(document, indent=2, default=str) + "\n"
        if output == "-":
            self.stdout.write(text, ending="")
            return
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        self.stderr.write(f"wrote {output}")

    @staticmethod
    def _csv(rows: list[dict], columns: list[str]) -> str:
        return spreadsheet_csv(rows, columns, lineterminator="\n")
