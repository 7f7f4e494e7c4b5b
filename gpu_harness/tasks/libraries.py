"""The libraries a task's baselines need: whether they import here, and their installed versions (the generic
task's, gpu_harness/tasks/data_task.py, which the reference.py files import module_version from)."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Mapping

# How much of a failed import's message a note keeps: its first line, cut to this many characters
IMPORT_MESSAGE_CHARS = 160


def _import_error(module: str, e: Exception) -> str:
    """Why `module` does not import, as a note says it: the exception's type, and its message's first line unless
    the module itself (or its package) is not installed, which the note's first words already name. So a missing
    dependency is named ("ModuleNotFoundError: No module named 'einops'"), and so is what a library's native part
    failed on: flash-attn-4 in a contained child on an H200 gave only "OSError" (2026-12-07)."""
    kind = type(e).__name__
    absent = e.name if isinstance(e, ModuleNotFoundError) else None
    if absent is not None and (module == absent or module.startswith(absent + ".")):
        return kind
    lines = str(e).strip().splitlines()
    return f"{kind}: {lines[0][:IMPORT_MESSAGE_CHARS]}" if lines else kind


def _import_note(requires: tuple[tuple[str, ...], ...]) -> str | None:
    """None when each entry of `requires` has a module that imports here (an entry's modules are alternatives);
    else a note saying which does not, and why (`_import_error`; the baseline is then n/a)."""
    for alternatives in requires:
        errors = []
        for module in alternatives:
            try:
                importlib.import_module(module)
                break
            except Exception as e:
                errors.append(_import_error(module, e))
        else:
            if len(alternatives) == 1:
                return f"{alternatives[0]} does not import here ({errors[0]})"
            names = " nor ".join(alternatives)
            return f"neither {names} imports here ({', '.join(dict.fromkeys(errors))})"
    return None


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> the distributions that install it (one scan of the installed packages a process)."""
    from importlib import metadata

    return metadata.packages_distributions()


def module_version(module: str) -> str | None:
    """`module`'s distribution and version where it is installed ("quack-kernels 0.6.5"), from the package's
    metadata (a module without __version__ has one too); None where it does not import or has none."""
    from importlib import metadata

    top = module.split(".")[0]
    try:
        importlib.import_module(top)
    except Exception:
        return None
    for dist in _distributions().get(top, []):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    version = getattr(sys.modules.get(top), "__version__", None)
    return f"{top} {version}" if version else None
