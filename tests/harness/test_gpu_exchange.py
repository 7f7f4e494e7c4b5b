"""GPU tests of the output path: the child's slots reached through CUDA IPC, and evaluations through it.

Skipped where there is no GPU (CI). Run on a GPU host: python -m pytest tests/harness/test_gpu_exchange.py
"""

import subprocess
import sys
import textwrap

import pytest

from tests.harness.conftest import needs_nvcc

pytestmark = pytest.mark.gpu

CHILD = textwrap.dedent("""
    import sys, torch
    from gpu_harness.exchange import DeviceExchange
    torch.zeros(1, device="cuda")
    ex, handle = DeviceExchange.create(1000, 3)
    for i in range(3):
        ex.slot(i, 0, 1000).fill_(i + 1)
    torch.cuda.synchronize()
    print(handle, ex.slot_bytes, flush=True)
    sys.stdin.readline()              # keep the allocation alive until the parent has read it
    print(int(ex.slot(1, 0, 1000).sum()), flush=True)
""")


def test_parent_reads_and_copies_the_childs_slots():
    import torch

    from gpu_harness.exchange import DeviceExchange

    torch.zeros(1, device="cuda")
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        handle, slot_bytes = child.stdout.readline().split()
        assert int(slot_bytes) == 1024  # rounded up to the alignment
        ex = DeviceExchange.attach(handle, 1000, 3)
        copies = [ex.slot(i, 0, 1000).clone() for i in range(3)]
        assert [int(c[0]) for c in copies] == [1, 2, 3] and all(bool((c == c[0]).all()) for c in copies)
        ex.slot(1, 0, 1000).fill_(0)  # the mapping is the child's memory itself ...
        torch.cuda.synchronize()
        child.stdin.write("\n")
        child.stdin.flush()
        assert int(child.stdout.readline()) == 0
        assert int(copies[1].sum()) == 2 * 1000  # ... and a copy is the parent's own
        with pytest.raises(ValueError):
            ex.slot(3, 0, 10)
        with pytest.raises(ValueError):
            ex.slot(0, 1000, 100)
        ex.close()
    finally:
        child.kill()
        child.wait()


def test_a_malformed_handle_is_a_clear_error():
    import torch

    from gpu_harness.exchange import DeviceExchange, ExchangeError

    torch.zeros(1, device="cuda")
    with pytest.raises(ExchangeError, match="64 bytes"):
        DeviceExchange.attach("abcd", 100, 2)
    with pytest.raises(ExchangeError, match="cuIpcOpenMemHandle"):
        DeviceExchange.attach("00" * 64, 100, 2)


@needs_nvcc
def test_naive_kernel_is_correct_and_a_partial_writer_is_not():
    from gpu_harness import evaluate

    ids = "bf16_b32_sq113_sk113_h16x16_d128_causal,fp16_b8_sq1_sk4096_h16x16_d128_causal"
    good = evaluate("attention_fwd", "tasks/attention_fwd/naive.cu", scenarios=ids, baselines=[], timing=False)
    assert good.status == "correct", good.reason
    assert {"start_s", "correctness_s", "judge_s"} <= set(good.phases)
    bad = evaluate(
        "attention_fwd", "tasks/attention_fwd/cheats/partial_write.cu", scenarios=ids, baselines=[], timing=False
    )
    assert bad.status == "incorrect" and "NaN" in bad.reason
