"""Imports each MODULE as a contained child would, and prints the whole traceback of each that fails: the
harness's n/a note keeps only one line of it (gpu_harness/tasks/libraries.py). On the GPU machine, after
lab/tools/unpack_baselines.sh:

    python3 lab/tools/contained_import.py flash_attn.cute.interface quack.softmax fa3_fwd_interface

The sandbox, its one writable folder and the environment are the harness's own (childbox.contained,
runner.contained_environment); the folder is removed after. Exits 1 where a module does not import, 2 where
this machine has no working bubblewrap."""

from __future__ import annotations

import subprocess
import sys
import tempfile

from gpu_harness import childbox, runner

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


def main(modules: list[str]) -> int:
    if childbox.working_bwrap() is None:
        print("no working bubblewrap here", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kseek-import-") as workdir:
        env = runner.ChildSession.environment()
        runner.contained_environment(env, workdir)
        argv = childbox.contained([sys.executable, "-c", IMPORT_EACH, *modules], workdir)
        return subprocess.run(argv, env=env, cwd=workdir, timeout=600, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
