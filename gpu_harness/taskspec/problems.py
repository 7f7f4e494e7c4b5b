"""What is wrong with a task folder: every problem found, each with its file, field and line, raised at once
(`TaskSpecError`) so that a task author fixes a spec in one pass."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecProblem:
    file: str
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}"


class TaskSpecError(ValueError):
    """A task folder that cannot be used; `problems` says every reason (file, field, line)."""

    def __init__(self, problems: list[SpecProblem]) -> None:
        self.problems = list(problems)
        super().__init__("invalid task:\n" + "\n".join(f"  {p}" for p in self.problems))
