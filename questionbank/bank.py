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
# What an entry's `targets` may name: the kinds of machine a task runs on, not the harness's target names
# (gpu_harness.taskspec.TARGETS), so that a new CUDA target (another architecture) needs no edit of the bank.
TARGET_KINDS: tuple[str, ...] = ("cpu", "gpu")
# The harness's target names of the CUDA targets all start with this ("cuda-sm90"): each is a "gpu" target.
_CUDA_TARGET_PREFIX = "cuda"

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

_ENTRY_FIELDS = {"key", "text", "category", "triggers", "active", "targets"}
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


def target_kind(task_target: str | None) -> str | None:
    """The kind of `task_target` (a task's target as the harness names it: "cpu", "cuda-sm90") that an entry's
    `targets` names: "cpu" or "gpu"; None for a target that is unknown or not given."""
    if task_target == "cpu":
        return "cpu"
    if task_target and task_target.startswith(_CUDA_TARGET_PREFIX):
        return "gpu"
    return None


@dataclass(frozen=True)
class BankEntry:
    key: str
    text: str
    category: str
    triggers: tuple[str, ...]
    active: bool = True
    # The kinds of target (TARGET_KINDS) the question makes sense on; empty: every target.
    targets: tuple[str, ...] = ()

    def suits(self, decision_point: str) -> bool:
        return decision_point in self.triggers

    def applies_to(self, task_target: str | None) -> bool:
        """Whether the question may be asked on a task of `task_target` (the harness's name: "cuda-sm90").
        A target this bank cannot place (None, an unknown name) keeps every entry: leaving a question out is
        the choice that needs a reason."""
        kind = target_kind(task_target)
        return not self.targets or kind is None or kind in self.targets


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


def targets_problems(targets: object, *, label: str) -> list[str]:
    """What is wrong with an entry's `targets` (None: not given, every target). `label` names the entry."""
    if targets is None:
        return []
    if not isinstance(targets, (list, tuple)) or not targets:
        return [
            f"{label}: targets must be a non-empty list of {', '.join(map(repr, TARGET_KINDS))} "
            f"(leave it out for every target), not {targets!r}"
        ]
    unknown = [t for t in targets if t not in TARGET_KINDS]
    if unknown:
        return [f"{label}: unknown target(s) {', '.join(map(repr, unknown))} (known: {', '.join(TARGET_KINDS)})"]
    if len(set(targets)) != len(targets):
        return [f"{label}: a target is listed twice"]
    return []


def entry_targets(targets: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """An entry's checked `targets` as BankEntry holds them: in TARGET_KINDS' order, and empty when they name
    every kind, so that "every target" is written one way only (the rows, the wire, the bank's page)."""
    named = tuple(kind for kind in TARGET_KINDS if kind in (targets or ()))
    return () if named == TARGET_KINDS else named


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
        found.extend(targets_problems(raw.get("targets"), label=label))
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
                    targets=entry_targets(raw.get("targets")),
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
