"""Level-1 style: an elementwise ReLU on one input (a fixture written for these tests)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 6
dim = 40


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
