"""Which task targets this worker serves: what the host can run, found without importing torch, or fewer where
the operator says so (docs/protocol.md 2.2, `hello.targets`).

`cpu` is always served (every host compiles and runs C++). `cuda-sm90` is served when every GPU the worker
offers is a CUDA GPU of compute capability 9.0 (Hopper), as `nvidia-smi` reports it: a run goes to whichever
offered GPU is free, so one older GPU among them would fail the runs it gets. An operator may name fewer
targets (`--targets cpu`, `$KSEEK_WORKER_TARGETS`); naming one that was not detected needs `--force-targets`,
and the worker says in its log that it serves it on the operator's word.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from agentloop.errors import ConfigError

log = logging.getLogger("agentloop.worker")

CPU, CUDA_SM90 = "cpu", "cuda-sm90"
# The targets a worker can announce: the task targets of the dashboard (runs.models.Target) and of the harness
# (gpu_harness.taskspec.TARGETS); tests/agentloop/test_worker_targets.py holds the three lists equal.
KNOWN_TARGETS = (CPU, CUDA_SM90)
TARGETS_ENV = "KSEEK_WORKER_TARGETS"
HOPPER_COMPUTE_CAP = "9.0"
NVIDIA_SMI = ["nvidia-smi", "--query-gpu=index,compute_cap", "--format=csv,noheader"]
NVIDIA_SMI_TIMEOUT_S = 20


@dataclass(frozen=True)
class Detected:
    targets: tuple[str, ...]
    why: str  # what was found, for the log: why cuda-sm90 is or is not among them


# subprocess.run, or a test's stand-in for it
RunCommand = Callable[..., "subprocess.CompletedProcess[str]"]


def detect_targets(gpus: list[int], run: RunCommand | None = None) -> Detected:
    """The targets this host can serve with the GPUs the worker offers (`gpus`, nvidia-smi's indices). `run`:
    subprocess.run, or a stand-in for it."""
    try:
        done = (run or subprocess.run)(
            NVIDIA_SMI, capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        return Detected((CPU,), "no nvidia-smi on PATH: no CUDA GPU found")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Detected((CPU,), f"nvidia-smi failed ({exc}): no CUDA GPU counted")
    if done.returncode != 0:
        problem = (done.stderr or done.stdout or "").strip().splitlines()
        return Detected((CPU,), f"nvidia-smi exited {done.returncode} ({problem[0] if problem else 'no message'})")
    caps = {}
    for line in done.stdout.splitlines():
        index, _, cap = (part.strip() for part in line.partition(","))
        if index.isdigit() and cap:
            caps[int(index)] = cap
    if not gpus:
        return Detected((CPU,), "no GPU offered (--gpus is empty)")
    missing = [g for g in gpus if g not in caps]
    if missing:
        return Detected((CPU,), f"nvidia-smi lists no GPU {', '.join(map(str, missing))} (it lists {caps or 'none'})")
    other = {g: caps[g] for g in gpus if caps[g] != HOPPER_COMPUTE_CAP}
    if other:
        shown = ", ".join(f"gpu {g}: {cap}" for g, cap in other.items())
        return Detected((CPU,), f"not every offered GPU has compute capability {HOPPER_COMPUTE_CAP} ({shown})")
    shown = ", ".join(f"gpu {g}" for g in gpus)
    return Detected((CPU, CUDA_SM90), f"compute capability {HOPPER_COMPUTE_CAP} on {shown}")


def parse_targets(text: str) -> list[str]:
    """A comma-separated list of target names (--targets, $KSEEK_WORKER_TARGETS), each known."""
    names = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in names if t not in KNOWN_TARGETS]
    if unknown:
        raise ConfigError(f"unknown target(s) {', '.join(unknown)}: a worker serves {', '.join(KNOWN_TARGETS)}")
    if not names:
        raise ConfigError(f"no target named: give one or more of {', '.join(KNOWN_TARGETS)}")
    return names


def choose_targets(
    gpus: list[int], requested: str | None = None, *, force: bool = False, run: RunCommand | None = None
) -> list[str]:
    """The targets to announce: those detected, or the operator's `requested` list. A requested target that was
    not detected is refused (ConfigError) unless `force`, and then served with a warning in the log."""
    detected = detect_targets(gpus, run=run)
    log.info("targets detected: %s (%s)", ", ".join(detected.targets), detected.why)
    if requested is None:
        return list(detected.targets)
    chosen = parse_targets(requested)
    beyond = [t for t in chosen if t not in detected.targets]
    if beyond and not force:
        raise ConfigError(
            f"this host was not found to serve {', '.join(beyond)} ({detected.why}); serve only "
            f"{', '.join(detected.targets)}, or pass --force-targets to announce it anyway"
        )
    for target in beyond:
        log.warning(
            "serving %s on the operator's word (--force-targets): it was not detected here (%s); its runs may fail",
            target,
            detected.why,
        )
    return chosen
