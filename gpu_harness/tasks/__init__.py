"""The task registry: every task is a folder (`tasks/<name>/task.toml` + reference.py), run by the generic task.

Folder tasks are found in the repository's top-level `tasks/` folder, then in each folder named by
KSEEK_TASKS_DIR (os.pathsep-separated), in that order; the first folder of a name wins. The child process
inherits the environment, so it finds the same folders. Task modules import torch lazily, so listing and
reading tasks works without it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..taskspec import SPEC_FILE, load_spec
from .base import REPO_ROOT, Judgement, Scenario, Task, TaskError, derive_seed

if TYPE_CHECKING:
    from ..taskspec import TaskSpec
    from .data_task import DataTask


BUILTIN_TASKS_DIR = REPO_ROOT / "tasks"
TASKS_DIR_ENV = "KSEEK_TASKS_DIR"

_INSTANCES: dict[object, Task] = {}  # resolved folder -> the task


def task_roots() -> list[Path]:
    """Where folder tasks are looked for, in order."""
    extra = [Path(p) for p in os.environ.get(TASKS_DIR_ENV, "").split(os.pathsep) if p]
    return [BUILTIN_TASKS_DIR, *extra]


def task_folders() -> dict[str, Path]:
    """name -> folder of every folder task (a subfolder holding task.toml); the first of a name wins (the
    repository's own tasks are never shadowed)."""
    found: dict[str, Path] = {}
    for root in task_roots():
        try:
            entries = sorted(root.iterdir())
        except OSError:
            continue
        for folder in entries:
            if (folder / SPEC_FILE).is_file() and folder.name not in found:
                found[folder.name] = folder.resolve()
    return found


def list_tasks() -> list[str]:
    return sorted(task_folders())


def get_task(name: str) -> Task:
    """The task of that name; ValueError (a TaskSpecError for a broken folder) when there is none."""
    folder = task_folders().get(name)
    if folder is None:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(list_tasks())}")
    if folder not in _INSTANCES:
        _INSTANCES[folder] = load_folder_task(folder)
    return _INSTANCES[folder]


def folder_task(spec: TaskSpec, device: str | None = None) -> DataTask:
    """The generic task for a folder's spec: its target picks the implementation. `device` ("cpu" or "cuda")
    is where a cuda-sm90 task's judge computes (default: the GPU); tests of the judge pass "cpu"."""
    if spec.target.arrays == "torch":
        from .data_cuda import CudaDataTask

        return CudaDataTask(spec, device=device or "cuda")
    from .data_cpu import CpuDataTask

    return CpuDataTask(spec)


def load_folder_task(folder: str | Path, device: str | None = None) -> DataTask:
    """A folder task, read afresh (not cached): what `task check` uses. `device`: where a cuda-sm90 task's
    judge computes ("cuda" by default; "cpu" to check a task on a machine without a GPU)."""
    return folder_task(load_spec(folder), device=device)


def use_folder(folder: str | Path) -> str:
    """Make a task folder findable by name, in this process and the children it starts (KSEEK_TASKS_DIR);
    returns its name."""
    folder = Path(folder).resolve()
    if not (folder / SPEC_FILE).is_file():
        raise ValueError(f"{folder} is not a task folder (it has no {SPEC_FILE})")
    roots = [str(folder.parent), *(p for p in os.environ.get(TASKS_DIR_ENV, "").split(os.pathsep) if p)]
    os.environ[TASKS_DIR_ENV] = os.pathsep.join(dict.fromkeys(roots))
    found = task_folders().get(folder.name)
    if found != folder:
        raise ValueError(f"task {folder.name!r} is already defined by {found}")
    return folder.name


__all__ = [
    "Judgement",
    "Scenario",
    "Task",
    "TaskError",
    "folder_task",
    "derive_seed",
    "get_task",
    "list_tasks",
    "load_folder_task",
    "task_folders",
    "use_folder",
]
