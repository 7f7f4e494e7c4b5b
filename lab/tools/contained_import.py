"""Imports each MODULE as a contained child would, and prints the whole traceback of each that fails: the
harness's n/a note keeps only one line of it (gpu_harness/tasks/libraries.py). On the GPU machine, after
lab/tools/unpack_baselines.sh:

    python3 lab/tools/contained_import.py --task attention_fwd flash_attn.cute.interface fa3_fwd_interface

The sandbox, its one writable folder and the environment are the harness's own (childbox.contained,
runner.contained_environment), with TASK's [child.env] as its child gets it; the folder is removed after.
Exits 1 where a module does not import, 2 where this machine has no working bubblewrap."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's gpu_harness, run from anywhere

from gpu_harness import childbox, runner
from gpu_harness.tasks import get_task

IMPORT_EACH = """
import importlib, sys, traceback
for module in sys.argv[1:]:
    try:
        importlib.import_module(module)
        print(module, "imports", flush=True)
    except BaseException:
        print(module, "does not import:", flush=True)
        traceback.print_exc()
        sys.stderr.flush()
        failed = True
sys.exit(1 if "failed" in globals() else 0)
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", help="a task whose [child.env] the child gets (e.g. attention_fwd)")
    parser.add_argument("modules", nargs="+")
    args = parser.parse_args(argv)
    if childbox.working_bwrap() is None:
        print("no working bubblewrap here", file=sys.stderr)
        return 2
    task_env = get_task(args.task).child_env() if args.task else {}
    with tempfile.TemporaryDirectory(prefix="kseek-import-") as workdir:
        env = runner.ChildSession.environment(runner.with_cache_folder(task_env, runner.cache_folder(True, workdir)))
        runner.contained_environment(env, workdir)
        command = childbox.contained([sys.executable, "-c", IMPORT_EACH, *args.modules], workdir)
        return subprocess.run(command, env=env, cwd=workdir, timeout=600, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
