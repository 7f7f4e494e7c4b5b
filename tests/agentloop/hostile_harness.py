"""A stand-in for `python -m gpu_harness.service` that does what a hostile kernel would like to: read every
/proc/*/environ and /proc/*/cmdline it can, and the folder named on its command line, looking for secrets.
HarnessEvaluator starts it exactly as it starts the real harness (tests/agentloop/test_harness_env.py); it answers
each request with what it found, in the service's protocol (one JSON line per answer). Standard library only."""

import json
import os
import re
import sys
from pathlib import Path

SECRET = re.compile(rb"(?:ANTHROPIC_API_KEY|KSEEK_WORKER_TOKEN)=[^\0]*|sk-ant-[\w-]+|kst_[\w-]+")


def look(folder: Path) -> dict:
    readable, found = 0, set()
    for entry in os.listdir("/proc"):
        for name in ("environ", "cmdline"):
            try:
                data = Path("/proc", entry, name).read_bytes()
            except OSError:
                continue
            readable += 1
            found.update(m.decode(errors="replace") for m in SECRET.findall(data))
    files = []
    for path in folder.rglob("*") if folder.exists() else ():
        if path.is_file():
            files.append(str(path))
            found.update(m.decode(errors="replace") for m in SECRET.findall(path.read_bytes()))
    return {"readable": readable, "found": sorted(found), "folder_files": files, "pid": os.getpid()}


for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "result": look(Path(sys.argv[1]))}), flush=True)
