"""Level-1 style: a sum over one dimension, kept (the dimension is a constructor argument)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 4
rows = 24
cols = 24
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return [reduce_dim]
