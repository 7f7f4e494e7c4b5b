"""The two sides of one evaluation of a task, each an object made for that evaluation and dropped after it.

A task (base.py) is data plus pure functions, and it is cached: one instance per task in a process, which the
harness service reuses for evaluation after evaluation. Whatever belongs to one evaluation lives here instead:
- `JudgeSide`, made by `Task.new_judge()` when an Evaluation starts (gpu_harness/evaluation.py) and closed at
  its end: the parent's end of the output exchange, the work it started ahead of the child's outputs (a task's
  own subclass, judge_ahead.AheadJudge: attention's references and cuDNN's outputs), and the seconds its judging took;
- `ChildSide`, made by the child process (gpu_harness/child.py) for its one job: the device, clock and cache
  flush (`Calls`), and the child's end of the output exchange.
Two evaluations on one cached task (one that stopped mid-way, then the next; or two at once) thus never see each
other's slots, references or figures.

What a task may still keep on itself is what holds for every evaluation of the process: an imported reference.py,
a compiled reference kernel, the card's measured peaks, the fact that its reference passed its self check.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable
from typing import Any, Protocol

from ..childbox import open_scratch_file

# base.py (Task, Judgement) imports this module: the task passed in here is a base.Task, named in words only (no
# import of base here, not even for the type checker: tests/foundation/test_layering.py), and a judgement is Any

# one call's arrays by name, as base.Arrays (numpy arrays or torch tensors)
Arrays = dict[str, Any]


class OutputExchange(Protocol):
    """One end of one evaluation's output slots (gpu_harness/exchange.py): the child creates them and exports
    into them, the parent attaches and imports; `close` releases what this end holds."""

    def create(self, slot_bytes: int, slots: int, folder: str) -> dict[str, Any]:
        """Child: set up the slots; returns what the parent needs to reach them (JSON)."""

    def export(self, outputs: Arrays, slot: int) -> None:
        """Child: put one call's outputs into slot `slot`, completely, before returning."""

    def attach(self, info: Any, slot_bytes: int, slots: int, folder: str) -> None:
        """Parent: reach the child's slots (`info`: what the child's `create` returned, as received; `folder` is
        the parent's own scratch folder, not the child's word)."""

    def import_(self, params: dict[str, Any], slot: int) -> Arrays:
        """Parent: a private copy of the outputs in slot `slot`; raises ValueError when they are unreadable.
        After it returns, the child may reuse the slot."""

    def close(self) -> None: ...


class Calls(Protocol):
    """The child's device, clock and cache flush, for one child process."""

    def setup(self) -> dict[str, Any]:
        """Import what the child needs; return facts to report (device name, versions)."""

    def sync_error(self) -> str | None:
        """Wait for all device work; return a description of a device error, or None."""

    def flush_cache(self, host_ms: float = 0.0) -> None:
        """Evict the caches, then keep the device busy long enough that a call whose host path takes `host_ms`
        after this returns is queued before the device reaches the call's start event."""

    def time_call(self, thunk: Callable[[], object]) -> float:
        """Milliseconds of one call of thunk, measured around it."""

    def host_outran_flush(self) -> bool:
        """Whether the last timed call's host path outlasted the device work of the flush before it: the device
        then waited on the host inside the timed span, and that wait is in the call's time."""

    def host_ms_after_flush(self) -> float:
        """Milliseconds from the end of the last flush_cache (its device work queued) to the return of the last
        timed call: what the flush's device work must outlast to keep the host out of the call's time."""


NPY_HEADER_MAX = 1 << 16  # room for a .npy header (numpy itself refuses one over 10000 bytes)


class FileOutputs:
    """The output exchange through .npy files in the evaluation's scratch folder, for tasks whose outputs are
    numpy arrays of a few MB (the CPU task). A GPU task's goes through device memory (cuda_device.DeviceOutputs)."""

    def __init__(self, output_names: tuple[str, ...]) -> None:
        self._names = output_names
        self._folder: str | None = None
        self._slots = 0
        self._slot_bytes = 0  # the most bytes of outputs one call makes: a file's data is never more

    def create(self, slot_bytes: int, slots: int, folder: str) -> dict[str, Any]:
        self._folder = folder
        return {}

    def export(self, outputs: Arrays, slot: int) -> None:
        import numpy as np

        for name, arr in outputs.items():
            path = os.path.join(self._slot_folder, f"slot{slot}_{name}.npy")
            np.save(path + ".tmp.npy", arr)
            os.replace(path + ".tmp.npy", path)

    def attach(self, info: Any, slot_bytes: int, slots: int, folder: str) -> None:
        self._folder = folder
        self._slots = slots
        self._slot_bytes = slot_bytes

    @property
    def _slot_folder(self) -> str:
        """The folder of the slots' files (set by create or attach)."""
        assert self._folder is not None
        return self._folder

    def import_(self, params: dict[str, Any], slot: int) -> Arrays:

        if not (isinstance(slot, int) and 0 <= slot < self._slots):
            raise ValueError(f"no output slot {slot!r}")
        out: Arrays = {}
        for name in self._names:
            path = os.path.join(self._slot_folder, f"slot{slot}_{name}.npy")
            try:
                out[name] = self._read_npy(path)
                os.unlink(path)
            except (OSError, ValueError) as e:
                raise ValueError(f"output {name!r} unreadable: {e}") from e
        return out

    def _read_npy(self, path: str) -> Any:
        """The array of one slot file. The child can write the folder (childbox.open_scratch_file): the file must
        be a regular one of at most a slot's bytes plus a header, and its header must describe exactly the data
        that follows, before numpy allocates what the header claims."""
        import numpy as np

        limit = self._slot_bytes + NPY_HEADER_MAX
        with open_scratch_file(path) as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"the file holds more than the {self._slot_bytes} bytes a slot holds")
        buf = io.BytesIO(data)
        version = np.lib.format.read_magic(buf)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read_header:
            raise ValueError(f".npy format {version} is not one np.save writes here")
        shape, _, dtype = read_header[version](buf)
        if dtype.hasobject or math.prod(shape) * dtype.itemsize != len(data) - buf.tell():
            raise ValueError(f"its header ({shape} {dtype}) does not describe its {len(data) - buf.tell()} bytes")
        return np.load(io.BytesIO(data), allow_pickle=False)

    def close(self) -> None:
        pass


class JudgeSide:
    """The judge's state of one evaluation of `task`. This base judges each output with the task's own `judge`
    (a pure function: it regenerates the inputs and computes the reference); a task that works ahead of the
    child's outputs subclasses it (judge_ahead.AheadJudge)."""

    def __init__(self, task: Any) -> None:
        self.task = task
        self.exchange: OutputExchange = task.new_exchange()
        self.seconds: dict[str, float] = {}  # the judge's time by part (inputs, reference, ...), when measured

    def attach(self, info: Any, slot_bytes: int, slots: int, folder: str) -> None:
        self.exchange.attach(info, slot_bytes, slots, folder)

    def import_outputs(self, params: dict[str, Any], slot: int) -> Arrays:
        return self.exchange.import_(params, slot)

    def ahead(self, items: list[tuple[dict[str, Any], int, bool]]) -> None:
        """The (params, seed, sets_tolerance) that `judge` will be called with, in order (sets_tolerance: the
        call has no tolerance yet and measures one): a judge may start work for them in the background (the
        reference, a vendor's output). `close` ends it."""

    def judge(
        self,
        params: dict[str, Any],
        seed: int,
        outputs: Arrays,
        tolerance: float | None = None,
        spot_check: bool = False,
    ) -> Any:
        """The task's Judgement of these outputs (Task.judge)."""
        return self.task.judge(params, seed, outputs, tolerance=tolerance, spot_check=spot_check)

    def stop_ahead(self) -> None:
        """Stop the work started ahead (the seconds it measured stay)."""

    def close(self) -> None:
        self.stop_ahead()
        self.exchange.close()


class ChildSide:
    """The candidate's process's side of its one evaluation of `task`: the device, clock and cache flush, and
    the child's end of the output exchange."""

    def __init__(self, task: Any) -> None:
        self.calls: Calls = task.new_calls()
        self.exchange: OutputExchange = task.new_exchange()

    def setup(self) -> dict[str, Any]:
        return self.calls.setup()

    def sync_error(self) -> str | None:
        return self.calls.sync_error()

    def flush_cache(self, host_ms: float = 0.0) -> None:
        self.calls.flush_cache(host_ms)

    def time_call(self, thunk: Callable[[], object]) -> float:
        return self.calls.time_call(thunk)

    def host_outran_flush(self) -> bool:
        return self.calls.host_outran_flush()

    def host_ms_after_flush(self) -> float:
        return self.calls.host_ms_after_flush()

    def create_exchange(self, slot_bytes: int, slots: int, folder: str) -> dict[str, Any]:
        return self.exchange.create(slot_bytes, slots, folder)

    def export_outputs(self, outputs: Arrays, slot: int) -> None:
        self.exchange.export(outputs, slot)
