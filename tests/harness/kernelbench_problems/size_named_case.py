"""Importable: a size named like the importer's own scenario values (case, kb_flops)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


case = 6
kb_flops = 10


def get_inputs():
    return [torch.randn(case, kb_flops)]


def get_init_inputs():
    return []
