"""`agentloop run --kernel` holds the starting kernel to the protocol's limit on a kernel source (1 MiB,
docs/protocol.md 1.2, "the same end to end"). A larger one started a run that spent its model calls on a kernel
the agent never evaluates (its trace's `started` event carried the whole file), and /dev/zero was read forever."""

from pathlib import Path

import pytest

from agentloop.cli import _starting_kernel, main
from agentloop.errors import ConfigError
from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
LIMIT_WORDS = "over the limit of 1,048,576 bytes"


def _kernel(tmp_path, size: int) -> Path:
    path = tmp_path / "kernel.cpp"
    path.write_text("// k\n" + "/" * (size - 6) + "\n", encoding="utf-8")
    assert path.stat().st_size == size
    return path


def test_a_starting_kernel_at_the_limit_is_taken_whole(tmp_path):
    assert KERNEL_SOURCE_MAX_BYTES == 2**20
    path = _kernel(tmp_path, KERNEL_SOURCE_MAX_BYTES)
    assert _starting_kernel(path) == path.read_text(encoding="utf-8")


def test_a_starting_kernel_one_byte_past_the_limit_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=f"a kernel source of 1,048,577 bytes is {LIMIT_WORDS}"):
        _starting_kernel(_kernel(tmp_path, KERNEL_SOURCE_MAX_BYTES + 1))


def test_a_device_is_refused_unread_beyond_the_limit():
    with pytest.raises(ConfigError, match=LIMIT_WORDS):
        _starting_kernel(Path("/dev/zero"))


def test_the_run_is_refused_before_it_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KSEEK_AGENT_RUNS", str(tmp_path / "runs"))
    trace = tmp_path / "t.jsonl"
    big = _kernel(tmp_path, 2 * KERNEL_SOURCE_MAX_BYTES)
    argv = ["run", "--unsandboxed", "--task", "matmul_cpu", "--kernel", str(big), "--model", f"replay:{DEMO}"]
    assert main([*argv, "--trace", str(trace), "--workspace", str(tmp_path / "ws"), "--max-steps", "1"]) == 2
    assert LIMIT_WORDS in capsys.readouterr().err
    assert not trace.exists()
