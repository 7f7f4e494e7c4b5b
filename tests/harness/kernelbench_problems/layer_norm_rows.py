"""Level-1 style: a LayerNorm without affine weights over long rows (a fixture written for these tests). Its
input is a standard normal, so each row already has mean 0 and variance 1: a kernel that copies it is within a
loose tolerance of the normalisation, unless the judge scales and shifts the input."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (self.dim,))


batch_size = 4
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
