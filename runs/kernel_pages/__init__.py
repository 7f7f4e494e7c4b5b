"""Kernels and evaluations: the kernel list, a kernel's page (its evidence, "Verify here") and an evaluation's."""
