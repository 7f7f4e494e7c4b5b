"""Importable: the model holds a tensor that is neither a parameter nor a buffer (taken as a buffer: an input)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.randn(4)

    def forward(self, x):
        return x + self.table


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
