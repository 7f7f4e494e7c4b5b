"""The task registry. Task modules import torch lazily, so listing and reading tasks works without it."""

from __future__ import annotations

from .base import Judgement, Scenario, Task, derive_seed

_FACTORIES = {
    "attention_fwd": ("gpu_harness.tasks.attention_fwd", "AttentionFwd"),
    "matmul_cpu": ("gpu_harness.tasks.matmul_cpu", "MatmulCpu"),
}
_INSTANCES: dict[str, Task] = {}


def list_tasks() -> list[str]:
    return sorted(_FACTORIES)


def get_task(name: str) -> Task:
    if name not in _FACTORIES:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(list_tasks())}")
    if name not in _INSTANCES:
        import importlib

        module, cls = _FACTORIES[name]
        _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
    return _INSTANCES[name]


__all__ = ["Judgement", "Scenario", "Task", "derive_seed", "get_task", "list_tasks"]
