"""Importable: names that clash (an input and a parameter both `weight`) or are C keywords (`double`); an int
scalar input."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, weight, double, shift):
        return torch.roll(weight * self.weight * double, shift, 1)


batch_size = 3
dim = 5


def get_inputs():
    return [torch.randn(batch_size, dim), 1.5, 2]


def get_init_inputs():
    return [dim]
