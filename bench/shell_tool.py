"""The agent's shell tool against the two audit findings it must survive: 400 MB of output, and a child that
leaves its session to outlive a 3 s limit. In each sandbox mode this host offers, in a fresh process each:

- peak memory (VmHWM) of a process that ran `yes | head -c 400000000` through the tool, against the same
  process after `true` (the baseline, measured in the same run): the ratio is what the output cost;
- the wall time of `setsid sleep 25.0417 & echo started` and of `setsid sleep 25.0417 & sleep 30` with timeout_s 3, against
  the limit, and whether the `sleep` was still alive afterwards.

    .venv/bin/python bench/shell_tool.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from agentloop.sandbox import Sandbox
from agentloop.tools.shell import ShellTool
tool = ShellTool(Path(sys.argv[2]), sandbox=Sandbox.choose(unsandboxed=sys.argv[3] == "none"))
started = time.monotonic()
result = tool({"command": sys.argv[4], "timeout_s": 3})
wall = time.monotonic() - started
time.sleep(0.5)
import os, signal
def sleepers():  # the command's `sleep 25.0417`, by its exact argv (this process's own argv names it too)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read() == b"sleep\x0025.0417\x00":
                yield int(pid)
        except OSError:
            pass
found = list(sleepers())
alive = bool(found)
for pid in found:
    os.kill(pid, signal.SIGKILL)
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"wall_s": wall, "peak_kb": peak, "cut": result.truncated_chars, "sleep_alive": alive}))
"""


def probe(mode: str, command: str) -> dict:
    with tempfile.TemporaryDirectory() as workspace:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(ROOT), workspace, mode, command],
            capture_output=True,
            text=True,
            timeout=120,
        )
    if done.returncode != 0:
        raise SystemExit(f"{mode}: {command!r} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from agentloop.sandbox import working_bwrap

    modes = (["bubblewrap"] if working_bwrap()[0] else []) + ["none"]
    print(f"{'mode':<11} {'measure':<40} {'value':>12} {'baseline':>12} {'ratio':>7}")
    for mode in modes:
        floor = probe(mode, "true")
        big = probe(mode, "yes | head -c 400000000")
        print(
            f"{mode:<11} {'peak memory, 400 MB of output (kB)':<40} {big['peak_kb']:>12,} {floor['peak_kb']:>12,} "
            f"{big['peak_kb'] / floor['peak_kb']:>7.2f}"
        )
        print(f"{mode:<11} {'  characters cut from what is shown':<40} {big['cut']:>12,}")
        for command in ("setsid sleep 25.0417 & echo started", "setsid sleep 25.0417 & sleep 30"):
            run = probe(mode, command)
            print(
                f"{mode:<11} {command + ' (s)':<40} {run['wall_s']:>12.2f} {'3 (limit)':>12} {run['wall_s'] / 3:>7.2f}"
                f"   sleep alive after: {run['sleep_alive']}"
            )


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
