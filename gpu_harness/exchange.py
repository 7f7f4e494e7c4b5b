"""How outputs travel from the candidate's process to the judge without a copy through host memory.

The child owns a ring of output slots: one device allocation (`cuMemAlloc`, not torch's caching allocator,
so that the CUDA IPC handle covers exactly this buffer) cut into equal slots. After each judged call it copies
the outputs into a free slot (device to device, microseconds), synchronises, and names the slot in its
message. The parent maps the same allocation through CUDA IPC, copies the slot into memory of its own at once
(before judging anything, so nothing the candidate does later can change what is judged) and frees the slot.

Where things go in a slot is decided by the parent from the scenario's parameters (the task's output
layout); the child's message names only the slot number, which the parent bounds-checks. A slot count is
small: the child waits for a free slot when the parent is behind, which is the flow control.

Before this, outputs went through .npy files: about 0.1 s per judged output of 64 MB on an H200 host
(docs/benchmarks.md, "Where a timed evaluation spends its time").
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


# How many outputs the child may run ahead of the judge (>= the timed calls judged per scenario + 1). In a full
# attention grid on an H200 the child waits ~12 s for a slot and the judge ~10 s for the child, of a 25 s
# correctness phase; 8 slots did not change that (14 s and 8 s, on a machine slower in everything that day),
# so the two take turns for another reason (they share the GPU by time slices), and 4 stay.
SLOTS = 4
ALIGN = 256  # each tensor in a slot starts on this boundary


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]  # CUipcMemHandle


class ExchangeError(RuntimeError):
    """CUDA IPC is not usable here (the message says which driver call failed)."""


def _driver() -> ctypes.CDLL:
    # The driver library is loaded by any CUDA process already; its entry points are stable across versions.
    lib = ctypes.CDLL("libcuda.so.1")
    ptr = ctypes.POINTER(ctypes.c_uint64)
    lib.cuMemAlloc_v2.argtypes = [ptr, ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_IpcHandle), ctypes.c_uint64]
    lib.cuIpcOpenMemHandle_v2.argtypes = [ptr, _IpcHandle, ctypes.c_uint]
    lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
    for f in (
        lib.cuMemAlloc_v2,
        lib.cuMemFree_v2,
        lib.cuIpcGetMemHandle,
        lib.cuIpcOpenMemHandle_v2,
        lib.cuIpcCloseMemHandle,
    ):
        f.restype = ctypes.c_int
    return lib


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise ExchangeError(f"{what} failed with CUDA driver error {rc}")


class _DeviceBytes:
    """A raw device range as an object torch.as_tensor can view without copying."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 2}


def _view(ptr: int, nbytes: int) -> torch.Tensor:
    import torch

    return torch.as_tensor(_DeviceBytes(ptr, nbytes), device="cuda")


class DeviceExchange:
    """One side of the slot ring. `create` in the child, `attach` (with the child's handle) in the parent.

    The CUDA context of the calling thread must be current (torch has initialised the device)."""

    def __init__(self, ptr: int, slot_bytes: int, slots: int, owned: bool) -> None:
        self._ptr: int | None = ptr  # None once closed
        self.slot_bytes, self.slots, self._owned = slot_bytes, slots, owned
        self.bytes: torch.Tensor | None = _view(ptr, slot_bytes * slots)  # uint8 tensor over the whole ring

    @classmethod
    def create(cls, slot_bytes: int, slots: int = SLOTS) -> tuple[DeviceExchange, str]:
        """Allocate the ring; returns it and the IPC handle (hex) for the parent."""
        drv = _driver()
        ptr = ctypes.c_uint64()
        slot_bytes = aligned(max(1, slot_bytes))
        _check(drv.cuMemAlloc_v2(ctypes.byref(ptr), slot_bytes * slots), "cuMemAlloc")
        handle = _IpcHandle()
        _check(drv.cuIpcGetMemHandle(ctypes.byref(handle), ptr.value), "cuIpcGetMemHandle")
        raw = ctypes.string_at(ctypes.addressof(handle), 64)  # all 64 bytes: the handle may hold NULs
        return cls(ptr.value, slot_bytes, slots, owned=True), raw.hex()

    @classmethod
    def attach(cls, handle_hex: str, slot_bytes: int, slots: int = SLOTS) -> DeviceExchange:
        """Map the child's ring. The sizes come from the parent's own computation, not from the child."""
        raw = bytes.fromhex(handle_hex)
        if len(raw) != 64:
            raise ExchangeError(f"an IPC handle has 64 bytes, got {len(raw)}")
        handle = _IpcHandle()
        ctypes.memmove(ctypes.byref(handle), raw, 64)
        ptr = ctypes.c_uint64()
        _check(_driver().cuIpcOpenMemHandle_v2(ctypes.byref(ptr), handle, 1), "cuIpcOpenMemHandle")
        return cls(ptr.value, aligned(max(1, slot_bytes)), slots, owned=False)

    def slot(self, index: int, offset: int, nbytes: int) -> torch.Tensor:
        """The uint8 view of bytes [offset, offset + nbytes) of slot `index` (bounds-checked)."""
        if not (isinstance(index, int) and 0 <= index < self.slots):
            raise ValueError(f"no slot {index!r} (there are {self.slots})")
        if offset < 0 or offset + nbytes > self.slot_bytes:
            raise ValueError(f"bytes {offset}..{offset + nbytes} do not fit a slot of {self.slot_bytes}")
        start = index * self.slot_bytes + offset
        assert self.bytes is not None  # (not closed)
        return self.bytes[start : start + nbytes]

    def close(self) -> None:
        if self._ptr is None:
            return
        self.bytes = None
        drv = _driver()
        if self._owned:
            drv.cuMemFree_v2(self._ptr)
        else:
            drv.cuIpcCloseMemHandle(self._ptr)
        self._ptr = None


class SlotRing:
    """The child's bookkeeping of which slots the parent has freed. `take` reads the command channel until one
    is free, `wait_for` until a given one is (the parent frees each slot as soon as it has copied it)."""

    def __init__(self, slots: int) -> None:
        self.free = list(range(slots))

    def take(self, next_command: Callable[[], dict[str, Any]]) -> int:
        self._read_until(lambda: bool(self.free), next_command)
        return self.free.pop(0)

    def wait_for(self, index: int, next_command: Callable[[], dict[str, Any]]) -> None:
        """Until slot `index` is free again (freed slots noted on the way)."""
        self._read_until(lambda: index in self.free, next_command)

    def _read_until(self, done: Callable[[], bool], next_command: Callable[[], dict[str, Any]]) -> None:
        while not done():
            cmd = next_command()
            if cmd.get("cmd") == "exit":
                raise SystemExit(0)
            if cmd.get("cmd") != "free":
                raise ValueError(f"expected a freed slot, got {cmd!r}")
            self.release(cmd["slot"])

    def release(self, index: int) -> None:
        if index not in self.free:
            self.free.append(index)
