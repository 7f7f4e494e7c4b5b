"""Where a run's question bank and its effectiveness figures come from.

- A dashboard run: the `assign` message carries `bank` (the active entries, reviewers' own included) and
  `question_stats` (what happened after each question in earlier runs). Both are optional (protocol v1): without
  them the worker uses the bank file and no figures.
- A standalone run: the bank file (`questionbank/bank.toml`, or `--bank FILE`) and, with `--question-stats FILE`,
  figures from the JSON that `manage.py export_effectiveness` writes or the simpler shape of `question_stats`.

Figures are shown to the model in the selection prompt (questionbank.selection), so that the bank learns which
questions help. Anything malformed from outside is dropped entry by entry with a stated reason, never a crash.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from agentloop.errors import ConfigError
from questionbank.bank import BankEntry, entry_problems, entry_targets, targets_problems


def bank_from_wire(items: object) -> tuple[list[BankEntry], list[str]]:
    """BankEntry values from the `bank` list of an assignment, and the problems of the entries left out.

    Each item is {"key", "text", "category", "triggers", "active"?, "targets"?} (`targets` absent or null: every
    target). Reviewers' keys (`reviewer-…`) are
    accepted here: the file refuses them only so that a file sync never mistakes one for a removed entry.
    """
    if not isinstance(items, list):
        return [], [f"bank must be a list of entries, not {type(items).__name__}"]
    entries: list[BankEntry] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.append(f"bank entry {number}: not an object")
            continue
        key = item.get("key")
        label = f"bank entry {number} ({key})" if isinstance(key, str) and key else f"bank entry {number}"
        found = entry_problems(key, item.get("text"), item.get("category"), item.get("triggers"), label=label)
        active = item.get("active", True)
        if not isinstance(active, bool):
            found.append(f"{label}: active must be true or false")
        found.extend(targets_problems(item.get("targets"), label=label))
        if not found and key in seen:
            found.append(f"{label}: duplicate key")
        if found or not isinstance(key, str):  # (entry_problems found a key that is not a string)
            problems.extend(found)
            continue
        seen.add(key)
        entries.append(
            BankEntry(
                key=key,
                text=" ".join(item["text"].split()),
                category=item["category"],
                triggers=tuple(item["triggers"]),
                active=active,
                targets=entry_targets(item.get("targets")),
            )
        )
    return entries, problems


def _number(value: object, *, minimum: float, maximum: float | None = None) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= minimum
        and (maximum is None or value <= maximum)
    )


def _stat_problem(stat: object) -> str | None:
    if not isinstance(stat, dict):
        return "not an object"
    asked = stat.get("asked", 0)
    if not (_number(asked, minimum=0) and float(asked).is_integer()):
        return f"asked must be a whole number >= 0, not {asked!r}"
    gain = stat.get("mean_gain")
    if gain is not None and not _number(gain, minimum=0):
        return f"mean_gain must be a number >= 0 or null, not {gain!r}"
    rate = stat.get("large_gain_rate")
    if rate is not None and not _number(rate, minimum=0, maximum=1):
        return f"large_gain_rate must be a number from 0 to 1 or null, not {rate!r}"
    return None


def stats_from_wire(data: object) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per-key figures, {key: {"asked", "mean_gain", "large_gain_rate"}}, and the problems of keys left out.

    Takes either that mapping itself (the assignment's `question_stats`) or the document of
    `manage.py export_effectiveness --format json` (its `questions` table: rows with a `key` and the figures).
    """
    if isinstance(data, dict) and isinstance(data.get("questions"), list):
        rows = data["questions"]
        data = {row.get("key"): row for row in rows if isinstance(row, dict)}
        if len(data) != len(rows):
            return {}, ["the export's questions table holds rows that are not objects"]
    if not isinstance(data, dict):
        return {}, [f"question stats must be an object keyed by bank key, not {type(data).__name__}"]
    stats, problems = {}, []
    for key, stat in data.items():
        if not isinstance(key, str) or not key:
            problems.append(f"question stats: a row without a key ({stat!r:.80})")
            continue
        problem = _stat_problem(stat)
        if problem:
            problems.append(f"question stats for {key}: {problem}")
            continue
        stats[key] = {
            "asked": int(stat.get("asked", 0)),
            "mean_gain": stat.get("mean_gain"),
            "large_gain_rate": stat.get("large_gain_rate"),
        }
    return stats, problems


def load_stats_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """Figures from a JSON file (either shape of `stats_from_wire`). Raises ConfigError naming every problem."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the question stats file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"the question stats file {path} is not JSON: {exc}") from None
    stats, problems = stats_from_wire(data)
    if problems:
        raise ConfigError(f"the question stats file {path} was refused:\n  " + "\n  ".join(problems[:20]))
    return stats
