"""Text the harness and the agent print but did not write reaches a terminal as text (gpu_harness/terminal.py): a
kernel's `#error` line, a model's words. ESC's sequences (clear the screen, move the cursor over a line already
written), C1's CSI and bidi overrides are written as escapes; newlines and tabs stay."""

import io
import subprocess
import sys
from pathlib import Path

from agentloop.console import ConsoleSink
from gpu_harness.terminal import shown

REPO = Path(__file__).resolve().parents[2]
ACTED_ON = ("\x1b", "\x9b", "\u202e", "\r", "\x07")  # ESC, C1 CSI, right-to-left override, carriage return, bell


def test_characters_a_terminal_acts_on_are_written_as_escapes_and_the_rest_as_it_is():
    assert shown("plain\ttext\nnext line, é, ∑, 日本") == "plain\ttext\nnext line, é, ∑, 日本"
    assert shown("\x1b[2J\x1b[1;1HGOAL MET\r\x07") == "\\x1b[2J\\x1b[1;1HGOAL MET\\r\\x07"
    assert shown("é \x9b2J \u202eTEM LAOG") == "é \\x9b2J \\u202eTEM LAOG"
    assert shown("a\\x1b stays") == "a\\x1b stays"  # a backslash is printable: already-escaped text is unchanged


def test_a_kernels_error_line_reaches_the_terminal_as_text(tmp_path):
    # `#error` prints its line as written, so a kernel's compile failure is text from the kernel's author
    kernel = tmp_path / "k.cpp"
    kernel.write_text('#error "\x1b[2J\x1b[1;1Hkernel: OK \u202eKO"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "gpu_harness", "compile", "--verbose", str(kernel)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED" in done.stdout and "\\x1b[2J\\x1b[1;1Hkernel: OK \\u202eKO" in done.stdout
    assert not [c for c in ACTED_ON if c in done.stdout + done.stderr]


def test_the_agents_terminal_line_shows_a_models_escapes_as_text():
    out = io.StringIO()
    text = "done\x1b[1A\x1b[2Krun 1: succeeded (goal met) \u202e"
    ConsoleSink(out).write(
        {"seq": 3, "kind": "model_message", "payload": {"content": [{"type": "text", "text": text}]}}
    )
    line = out.getvalue()
    assert line.endswith("\n") and line.count("\n") == 1
    assert "done\\x1b[1A\\x1b[2Krun 1: succeeded (goal met) \\u202e" in line
    assert not [c for c in ACTED_ON if c in line]
