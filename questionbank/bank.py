"""The question bank as plain data: read and check `bank.toml`. No Django here.

The agent loop runs on GPU hosts without Django and reads the bank through this module; the dashboard mirrors
the same entries into `BankQuestion` rows (see `questionbank.services.bank_sync`). Both sides therefore share
one vocabulary, kept here, and a test checks it against `questionbank.models`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

DECISION_POINTS: tuple[str, ...] = (
    "start",
    "stopped-short",
    "claimed-limit",
    "plateau",
    "failure-streak",
    "regression",
)
CATEGORIES: tuple[str, ...] = ("layer", "limit", "hypothesis", "process", "information")

DEFAULT_PATH = Path(__file__).resolve().parent / "bank.toml"

# Keys become slugs in the database (SlugField, max_length=80) and are named by the model in its answer, so they
# are lower-case words joined by hyphens: easy to type back and unambiguous to find in free text.
KEY_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
KEY_MAX_LENGTH = 80
# A question that needs more than this is supplying information rather than giving direction.
TEXT_MAX_LENGTH = 240
# Questions a reviewer adds from the dashboard get keys with this prefix. The file may not use it, so that
# loading the file never mistakes a reviewer's question for an entry removed from the file.
REVIEWER_KEY_PREFIX = "reviewer-"

_ENTRY_FIELDS = {"key", "text", "category", "triggers", "active"}
# A key as free text names it (a trace's note, "... (limit-baseline-reasons)"): two or more words joined by
# hyphens, not inside a longer hyphenated or underscored word. A one-word key is not looked for: the same word in
# a sentence would be taken for it.
_KEY_IN_TEXT = re.compile(r"(?<![\w-])[a-z0-9]+(?:-[a-z0-9]+)+(?![\w-])")


class BankError(ValueError):
    """The bank file (or an entry) is not acceptable. `problems` lists every problem found, each naming its entry."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = list(problems)
        where = f" in {source}" if source else ""
        super().__init__(
            f"question bank{where} refused ({len(self.problems)} problem(s)):\n  " + "\n  ".join(self.problems)
        )


@dataclass(frozen=True)
class BankEntry:
    key: str
    text: str
    category: str
    triggers: tuple[str, ...]
    active: bool = True

    def suits(self, decision_point: str) -> bool:
        return decision_point in self.triggers


def entry_problems(key: object, text: object, category: object, triggers: object, *, label: str) -> list[str]:
    """What is wrong with one entry's fields (empty when nothing is). `label` names the entry in each message."""
    problems = []
    if not isinstance(key, str) or not key:
        problems.append(f"{label}: needs a key (a non-empty string)")
    elif len(key) > KEY_MAX_LENGTH or not KEY_PATTERN.match(key):
        problems.append(
            f"{label}: key {key!r} must be lower-case words joined by '-', at most {KEY_MAX_LENGTH} characters"
        )
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{label}: text is empty")
    elif len(text.strip()) > TEXT_MAX_LENGTH:
        problems.append(f"{label}: text is {len(text.strip())} characters; a question is at most {TEXT_MAX_LENGTH}")
    if category not in CATEGORIES:
        problems.append(f"{label}: unknown category {category!r} (known: {', '.join(CATEGORIES)})")
    if not isinstance(triggers, (list, tuple)) or not triggers:
        problems.append(f"{label}: triggers must be a non-empty list of decision points")
    else:
        unknown = [t for t in triggers if t not in DECISION_POINTS]
        if unknown:
            problems.append(
                f"{label}: unknown trigger(s) {', '.join(map(repr, unknown))} (known: {', '.join(DECISION_POINTS)})"
            )
        if len(set(map(str, triggers))) != len(triggers):
            problems.append(f"{label}: a trigger is listed twice")
    return problems


def parse_bank(text: str, source: str = "") -> list[BankEntry]:
    """Entries from the TOML text of a bank file, in file order. Raises BankError listing every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BankError([f"not valid TOML: {exc}"], source) from None
    unknown_top = set(data) - {"question"}
    problems = (
        [f"unknown top-level table(s): {', '.join(sorted(unknown_top))} (entries are [[question]])"]
        if unknown_top
        else []
    )
    raw_entries = data.get("question", [])
    if not isinstance(raw_entries, list):
        raise BankError(["'question' must be an array of tables: write each entry as [[question]]"], source)

    entries: list[BankEntry] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(raw_entries, start=1):
        key = raw.get("key")
        label = f"entry {number} ({key})" if isinstance(key, str) and key else f"entry {number}"
        extra = set(raw) - _ENTRY_FIELDS
        if extra:
            problems.append(
                f"{label}: unknown field(s) {', '.join(sorted(extra))} (known: {', '.join(sorted(_ENTRY_FIELDS))})"
            )
        found = entry_problems(key, raw.get("text"), raw.get("category"), raw.get("triggers"), label=label)
        if isinstance(key, str) and key.startswith(REVIEWER_KEY_PREFIX):
            found.append(
                f"{label}: keys starting with {REVIEWER_KEY_PREFIX!r} are kept for questions added from the dashboard"
            )
        active = raw.get("active", True)
        if not isinstance(active, bool):
            found.append(f"{label}: active must be true or false")
        if isinstance(key, str) and key in seen:
            found.append(f"{label}: duplicate key {key!r} (first used by entry {seen[key]})")
        elif isinstance(key, str):
            seen[key] = number
        problems.extend(found)
        if not found:
            entries.append(
                BankEntry(
                    key=key,
                    text=" ".join(raw["text"].split()),
                    category=raw["category"],
                    triggers=tuple(raw["triggers"]),
                    active=active,
                )
            )
    if problems:
        raise BankError(problems, source)
    return entries


def load_bank(path: str | Path | None = None) -> list[BankEntry]:
    """The entries of the bank file at `path` (default: questionbank/bank.toml), checked. Raises BankError."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BankError([f"cannot read the bank file: {exc.strerror or exc}"], str(path)) from None
    return parse_bank(text, source=str(path))


def keys_named_in(text: str) -> list[str]:
    """The words of `text` that could be bank keys, each once, in the order they first appear; which of them are
    keys is for the bank's rows (or entries) to say."""
    return list(dict.fromkeys(word for word in _KEY_IN_TEXT.findall(text or "") if len(word) <= KEY_MAX_LENGTH))
