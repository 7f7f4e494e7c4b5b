"""One worker, two GPUs, checked on a real host (issue 21): ready to run where two GPUs are, refused elsewhere.

    python bench/multi_gpu_worker.py [--no-bwrap] [--busy-s 600]

What it does: starts a dashboard of its own (daphne on a fresh SQLite site, as tests/reliability/live.py does),
one worker with `--gpus 0,1`, and queues two `attention_fwd` runs that start from the released kernel
(kernels/attention_fwd_sm90). Their model is a local Messages-API server (tests/agentloop/messages_api.py) whose
replies this script writes, so the runs go on in a known order:

  the run on GPU 0 (A): probe its device; quick evaluation with the other GPU idle ("alone"); quick evaluation
                        while the other run keeps its GPU busy ("busy"); quick evaluation after the other run's
                        cheat crashed its GPU context ("after").
  the run on GPU 1 (B): probe its device; wait until A's first evaluation ended; a matmul loop on its GPU until
                        A's second evaluation ended; write the `illegal_address` cheat and evaluate it.

Printed per run: the GPU its claim recorded (the dashboard's `worker_gpu`), what its shell saw (the device count
and UUID torch reports under its CUDA_VISIBLE_DEVICES), the GPUs nvidia-smi saw its harness processes use (the
harness service and its candidate children, found under /proc by their CUDA_VISIBLE_DEVICES), and the quick
evaluations' median times per scenario with the harness's own spread, alone against busy. On a host with fewer
than two GPUs it stops at once and says so (exit 2): nothing here is simulated.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RELEASED = ROOT / "kernels" / "attention_fwd_sm90" / "attention_fwd_sm90.cu"
CHEAT = ROOT / "tasks" / "attention_fwd" / "cheats" / "illegal_address.cu"
WAIT_S = 550  # a reply held back longer would meet the model client's own timeout (600 s)


def gpu_count() -> tuple[int, str]:
    """How many GPUs this host has, and how that was found out."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0, "no nvidia-smi on PATH"
    done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return 0, f"nvidia-smi -L failed: {(done.stderr or done.stdout).strip()[:200]}"
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines()), "nvidia-smi -L"


def gpu_uuids() -> dict[str, str]:
    """UUID -> index of every GPU of the host."""
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True, text=True, timeout=60
    ).stdout
    return {uuid.strip(): index.strip() for index, uuid in (line.split(",") for line in out.splitlines() if line)}


class HarnessWatch:
    """While the runs go on: the harness processes (service and candidate children) under /proc, each with the
    CUDA_VISIBLE_DEVICES it was started with, and the GPUs nvidia-smi says those processes use."""

    def __init__(self):
        self.env_of: dict[int, str] = {}  # pid -> CUDA_VISIBLE_DEVICES
        self.gpus_of: dict[int, set[str]] = {}  # pid -> GPU indices nvidia-smi reported for it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._uuids = gpu_uuids()

    def _watch(self):
        while not self._stop.is_set():
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in self.env_of:
                    continue
                try:
                    if b"gpu_harness." not in Path(f"/proc/{entry}/cmdline").read_bytes():
                        continue
                    raw = Path(f"/proc/{entry}/environ").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
                self.env_of[int(entry)] = env.get("CUDA_VISIBLE_DEVICES", "(unset)")
            apps = subprocess.run(
                ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
            for line in apps.splitlines():
                pid, _, uuid = line.partition(",")
                if pid.strip().isdigit():
                    self.gpus_of.setdefault(int(pid), set()).add(self._uuids.get(uuid.strip(), uuid.strip()))
            self._stop.wait(0.5)

    def by_visible_device(self) -> dict[str, set[str]]:
        """CUDA_VISIBLE_DEVICES of harness processes -> the physical GPUs nvidia-smi saw them on."""
        seen: dict[str, set[str]] = {}
        for pid, visible in self.env_of.items():
            seen.setdefault(visible, set()).update(self.gpus_of.get(pid, set()))
        return seen

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


class Choreography:
    """The model's replies for both runs (see the module's docstring), told apart by the GPU their first shell
    command printed; it holds a reply back (up to WAIT_S) where one run must wait for the other."""

    def __init__(self, gates: Path, kernel_name: str, busy_s: float):
        self.gates = gates
        self.kernel_name = kernel_name
        self.busy_s = busy_s
        self.events = {name: threading.Event() for name in ("a_alone_done", "b_cheat_done")}

    def _wait(self, name: str) -> None:
        """Until the event `name` is set, or the file gates/`name` exists (written by a run's shell command)."""
        end = time.monotonic() + WAIT_S
        while not (name in self.events and self.events[name].is_set()) and not (self.gates / name).exists():
            if time.monotonic() > end:
                print(f"  (gave up waiting for {name} after {WAIT_S} s)", flush=True)
                return
            time.sleep(0.2)

    def __call__(self, request: dict):
        from tests.agentloop.messages_api import Reply, tool_use

        results = [
            block
            for message in request["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        taken = len(results)
        probe = (
            'echo CVD=$CUDA_VISIBLE_DEVICES; python -c "import torch; p = torch.cuda.get_device_properties(0); '
            "print('SHELL_DEVICE', torch.cuda.device_count(), p.name, 'GPU-' + str(p.uuid))\""
        )
        if taken == 0:
            return Reply([tool_use("shell", {"command": probe})])
        found = re.search(r"CVD=(\d+)", json.dumps(results[0]))
        gpu = found.group(1) if found else "?"
        quick = Reply([tool_use("evaluate", {"scenarios": "quick"})])
        if gpu == "0":  # run A
            if taken == 1:
                return quick  # alone
            if taken == 2:
                self.events["a_alone_done"].set()
                self._wait("b_busy")
                return quick  # the neighbour busy
            if taken == 3:
                (self.gates / "a_busy_done").touch()  # the neighbour's matmul loop ends
                self._wait("b_cheat_done")
                return quick  # after the neighbour's crash
            return Reply([tool_use("shell", {"command": probe})])
        # run B
        if taken == 1:
            self._wait("a_alone_done")
            busy = (
                "python -c \"import torch, time, pathlib; x = torch.randn(8192, 8192, device='cuda'); "
                "y = x @ x; torch.cuda.synchronize()\n"
                f"pathlib.Path('{self.gates}/b_busy').touch()\n"
                f"stop = pathlib.Path('{self.gates}/a_busy_done'); t = time.time(); n = 0\n"
                f"while not stop.exists() and time.time() - t < {self.busy_s}:\n"
                "    y = x @ x; torch.cuda.synchronize(); n += 1\n"
                "print('BUSY', n, 'matmuls in', round(time.time() - t, 1), 's')\""
            )
            return Reply([tool_use("shell", {"command": busy, "timeout_s": self.busy_s + 30})])
        if taken == 2:
            return Reply(
                [tool_use("editor", {"command": "create", "path": self.kernel_name, "file_text": CHEAT.read_text()})]
            )
        if taken == 3:
            return quick  # the cheat
        self.events["b_cheat_done"].set()
        return Reply([tool_use("shell", {"command": probe})])


def evaluations(trace: Path) -> list[dict]:
    from agentloop.trace import read_trace

    return [e["payload"]["result"] for e in read_trace(trace) if e["kind"] == "evaluation"]


def shell_devices(trace: Path) -> list[str]:
    from agentloop.trace import read_trace

    text = "\n".join(json.dumps(e["payload"]) for e in read_trace(trace) if e["kind"] == "tool_result")
    return sorted(set(re.findall(r"SHELL_DEVICE [^\"\\]+", text)))


def timing_table(alone: dict, busy: dict) -> list[str]:
    rows = []
    spread = {s["id"]: s for s in busy.get("scenarios", [])}
    for s in alone.get("scenarios", []):
        other = spread.get(s["id"])
        if other is None or s.get("time_ms") is None or other.get("time_ms") is None:
            continue
        delta = other["time_ms"] - s["time_ms"]
        within = abs(delta) <= max(s.get("spread_ms") or 0, other.get("spread_ms") or 0)
        rows.append(
            f"    {s['id']:<45} alone {s['time_ms']:.4f} ms (IQR {s.get('spread_ms') or 0:.4f})  busy "
            f"{other['time_ms']:.4f} ms (IQR {other.get('spread_ms') or 0:.4f})  "
            f"{100 * delta / s['time_ms']:+.1f}% {'within' if within else 'OUTSIDE'} the spread"
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-bwrap", action="store_true", help="start the worker unsandboxed (--no-bwrap)")
    parser.add_argument("--busy-s", type=float, default=540, help="longest the neighbour keeps its GPU busy")
    args = parser.parse_args()

    found, how = gpu_count()
    if found < 2:
        print(f"needs 2 GPUs, found {found} ({how}): nothing was run", flush=True)
        return 2

    from tests.agentloop.messages_api import MessagesServer
    from tests.reliability.live import LiveSite, wait_until

    folder = Path(tempfile.mkdtemp(prefix="kseek-multigpu-", dir=Path.home()))  # not /tmp: the sandbox's is private
    gates = folder / "gates"
    gates.mkdir()
    site = LiveSite(folder / "site").setup()
    worker = None
    try:
        port = site.start_server()
        token = site.worker_token("two-gpus")
        kernel_name = site.django(
            "from runs.models import Task\nresult = Task.objects.get(name='attention_fwd').starting_kernel_name"
        )
        script = Choreography(gates, kernel_name or "naive.cu", args.busy_s)
        with MessagesServer(script) as api, HarnessWatch() as watch:
            runs = {}
            for label, steps in (("A", 5), ("B", 5)):
                runs[label] = site.django(
                    "from runs.models import Task\nfrom runs.services import run_start\n"
                    "run = run_start(task=Task.objects.get(name='attention_fwd'), model='claude-sonnet-4-6',"
                    " starting_kernel=source, review_mode='auto', budget_steps=steps)\nresult = run.pk",
                    source=RELEASED.read_text(),
                    steps=steps,
                )
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "KSEEK_"))}
            env.update(
                PYTHONPATH=str(ROOT),
                KSEEK_WORKER_TOKEN=token,
                ANTHROPIC_API_KEY="sk-local-script",
                ANTHROPIC_BASE_URL=api.url,
            )
            state = folder / "worker"
            argv = [sys.executable, "-m", "agentloop", "worker", "--server", f"ws://127.0.0.1:{port}"]
            argv += ["--gpus", "0,1", "--state-dir", str(state)] + (["--no-bwrap"] if args.no_bwrap else [])
            log = open(folder / "worker.log", "w")
            started = time.monotonic()
            worker = subprocess.Popen(argv, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
            ids = ",".join(str(pk) for pk in runs.values())
            done = wait_until(
                lambda: (
                    site.query(f"SELECT COUNT(*) FROM runs_run WHERE id IN ({ids}) AND finished_at IS NOT NULL")[0][0]
                    == 2
                ),
                3000,
                interval=2,
                while_alive=worker,
            )
            print(f"both runs finished: {bool(done)} after {time.monotonic() - started:.0f} s", flush=True)
            seen = watch.by_visible_device()
        for label, pk in runs.items():
            status, reason, gpu = site.query(
                "SELECT status, status_reason, worker_gpu FROM runs_run WHERE id = ?", (pk,)
            )[0]
            trace = state / "runs" / str(pk) / "trace.jsonl"
            print(f"run {label} (#{pk}): {status} ({reason}); the dashboard says it held {gpu or '(none)'}")
            for line in shell_devices(trace) if trace.exists() else []:
                print(f"  its shell: {line}")
            visible = (gpu or "").removeprefix("gpu ")
            print(
                f"  harness processes with CUDA_VISIBLE_DEVICES={visible}: nvidia-smi saw them on GPU(s) "
                f"{sorted(seen.get(visible, set())) or '(none seen)'}"
            )
            results = evaluations(trace) if trace.exists() else []
            for name, result in zip(("first", "second", "third"), results):
                print(f"  {name} evaluation: {result.get('status')} {result.get('reason') or ''}".rstrip())
            if label == "A" and len(results) >= 2:
                print("  quick evaluation of the released kernel, alone vs the other GPU busy:")
                print("\n".join(timing_table(results[0], results[1])))
        print(f"logs: {folder} (worker.log, site/daphne-*.log)")
        return 0 if done else 1
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
        site.close()


if __name__ == "__main__":
    sys.exit(main())
