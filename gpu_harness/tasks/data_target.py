"""What each target provides to the generic task (gpu_harness/tasks/data_task.py): its judge's device and the
operations on its arrays (numpy arrays in data_cpu.py, torch tensors in data_cuda.py), declared here and
implemented there."""

from __future__ import annotations

from typing import Any

from ..verdict import Comparison
from .base import Array


class TargetArrays:
    """The target-specific half of DataTask: every method is implemented by data_cpu.py and data_cuda.py."""

    def judge_device(self) -> str:
        """Where the judge computes: "cpu" or "cuda"."""
        raise NotImplementedError

    def _reference_copy(self, arr: Array) -> Array:
        """The reference's copy of an input: float tensors at the reference's precision."""
        raise NotImplementedError

    def _as_array(self, value: object) -> Array:
        raise NotImplementedError

    def _is_array(self, value: object) -> bool:
        """An array of this target's kind (numpy array, torch tensor)."""
        raise NotImplementedError

    def _is_float(self, arr: Array) -> bool:
        raise NotImplementedError

    def _is_integer(self, arr: Array) -> bool:
        raise NotImplementedError

    def _widened(self, arr: Array) -> Array:
        """A reference output as the judge compares it: float64 for floats."""
        raise NotImplementedError

    def _any_nan(self, arr: Array) -> bool:
        raise NotImplementedError

    def _pointer(self, arr: Array) -> int:
        raise NotImplementedError

    def _not_like(self, cand: Array, dtype: str, shape: tuple[Any, ...]) -> str | None:
        """None when the candidate's output has the ABI's shape and dtype; else what it has."""
        raise NotImplementedError

    def _compare(self, name: str, cand: Array, ref: Array) -> Comparison:
        raise NotImplementedError

    def _random_indices(self, size: int, n: int, seed: int) -> Array:
        """n distinct indices of range(size), sorted, on the judge's device (all of them when n == size)."""
        raise NotImplementedError

    def _take(self, arr: Array, axis: int, rows: Array) -> Array:
        """arr at indices `rows` along `axis`."""
        raise NotImplementedError

    def _nonfinite_count(self, arr: Array) -> int:
        raise NotImplementedError

    def _allclose_ratio(self, cand: Array, ref: Array, atol: float, rtol: float) -> float:
        """The worst |cand - ref| / (atol + rtol |ref|) where the reference is finite."""
        raise NotImplementedError
