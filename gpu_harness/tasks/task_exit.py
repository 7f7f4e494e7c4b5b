"""os._exit() in a task's own code (reference.py) is the task's error, never the judge's end.

The judge runs reference.py in its own process (data_task.py): a sys.exit() there is a SystemExit it catches, but
os._exit() ends a process without unwinding, so `eval` and `task check` stopped with the task's exit code and no
word at all. No child process can hold the reference (its inputs and outputs are the judge's own arrays, on the
GPU for a cuda task), so while the judge's thread runs task code (`task_code()`), os._exit on that thread raises
TaskCodeExit in its place, which the judge reports as a task error. Everywhere else os._exit is the real one:
another thread, a process the task code forked (its pid differs), any code outside the window. What no Python
call can stop, a C library's exit() or a signal the code sends itself, still ends the process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

_REAL_EXIT = os._exit
# (pid, thread) of each judge thread running task code now: only there does os._exit raise.
_RUNNING_TASK_CODE: set[tuple[int, int]] = set()
_INSTALL_LOCK = threading.Lock()


class TaskCodeExit(SystemExit):
    """os._exit(code) called by a task's code on the judge's thread (a SystemExit, so every place that reports a
    task's SystemExit as its error reports this one too)."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code

    def __str__(self) -> str:
        return f"os._exit({self.exit_code})"


def _exit_unless_task_code(status: int) -> NoReturn:
    if (os.getpid(), threading.get_ident()) in _RUNNING_TASK_CODE:
        raise TaskCodeExit(status)
    _REAL_EXIT(status)


def _install() -> None:
    """Put the router in os._exit's place (and posix._exit's, the same function under its own module's name),
    once: outside task code it passes every call to the real one, so leaving it installed changes nothing."""
    with _INSTALL_LOCK:
        if os._exit is _exit_unless_task_code:
            return
        os._exit = _exit_unless_task_code
        posix: Any = sys.modules.get("posix")  # (Any: typeshed's posix has no _exit of its own)
        if posix is not None and getattr(posix, "_exit", None) is _REAL_EXIT:
            posix._exit = _exit_unless_task_code


@contextmanager
def task_code() -> Iterator[None]:
    """While the block runs task code on this thread, os._exit there raises TaskCodeExit (nested blocks keep it)."""
    _install()
    running = (os.getpid(), threading.get_ident())
    outermost = running not in _RUNNING_TASK_CODE
    _RUNNING_TASK_CODE.add(running)
    try:
        yield
    finally:
        if outermost:
            _RUNNING_TASK_CODE.discard(running)
