"""Reads of a released kernel's development run (its lab's trace, imported by load_released_kernels)."""

from runs.models import Evaluation, Kernel, Run


def kernel_development(kernel: Kernel) -> dict | None:
    """A released kernel's development run (its lab's trace, imported) and how many evaluations it holds; None
    where it has none."""
    if kernel.development_run_id is None:
        return None
    return {
        "run_id": kernel.development_run_id,
        "evaluations": Evaluation.objects.filter(run_id=kernel.development_run_id).count(),
    }


def run_developed_kernels(run: Run) -> list[Kernel]:
    """The released kernels whose development this (imported) run records."""
    return list(Kernel.objects.filter(development_run=run, released=True).order_by("release_name"))
