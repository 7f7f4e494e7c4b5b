"""A task's cheats: kernels kept as tests, each of which the harness must reject for the reason its
`// expect: <reason>` line names (a substring of what the verdict says). `task cheats` and the GPU
validation run them through `evaluate`, as any candidate."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tasks.base import Task


EXPECT_RE = re.compile(r"expect: (.+)")


@dataclass(frozen=True)
class CheatOutcome:
    path: Path
    expected: str | None  # None: the file has no `expect:` line (itself a failure)
    status: str  # the evaluation's status
    said: str  # the verdict's reasons, run together
    ok: bool  # rejected, and for the expected reason
    wall_s: float

    @property
    def verdict(self) -> str:
        if self.expected is None:
            return "no 'expect: <reason>' line"
        if self.ok:
            return "rejected as expected"
        rejected = self.status in ("error", "incorrect")
        return "rejected for another reason" if rejected else "ACCEPTED"


def cheat_files(task: Task) -> list[Path]:
    """The task's cheats folder's kernels (of the task's own source suffix); ValueError when it has none."""
    folder = getattr(task, "cheats_dir", None)
    suffix = ".cu" if task.language == "cuda" else ".cpp"
    cheats = sorted(folder.glob(f"*{suffix}")) if folder else []
    if not cheats:
        raise ValueError(f"task {task.name} has no cheats (a cheats/ folder of {suffix} files)")
    return cheats


def check_cheats(
    task_name: str, scenarios: str = "quick", timeout_s: float | None = 60.0, paths: list[Path] | None = None
) -> list[CheatOutcome]:
    """Evaluate each cheat as a candidate (timing included: some cheats show only there)."""
    from .evaluate import evaluate
    from .tasks import get_task

    out = []
    for path in paths or cheat_files(get_task(task_name)):
        m = EXPECT_RE.search(path.read_text())
        if not m:
            out.append(CheatOutcome(path, None, "", "", False, 0.0))
            continue
        expected = m.group(1).strip()
        r = evaluate(task_name, path, scenarios=scenarios, timeout_s=timeout_s)
        said = " ".join([r.reason or ""] + [s.reason or "" for s in r.scenarios])
        rejected = r.status in ("error", "incorrect") and not r.all_correct
        out.append(CheatOutcome(path, expected, r.status, said, rejected and expected in said, r.wall_s))
    return out
