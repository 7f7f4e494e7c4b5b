"""Unimportable: dropout in training mode (the module's default): two calls on the same input differ."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


batch_size = 8
dim = 32


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
