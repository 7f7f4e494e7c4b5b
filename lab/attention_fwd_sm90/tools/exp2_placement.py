"""Where ptxas put the softmax: for each wgmma kernel instance of a build, how many exp2s (MUFU.EX2) of each
key-block loop sit between `wgmma.wait_group 1` and `wgmma.wait_group 0` (WARPGROUP.DEPBAR.LE gsb0, 0x1 and 0x0),
that is, run under O += P V instead of after it.

    python3 lab/attention_fwd_sm90/tools/exp2_placement.py LIB.so [--json]

The PTX has every exp2 of the block between the two waits; the SASS need not (README.md, "Where ptxas puts the
softmax"). Needs cuobjdump and nvdisasm: the CUDA toolkit's, or the `nvidia-cuda-cuobjdump` and
`nvidia-cuda-nvdisasm` wheels (dev dependencies).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

WAIT_ONE = "WARPGROUP.DEPBAR.LE gsb0, 0x1"
WAIT_ZERO = "WARPGROUP.DEPBAR.LE gsb0, 0x0"


def tool(name: str) -> str:
    """`name` on PATH, else the one its nvidia-cuda-<name> wheel installs (cuobjdump -sass runs nvdisasm)."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia  # the wheels' namespace package
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(root).glob(f"cu*/bin/{name}")):
            return str(candidate)
    raise FileNotFoundError(f"{name} not found: install the CUDA toolkit's or `pip install nvidia-cuda-{name}`")


def sass_of(lib: str | Path) -> str:
    env = dict(os.environ, NVDISASM_PATH=str(Path(tool("nvdisasm")).parent))
    proc = subprocess.run([tool("cuobjdump"), "-sass", str(lib)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass {lib} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def functions(sass: str) -> dict[str, list[str]]:
    """Mangled function name -> its instructions, in address order, from `cuobjdump -sass` output."""
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n\s+Function : ", sass)[1:]:
        name = block.split("\n", 1)[0].strip()
        out[name] = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", block)
    return out


def exp2_between_waits(instructions: list[str]) -> list[int]:
    """For each wait_group 1 followed by a wait_group 0: the MUFU.EX2 count between them."""
    counts, inside, n = [], False, 0
    for ins in instructions:
        if WAIT_ONE in ins:
            inside, n = True, 0
        elif WAIT_ZERO in ins:
            if inside:
                counts.append(n)
            inside = False
        elif inside and "MUFU.EX2" in ins:
            n += 1
    return counts


def placement(lib: str | Path) -> dict[str, list[int]]:
    """Demangled-enough kernel name -> exp2 counts between the waits, per loop. The name is kind<D, dtype>, with
    ", tile N" for a head dim's second tile (v27 on: the kernels' third template argument, TILE) and ", split"
    for the one-tile kernel's split-KV instance (v29 on: its fourth, SPLIT)."""
    sass = sass_of(lib)
    result = {}
    for name, instructions in functions(sass).items():
        m = re.match(r"_ZN5kseek\d+(attn_wgmma\w*?kernel)ILi(\d+)E\d*(\w+?)(?:Li(\d+)E)?(?:Lb([01])E)?EEv", name)
        if m:
            dtype = "bf16" if "bfloat16" in m.group(3) else "fp16"
            tile = f", tile {m.group(4)}" if m.group(4) not in (None, "0") else ""
            split = ", split" if m.group(5) == "1" else ""
            result[f"{m.group(1)}<{m.group(2)}, {dtype}{tile}{split}>"] = exp2_between_waits(instructions)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib", help="a build of the kernel (.so or .o)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    found = placement(args.lib)
    if args.json:
        print(json.dumps(found, indent=1))
    else:
        for kernel, counts in sorted(found.items()):
            print(f"{kernel:45s} exp2s between wait_group 1 and 0, per loop: {counts}")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
