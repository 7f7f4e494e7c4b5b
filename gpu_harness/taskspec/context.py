"""What every section's reader shares: the parsed TOML, the text's lines, the problems found so far and the lines
of the fields a later check names (`TaskSpec.lines`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .lines import _Lines
from .problems import SpecProblem


class SpecContext:
    """One reading of one task.toml; each section's reader adds its problems here rather than stopping at the
    first."""

    def __init__(self, folder: Path, path: Path, text: str, data: dict[str, Any]) -> None:
        self.folder, self.path, self.data = folder, path, data
        self.lines = _Lines(text)
        self.problems: list[SpecProblem] = []
        self.where: dict[str, int | None] = {}  # TaskSpec.lines

    def problem(self, fieldname: str, message: str, line: int | None = None) -> None:
        self.problems.append(SpecProblem(str(self.path), fieldname, message, line))

    def table(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            self.problem(key, f"must be a table ([{key}])", self.lines.key(key))
            return {}
        return value

    def only(
        self,
        table: dict[str, Any],
        head: int | None,
        allowed: set[Any],
        section: str = "tolerance",
        why: str = "not used with this rule",
    ) -> None:
        for key in table:
            if key not in allowed:
                self.problem(
                    f"{section}.{key}",
                    f"{why} (its fields: {', '.join(sorted(allowed))})",
                    self.lines.key(key, head),
                )

    def file_field(self, fieldname: str, value: object, line: int | None) -> Path | None:
        if not isinstance(value, str) or not value:
            self.problem(fieldname, f"expected a path (relative to the task folder), got {value!r}", line)
            return None
        path = (self.folder / value).resolve()
        if not path.is_file():
            self.problem(fieldname, f"{value}: no such file ({path})", line)
            return None
        return path
