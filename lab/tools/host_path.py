"""How long a library baseline's call takes on the host, and whether it waits for the GPU: what the harness's
host-wait note (docs/harness.md, "How one evaluation runs", step 4) cannot tell apart. On the GPU machine, after
lab/tools/unpack_baselines.sh (or with the library on PYTHONPATH):

    python3 lab/tools/host_path.py attention_fwd fa3,cudnn [SCENARIO...]     (default: the task's quick set)

For each scenario and baseline, after a few untimed calls: the host time of a call with the GPU idle, and of a
call queued behind a 50 ms spin. A call that returns before the spin ends queues its work and goes; one that
returns after it waited for the GPU (a synchronizing call inside the library). Prints one line each; runs in this
process, uncontained (for the sandbox's part, run it under lab/tools/contained_import.py's sandbox by hand)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's gpu_harness, run from anywhere

from gpu_harness.tasks import derive_seed, get_task
from gpu_harness.tasks.sides import ChildSide

SPIN_S = 0.05  # the spin queued before the second kind of call
CALLS = 7


def host_ms(torch, call, spin_cycles: int) -> tuple[float, bool]:
    """The host time of one call (ms) and whether a spin queued before it had ended when it returned."""
    torch.cuda.synchronize()
    done = torch.cuda.Event()
    if spin_cycles:
        torch.cuda._sleep(spin_cycles)
    done.record()
    t0 = time.perf_counter()
    call()
    elapsed = (time.perf_counter() - t0) * 1e3
    waited = spin_cycles > 0 and done.query()
    torch.cuda.synchronize()
    return elapsed, waited


def spin_cycles_for(torch, seconds: float) -> int:
    """Cycles of torch.cuda._sleep that take about `seconds` on this GPU (measured once)."""
    torch.cuda._sleep(1000)  # loads the spin's kernel first: CUDA's lazy loading would time the load as the spin
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1_000_000)
    end.record()
    end.synchronize()
    return int(1_000_000 * seconds * 1e3 / start.elapsed_time(end))


def main(argv: list[str]) -> int:
    import torch

    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    task, names = get_task(argv[0]), argv[1].split(",")
    ChildSide(task).setup()
    by_id = {s.id: s for s in task.scenarios()}
    chosen = argv[2:] or task.quick_ids()
    spin = spin_cycles_for(torch, SPIN_S)
    print(f"{torch.cuda.get_device_name()}; a {SPIN_S * 1e3:.0f} ms spin is {spin} cycles; medians of {CALLS} calls")
    for sid in chosen:
        params = by_id[sid].params
        inputs = task.make_inputs(params, derive_seed(1, sid))
        calls = task.baseline_callables(names, params, inputs, {})
        for name, call in calls.items():
            if isinstance(call, str):
                print(f"{sid} {name}: n/a ({call})")
                continue
            try:  # a baseline that refuses the scenario at its first call (fa3 on fp16) is n/a, as in the harness
                for _ in range(3):
                    host_ms(torch, call, 0)
            except Exception as error:  # the library's own refusal, whatever its type
                print(f"{sid} {name}: n/a ({type(error).__name__}: {error})")
                continue
            idle = statistics.median(host_ms(torch, call, 0)[0] for _ in range(CALLS))
            behind = [host_ms(torch, call, spin) for _ in range(CALLS)]
            waits = sum(waited for _, waited in behind)
            print(
                f"{sid} {name}: host {idle:.3f} ms idle, {statistics.median(ms for ms, _ in behind):.3f} ms behind "
                f"the spin; waited for the GPU on {waits} of {CALLS}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
