"""CSV cells a spreadsheet opens as text. A text cell that starts with =, +, -, @, a tab or a carriage return is
read as a formula by Excel, LibreOffice and Google Sheets (CSV injection): a problem file, a model or a question
named so would run in the reader's spreadsheet. Such a text is written with a leading single quote, which the
spreadsheet shows as plain text. Numbers are left as numbers (a negative number is data, not a formula)."""

import csv
import io
from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value):
    """The value as a CSV cell: None as empty, a formula-like text quoted, anything else as it is."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_row(row: dict, fields: list[str]) -> dict:
    return {field: spreadsheet_cell(row.get(field)) for field in fields}


def spreadsheet_csv(rows: Iterable[dict], fields: list[str], *, lineterminator: str = "\r\n") -> str:
    """The rows as CSV text: a header of `fields`, then each row's cells (spreadsheet_row)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator=lineterminator)
    writer.writeheader()
    writer.writerows(spreadsheet_row(row, fields) for row in rows)
    return out.getvalue()
