"""Unimportable: the forward raises (the shapes do not match)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(3, 4), torch.randn(5, 6)]


def get_init_inputs():
    return []
