"""Level-1 style: two inputs whose values have a meaning scaling would break (a fixture written for these tests):
x feeds a square root after a shift of 4 (a scaled x makes it NaN), p is a probability (non-negative)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x + 4.0) * torch.log(p)


batch_size = 8
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim).clamp(-3.5, 3.5), torch.rand(batch_size, dim) + 0.01]


def get_init_inputs():
    return []
