"""Unimportable: importing it raises."""

import torch
from torch import nn

SIZES = {"batch": 4}
batch_size = SIZES["batch_size"]


class Model(nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(batch_size)]


def get_init_inputs():
    return []
