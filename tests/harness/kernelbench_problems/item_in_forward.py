"""Importable, main scenario only: forward reads a value (.item()), which the meta device cannot trace."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x / x.abs().max().item()


batch_size = 5
dim = 7


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
