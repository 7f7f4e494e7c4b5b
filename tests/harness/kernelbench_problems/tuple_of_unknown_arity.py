"""Unimportable: the number of outputs depends on the input's size (chunks of 4 rows)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return tuple(x.split(4, dim=0))


batch_size = 12
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
