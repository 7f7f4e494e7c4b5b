"""A folder of problems of one shared format (a KernelBench level, gpu-mode's problems, a FlashInfer-Bench trace
set) imported as a suite: `task import-kernelbench|import-gpumode|import-flashinfer FOLDER`.

Each problem is imported (its format's importer: the problem's code runs in a child process) and its folder
checked (`python -m gpu_harness task check`, in a child process as a user would run it), by a bounded pool of
`jobs` workers, each driving one problem's child processes at a time (the problem's code never runs in this
process). A line per problem says how far the suite is (N/M), the problem, its outcome and the seconds it took.
What cannot come here (a KernelBench hub download) is refused before the pool starts, without running anything.
What differs between the formats is a SuiteFormat (kernelbench_suite.py, gpumode.py, flashinfer.py): how a
folder's problems are found and named, what a problem's source is, how it is imported.

The suite's manifest, suite.json in the output folder, is rewritten after every problem: the format, each
problem's file, the sha256 of its source, what it imported as (the task's name, scenarios, notes, its check) or
why not. A second run on the same folder is resumable: a problem imported and checked before, whose folder still
holds the same source and files (the check's key: the folder's files and torch's version), is skipped; one
imported but not checked (the run was stopped) is checked; a folder that holds another version of the problem is
left alone and said. docs/tasks.md, "Importing a KernelBench level as a suite", describes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .problem_import import ProblemImportError, torch_version

MANIFEST = "suite.json"
LOCK = ".suite.lock"
IMPORTED, REFUSED, CHECK_FAILED = "imported", "refused", "check failed"
UNCHECKED = "imported, not checked"  # its check needs more memory than this machine has
# What a task check holds at once, in multiples of its smallest scenario's tensors: the inputs, a model built per
# weight, the float64 baseline's widened copies, the forward's own (KernelBench level 2 #55, 4 GiB of weights:
# 13 GiB resident when the OOM killer ended it)
CHECK_COPIES = 4


@dataclass(frozen=True)
class SuiteFormat:
    """What a suite needs of a problem format."""

    name: str  # the manifest's "format": kernelbench, gpumode, flashinfer
    command: str  # the CLI command that imports it (the manifest's written_by)
    problems: Callable[..., Any]  # (folder) -> the folder's problems (files or folders), in the format's order
    default_name: Callable[..., Any]  # (problem) -> its task's name
    source: Callable[..., Any]  # (problem) -> the bytes its import is a function of (its sha256 is the manifest's)
    held: Callable[..., Any]  # (task folder) -> the same bytes of the copy the folder holds, or None
    import_problem: Callable[..., Any]  # (problem, name, parent, timeout_s) -> (notes, probe cached)
    refused_at_once: Callable[..., Any] = lambda problem, source: (
        None
    )  # why not, read without running anything, or None


@dataclass
class Problem:
    """One problem of the suite (a file or a folder) and what became of it (a manifest entry)."""

    file: str
    sha256: str
    name: str
    outcome: str = ""  # IMPORTED (and its check passed), REFUSED (reason), CHECK_FAILED (reason)
    reason: str = ""
    scenarios: list[Any] = field(default_factory=list)
    notes: list[Any] = field(default_factory=list)
    abi: str = ""
    check: str = ""  # what the check said it ran, on success
    check_key: str = ""  # check_key() of the folder its check passed on
    import_s: float = 0.0
    check_s: float = 0.0
    probe_cached: bool = False

    def entry(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", [], None) or k in ("file", "outcome")}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_key(folder: Path) -> str:
    """What a task check's outcome is a function of: the folder's files (each by its path, caches and hidden
    files aside) and torch's version."""
    h = hashlib.sha256(torch_version().encode())
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and "__pycache__" not in rel.parts and not rel.name.startswith("."):
            h.update(f"{rel.as_posix()}\0{_sha256(path.read_bytes())}\0".encode())
    return h.hexdigest()


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[1])


def run_check(folder: Path, timeout_s: float, threads: int) -> tuple[bool, str]:
    """`task check FOLDER` in a child process: (passed, what it ran on, or why not)."""
    from .procs import run_bounded

    env = dict(os.environ)
    # this checkout's harness in the child, and no more torch threads than the pool leaves each worker
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", str(threads))
    cmd = [sys.executable, "-m", "gpu_harness", "task", "check", str(folder)]
    done = run_bounded(cmd, timeout_s, env=env)
    if done.timed_out:
        return False, f"task check did not finish within {timeout_s:g} s"
    if done.returncode == -9:
        return False, "task check was killed (SIGKILL: out of memory?)"
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        return False, "; ".join(lines[-4:]) or f"task check exited {done.returncode}"
    ran = next((line.strip() for line in done.stdout.splitlines() if line.strip().startswith("reference")), "")
    return True, " ".join(ran.split()[1:]) if ran else "OK"


class MemoryBudget:
    """The memory the checks in flight may hold together: a check waits until its share is free, so two large
    ones never run at once, and one larger than the whole is not run (the OOM killer would end it, and whatever
    else it picked, with no sentence)."""

    def __init__(self, total: int) -> None:
        self.total, self.free = total, total
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def hold(self, need: int) -> Iterator[None]:
        need = min(need, self.total)
        with self.changed:
            self.changed.wait_for(lambda: self.free >= need)
            self.free -= need
        try:
            yield
        finally:
            with self.changed:
                self.free += need
                self.changed.notify_all()


def available_memory() -> int:
    """Bytes this machine can give now (MemAvailable), else its physical memory."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(folder: Path) -> int:
    """What the task check of the folder is expected to hold: CHECK_COPIES x its smallest scenario's tensors."""
    from .taskspec import DTYPES, TaskSpecError, load_spec

    try:
        spec = load_spec(folder)
    except (TaskSpecError, OSError):
        return 0  # the check says what is wrong, at no cost
    params = spec.smallest_scenario().params
    tensors = [a for a in spec.args if a.is_tensor]
    return CHECK_COPIES * sum(
        math.prod(spec.shape(a, params)) * DTYPES[spec.dtype(a, params)].itemsize for a in tensors
    )


@dataclass
class Settings:
    fmt: SuiteFormat
    out: Path
    timeout_s: float
    jobs: int
    threads: int  # torch threads per check child
    memory: MemoryBudget


def import_one(path: Path, p: Problem, settings: Settings, check_only: bool) -> Problem:
    """Import the problem (unless only its check is due) and check its folder; the outcome in `p`."""
    folder = settings.out / p.name
    start = time.perf_counter()
    if not check_only:
        try:
            notes, cached = settings.fmt.import_problem(path, p.name, settings.out, settings.timeout_s)
        except Exception as e:  # a refusal says why; anything else is the importer's fault, said as such
            why = str(e) if isinstance(e, ProblemImportError) else f"the importer failed: {type(e).__name__}: {e}"
            p.outcome, p.reason, p.import_s = REFUSED, why, time.perf_counter() - start
            return p
        p.notes, p.probe_cached = list(notes), cached
    p.import_s = time.perf_counter() - start
    need = check_memory(folder)
    if need > settings.memory.total:
        p.outcome, p.reason = (
            UNCHECKED,
            (
                f"its task check needs about {need / (1 << 30):.3g} GiB ({CHECK_COPIES} x its smallest scenario's"
                f" tensors), more than the {settings.memory.total / (1 << 30):.3g} GiB this machine has available: check"
                f" it where there is more (python -m gpu_harness task check {folder})"
            ),
        )
        p.abi, p.scenarios = _described(folder)
        return p
    with settings.memory.hold(need):
        start = time.perf_counter()
        passed, said = run_check(folder, settings.timeout_s, settings.threads)
        p.check_s = time.perf_counter() - start
    if passed:
        p.outcome, p.check, p.check_key, p.reason = IMPORTED, said, check_key(folder), ""
    else:
        p.outcome, p.reason = CHECK_FAILED, said
    p.abi, p.scenarios = _described(folder)
    return p


def _described(folder: Path) -> tuple[str, list[Any]]:
    """The task's declaration, as the agent is shown it, and its scenarios' cases (main, half, ...); empty where
    the folder does not load."""
    from .taskspec import TaskSpecError, load_spec

    try:
        spec = load_spec(folder)
    except (TaskSpecError, OSError):
        return "", []
    return spec.abi(), [sc.id.split("_")[0] for sc in spec.scenarios]


@dataclass
class Suite:
    """The manifest: the format, the source folder and every problem's entry, written after each one."""

    fmt: SuiteFormat
    source: Path
    out: Path
    problems: dict[str, Any]  # file -> Problem
    started: float = field(default_factory=time.perf_counter)

    def counts(self) -> dict[str, Any]:
        counts = {IMPORTED: 0, UNCHECKED: 0, REFUSED: 0, CHECK_FAILED: 0}
        for p in self.problems.values():
            if p.outcome:
                counts[p.outcome] += 1
        return counts

    def write(self) -> Path:
        manifest = {
            "suite": self.source.resolve().name,
            "format": self.fmt.name,
            "folder": str(self.out.resolve()),
            "source": str(self.source.resolve()),
            "written_by": self.fmt.command,
            "torch": torch_version(),
            "counts": self.counts(),
            "problems": [p.entry() for p in self.problems.values()],
        }
        path = self.out / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.{os.getpid()}")
        tmp.write_text(json.dumps(manifest, indent=1) + "\n")
        os.replace(tmp, path)  # a stopped run leaves the previous manifest whole
        return path


def previous_entries(out: Path) -> dict[str, Any]:
    """file -> its entry in the manifest a previous run wrote ({} where there is none or it does not parse)."""
    try:
        data = json.loads((out / MANIFEST).read_text())
        return {e["file"]: e for e in data.get("problems", []) if isinstance(e, dict) and "file" in e}
    except (OSError, ValueError, TypeError):
        return {}


def _to_problem(entry: dict[str, Any]) -> Problem:
    known = set(Problem.__dataclass_fields__)
    return Problem(**{k: v for k, v in entry.items() if k in known})


def plan_problem(
    fmt: SuiteFormat, path: Path, out: Path, before: dict[str, Any], taken: dict[str, Any]
) -> tuple[Problem, str]:
    """The problem and what to do with it: "done" (refused at once), "skip" (imported and checked before, nothing
    changed since), "check" (its folder is written, its check is due) or "import"."""
    try:
        source = fmt.source(path)
    except ProblemImportError as e:  # its files cannot be read as the format's: said, nothing run
        return Problem(file=path.name, sha256="", name=fmt.default_name(path), outcome=REFUSED, reason=str(e)), "done"
    p = Problem(file=path.name, sha256=_sha256(source), name=fmt.default_name(path))
    if p.name in taken:
        p.outcome, p.reason = REFUSED, f"its task name {p.name} is {taken[p.name]}'s already"
        return p, "done"
    taken[p.name] = path.name
    if why := fmt.refused_at_once(path, source.decode(errors="replace")):
        p.outcome, p.reason = REFUSED, why
        return p, "done"
    folder = out / p.name
    if not folder.exists():
        return p, "import"
    held = fmt.held(folder)
    if held is None or _sha256(held) != p.sha256:
        p.outcome = REFUSED
        p.reason = f"{folder} holds another version of {path.name} (or none): remove it to import this one"
        return p, "done"
    old = before.get(path.name)
    if old and old.get("sha256") == p.sha256 and old.get("outcome") == IMPORTED:
        if old.get("check_key") == check_key(folder):
            return _to_problem(old), "skip"
    if old and old.get("sha256") == p.sha256:
        p.notes = old.get("notes", [])
    return p, "check"


@contextlib.contextmanager
def suite_lock(out: Path) -> Iterator[None]:
    """One import at a time writes a suite folder (a second would race on its folders and manifest)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProblemImportError(f"{out}: another import is writing this suite") from None
        yield


def _clear_partial(out: Path) -> None:
    """Folders a stopped import left half written (write_task_folder stages them under `.NAME.importing-*`)."""
    for staged in out.glob(".*.importing-*"):
        shutil.rmtree(staged, ignore_errors=True)


def _line(k: int, total: int, p: Problem, seconds: float, action: str) -> str:
    width = len(str(total))
    head = f"[{k:>{width}}/{total}] {p.file}: "
    if action == "skip":
        return head + f"skipped: imported as {p.name} before (same source, check passed) ({seconds:.1f} s)"
    if p.outcome == IMPORTED:
        scen = f" ({', '.join(p.scenarios)})" if p.scenarios else ""
        cached = ", probe cached" if p.probe_cached else ""
        what = "checked" if action == "check" else "imported as"
        return head + f"{what} {p.name}{scen}{cached}, check passed ({seconds:.1f} s)"
    return head + f"{p.outcome}: {p.reason} ({seconds:.1f} s)"


def import_suite(
    fmt: SuiteFormat, source: Path, out: Path, jobs: int, timeout_s: float, progress: Callable[[str], None]
) -> Suite:
    """Import every problem of `source` into `out` (a task folder each, and suite.json), `jobs` at a time;
    `progress(line)` gets a line per problem as it completes. Refusals are outcomes, not errors."""
    files = fmt.problems(source)
    if not files:
        raise ProblemImportError(f"{source}: no {fmt.name} problems in it")
    with suite_lock(out):
        _clear_partial(out)
        before = previous_entries(out)
        taken: dict[str, Any] = {}
        suite = Suite(fmt, source, out, {})
        planned = [(path, *plan_problem(fmt, path, out, before, taken)) for path in files]
        for _path, p, _action in planned:
            suite.problems[p.file] = p
        threads = max(1, (os.cpu_count() or 1) // jobs)
        settings = Settings(fmt, out, timeout_s, jobs, threads, MemoryBudget(int(0.8 * available_memory())))
        done = 0
        for _path, p, action in planned:  # known at once: hub downloads, clashes, skips
            if action in ("done", "skip"):
                done += 1
                progress(_line(done, len(files), p, 0.0, action))
        suite.write()
        todo = [(path, p, action) for path, p, action in planned if action in ("import", "check")]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            started = {
                pool.submit(import_one, path, p, settings, action == "check"): (p, action) for path, p, action in todo
            }
            try:
                for future in as_completed(started):
                    p, action = started[future]
                    p = _outcome(future, p)
                    done += 1
                    suite.problems[p.file] = p
                    suite.write()
                    progress(_line(done, len(files), p, p.import_s + p.check_s, action))
            except KeyboardInterrupt:  # the problems in flight finish (or time out); none is started after
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    return suite


def _outcome(future: Future[Problem], p: Problem) -> Problem:
    """The problem's outcome; an error of the suite's own code (not the problem's) is said as a failed check."""
    try:
        return future.result()
    except Exception as e:
        p.outcome, p.reason = CHECK_FAILED, f"the importer failed: {type(e).__name__}: {e}"
        return p
