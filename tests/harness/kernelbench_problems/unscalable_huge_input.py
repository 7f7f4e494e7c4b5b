"""Refused on a machine without 800 GiB to spare, before anything is allocated: a 100 GiB input (163840 x 163840
float32) whose sizes only agree at the problem's own (targets broadcast along the last dimension, as KernelBench's
HingeLoss does), so its data checks cannot run at smaller ones."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 163840
input_shape = (163840,)


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
