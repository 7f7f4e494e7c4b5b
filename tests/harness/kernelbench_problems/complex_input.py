"""Unimportable: a complex input (no task dtype holds it)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x.abs()


def get_inputs():
    return [torch.randn(4, dtype=torch.complex64)]


def get_init_inputs():
    return []
