"""Refused before anything runs: the model and its configuration are downloaded from a model hub (the form of
KernelBench level 4), which the harness never reaches."""

import torch
from transformers import AutoConfig, AutoModelForCausalLM


class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(model_name, config=config)

    def forward(self, x):
        return self.model(x).logits


model_name = "some-org/some-model"
config = AutoConfig.from_pretrained(model_name)
batch_size = 2
sequence_length = 16


def get_inputs():
    return [torch.randint(0, config.vocab_size, (batch_size, sequence_length))]


def get_init_inputs():
    return [model_name, config]
