"""Refused naming the package it needs: it imports einops, which this project does not install (KernelBench level
3's Mamba2 problems do the same)."""

import torch
from einops import rearrange
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return rearrange(x, "b (h d) -> b h d", h=heads).sum(-1)


batch_size = 4
heads = 2
dim = 8


def get_inputs():
    return [torch.randn(batch_size, heads * dim)]


def get_init_inputs():
    return []
