"""Command line: `python -m gpu_harness eval|compile|scenarios|tasks|task ...`.

Progress goes to stderr, the table to stdout. Exit status: 0 when the verdict is 'correct' (eval) or the
build passes its checks (compile), 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .report import render_table, summary_line
from .terminal import shown_streams

if TYPE_CHECKING:
    from .import_suite import SuiteFormat
    from .result import EvalResult
    from .tasks.data_task import DataTask


def _seconds(text: str) -> float:
    """A --timeout: a number of seconds > 0 (argparse says which argument it is when it is not)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds > 0")
    return value


def _jobs(text: str) -> int:
    """A --jobs: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1")
    return value


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _task_name(arg: str) -> str:
    """A task's name, or a task folder's path (made findable by name, for this process and its children)."""
    from .tasks import use_folder

    return use_folder(arg) if Path(arg, "task.toml").is_file() else arg


def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluate import evaluate

    args.task = _task_name(args.task)
    _check_eval_paths(args)

    scenarios = args.scenarios
    baselines = None if args.baselines is None else _known_baselines(args.task, args.baselines)
    result = evaluate(
        args.task,
        args.kernel,
        scenarios=scenarios,
        baselines=baselines,
        seed=args.seed,
        progress=_progress,
        timeout_s=args.timeout,
        arch=args.arch,
        timing=not args.no_timing,
    )
    print(render_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=1))
    if args.trace:
        append_trace(args.trace, result, args.note)
    return 0 if result.status == "correct" else 1


def _known_baselines(task: str, text: str) -> list[str]:
    """--baselines as a list, each a baseline of the task or best_library where it marks libraries: a mistyped
    name is a bad argument (main: exit 2), not a CORRECT verdict whose figure over it is n/a. (The Python API and
    the service still take any name and note it in `baseline_notes`: a caller may ask every task for the same.)"""
    from .figures import BEST_LIBRARY
    from .tasks import get_task

    t = get_task(task)
    known = list(t.baseline_descriptions())
    names = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [n for n in names if n not in known and not (n == BEST_LIBRARY and t.libraries)]
    if unknown:
        why = "it marks no library" if unknown == [BEST_LIBRARY] else f"known: {', '.join(known)}"
        raise ValueError(f"unknown baseline(s) for task {t.name}: {', '.join(unknown)} ({why})")
    return names


def _check_eval_paths(args: argparse.Namespace) -> None:
    """The paths `eval` reads and writes, checked before the evaluation runs (it may take minutes): a mistyped
    kernel path, or a --json or --trace that cannot be written, is a bad argument (main: exit 2), not a verdict
    with an empty table nor a traceback after the table."""
    kernel = Path(args.kernel)
    if not kernel.exists():
        raise ValueError(f"{args.kernel}: no such kernel file")
    if not kernel.is_file():  # a folder, a FIFO (read, it would wait for ever) or a device: never read as a kernel
        raise ValueError(f"{args.kernel} is not a regular file: a kernel is read from a file")
    for flag, path in (("--json", args.json), ("--trace", args.trace)):
        if path is not None and (why := _unwritable(Path(path))):
            raise ValueError(f"{flag} {path}: {why}")
    if args.note is not None and args.trace is None:  # the note is kept on the trace line alone: else it is lost
        raise ValueError("--note is stored with the trace line: give --trace FILE too")


def _unwritable(path: Path) -> str | None:
    """Why a file cannot be written at `path`, or None where it can (as far as can be told before writing)."""
    import os

    folder = path.parent
    if path.is_dir():
        return "a folder, not a file"
    if not folder.is_dir():
        return f"no folder {folder}"
    if not os.access(path if path.exists() else folder, os.W_OK):
        return "not writable here"
    return None


def append_trace(path: str, result: EvalResult, note: str | None) -> None:
    """One JSON line per evaluation, so that a kernel's history can be replayed in the dashboard."""
    d = result.to_dict()
    line = {"kind": "evaluation", "note": note or "", "summary": summary_line(result), **d}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


def language_of(path: str) -> str:
    suffix = Path(path).suffix
    if suffix == ".cu":
        return "cuda"
    if suffix in (".cpp", ".cc", ".cxx"):
        return "cpp"
    raise ValueError(f"cannot tell the language of {path}: expected .cu or .cpp")


def cmd_compile(args: argparse.Namespace) -> int:
    from .build import build

    status = 0
    for kernel in args.kernels:
        try:
            lang = language_of(kernel)
        except ValueError as e:
            print(f"{kernel}: {e}")
            status = 1
            continue
        arch = args.arch if lang == "cuda" else None
        # nvcc takes half a minute on a large kernel (the released attention: 33 s): say what is under way.
        _progress(f"compiling {kernel} ({lang}{f' for {arch}' if arch else ''}) ...")
        b = build(kernel, lang, arch=arch)
        head = f"{kernel}: {'OK' if b.ok else 'REFUSED' if b.lib_path or 'refused' in (b.reason or '') else 'FAILED'}"
        print(head + ("" if b.ok else f": {b.reason}"))
        if b.lib_path or b.kernels:
            print(
                f"  {'cached build' if b.cache_hit else f'compiled in {b.compile_s:.1f}s'}"
                + (f" for {b.arch}" if b.arch else "")
            )
            for line in b.resource_lines():
                print("  " + line)
            spills = sum(k.get("spill_stores", 0) + k.get("spill_loads", 0) for k in b.kernels.values())
            if spills:
                print(f"  warning: {spills} bytes of register spills")
            if b.undefined_symbols:
                print("  imports: " + " ".join(sorted({s.split("@")[0] for s in b.undefined_symbols})))
        if not b.ok and b.log and args.verbose:
            print(b.log)
        if not b.ok:
            status = 1
    return status


def cmd_scenarios(args: argparse.Namespace) -> int:
    from .tasks import get_task

    t = get_task(_task_name(args.task))
    items = t.select("quick" if args.quick else "full")
    for s in items:
        print(f"{s.id}\t{json.dumps(s.params)}\t{s.flops / 1e9:.4g} GFLOP")
    print(f"{len(items)} scenarios", file=sys.stderr)
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    """Every task, one line each; a folder that is not a valid task is said on stderr with its problems (the
    others are still listed) and the exit status is then 1."""
    from .tasks import TaskError, get_task, list_tasks, task_folders
    from .taskspec import TaskSpecError

    broken = 0
    for name in list_tasks():
        try:
            t = get_task(name)
        except (TaskSpecError, TaskError) as e:
            broken += 1
            lines = [str(p) for p in e.problems] if isinstance(e, TaskSpecError) else [f"task error: {e}"]
            print(f"{name}: NOT a valid task ({task_folders()[name]}):", file=sys.stderr)
            for line in lines:
                print(f"  {line}", file=sys.stderr)
            continue
        print(f"{name}\t{t.language}\t{len(t.scenarios())} scenarios ({len(t.quick_ids())} quick)\t{t.abi}")
    return 1 if broken else 0


def cmd_task_new(args: argparse.Namespace) -> int:
    from .taskscaffold import scaffold

    folder = scaffold(args.name, args.dir, target=args.target)
    kernel = "kernel.cu" if args.target == "cuda-sm90" else "kernel.cpp"
    print(f"wrote {Path(folder).resolve()}/: task.toml, reference.py, {kernel} (a stub that says 'not supported')")
    print(f"next: edit them, then `python -m gpu_harness task check {folder}`")
    print(_how_the_dashboard_finds(folder))
    return 0


def _how_the_dashboard_finds(folder: Path) -> str:
    """The hint after a folder is written: where it lies, and what makes the dashboard offer it (a folder outside
    the task roots is judged by path, but no server or worker finds it by name)."""
    from .tasks import BUILTIN_TASKS_DIR, TASKS_DIR_ENV, task_folders, task_roots

    where = Path(folder).resolve()
    taken = task_folders().get(where.name)
    if taken is not None and taken != where:  # the first folder of a name wins (docs/tasks.md)
        return (
            f"note: the task {where.name!r} is already {taken}, which is found first by that name: the server, its "
            f"workers and `eval {where.name}` take that one, never {where}. Give this folder another name for them "
            f"to find it (it is still judged by its path: `eval {where}`)"
        )
    sync = "`.venv/bin/python manage.py sync_tasks` (`make run` runs it at every start)"
    if where.parent in {root.resolve() for root in task_roots()}:
        return f"then: the dashboard lists it after {sync}"
    return (
        f"then: {where} is not where tasks are found ({BUILTIN_TASKS_DIR} or a folder in {TASKS_DIR_ENV}). "
        f"For the dashboard, move it into {BUILTIN_TASKS_DIR} (or write it there: `--dir tasks` in the "
        f"repository), or set "
        f"{TASKS_DIR_ENV}={where.parent} for the server and its workers; then {sync}"
    )


TORCH_MISSING = (
    "task import-kernelbench runs the problem's Model, which needs torch, and torch is not installed here: "
    "install it (`pip install torch`; in this checkout `.venv/bin/pip install -e '.[gpu]'`) and run it again"
)


def cmd_task_import_kernelbench(args: argparse.Namespace) -> int:
    """Turn a KernelBench problem file into a cuda-sm90 task folder (gpu_harness/kernelbench.py), or every problem
    of a folder (a level) into a suite (gpu_harness/kernelbench_suite.py); a problem it cannot import is a
    ValueError, which main() prints and exits 2 on."""
    from .kernelbench import import_kernelbench

    # The probe child would die on its first import, and its traceback would be all the user saw.
    if not _has_torch():
        print(f"error: {TORCH_MISSING}", file=sys.stderr)
        return 2
    source = _kernelbench_source(args.file, args.level)
    if source.is_dir():
        return _import_suite(source, args)
    if args.jobs is not None:
        raise ValueError("--jobs is for a folder of problems (a suite), not one file")
    done = import_kernelbench(source, name=args.name, parent=args.dir or ".", timeout_s=args.timeout)
    plan = done.plan
    print(f"wrote {done.folder}/: task.toml, reference.py, problem.py (a copy of {args.file})")
    print(f"  args       {', '.join(f'{t.name}{t.dims}' for t in plan.tensors)}")
    print(f"             scalars: {', '.join(s['name'] for s in plan.scalars) or 'none'}")
    print(f"  scenarios  {', '.join(p['case'] for p in plan.scenarios)} ({len(plan.quick)} quick)")
    for note in plan.notes:
        print(f"  note       {note}")
    print(f"next: edit [formulas] flops if the count is not the useful work, then `python -m gpu_harness task check "
          f"{done.folder}`")  # fmt: skip
    print(_how_the_dashboard_finds(done.folder))
    return 0


def _kernelbench_source(path: str, level: int | None) -> Path:
    """The problem file or folder: with --level, PATH is a KernelBench checkout (its KernelBench/levelN) or the
    folder that holds levelN."""
    if level is None:
        return Path(path)
    for candidate in (Path(path) / "KernelBench" / f"level{level}", Path(path) / f"level{level}"):
        if candidate.is_dir():
            return candidate
    raise ValueError(f"{path}: no KernelBench/level{level} or level{level} folder in it")


def _import_suite(source: Path, args: argparse.Namespace, fmt: SuiteFormat | None = None) -> int:
    """Every problem of the folder, `--jobs` at a time, into `--dir` (default <format>_<folder>) with suite.json;
    exit 0 when each one was imported and checked or refused with its reason, 1 when a check failed."""
    import os

    from .import_suite import CHECK_FAILED, IMPORTED, REFUSED, UNCHECKED, import_suite
    from .kernelbench_suite import KERNELBENCH

    fmt = fmt or KERNELBENCH
    if args.name is not None:
        raise ValueError("--name is for one problem; a folder's tasks are named after their problems")
    out = Path(args.dir or f"{fmt.name}_{source.resolve().name}")
    jobs = args.jobs or os.cpu_count() or 1
    _progress(f"importing {len(fmt.problems(source))} problem(s) of {source} into {out}/, {jobs} at a time")
    suite = import_suite(fmt, source, out, jobs=jobs, timeout_s=args.timeout, progress=_progress)
    manifest = suite.write()
    counts = suite.counts()
    took = time.perf_counter() - suite.started
    print(f"{source.name}: {counts[IMPORTED]} imported and checked, {counts[UNCHECKED]} imported but too large to "
          f"check here, {counts[REFUSED]} refused, {counts[CHECK_FAILED]} failed their check, in {took:.0f} s "
          f"({jobs} at a time)")  # fmt: skip
    print(f"manifest: {manifest.resolve()} (each problem, what it imported as, or why not)")
    if any(p.outcome == IMPORTED for p in suite.problems.values()):
        print(_how_the_dashboard_finds_suite(out))
    return 1 if counts[CHECK_FAILED] else 0


def _how_the_dashboard_finds_suite(out: Path) -> str:
    """The hint after a suite is written: a suite folder is a task root (docs/tasks.md, "Suites in the
    dashboard"), so the dashboard finds its tasks, and reads suite.json, only where KSEEK_TASKS_DIR names it;
    moving one of its task folders into tasks/ (the hint for one task) would leave the suite behind."""
    from .tasks import TASKS_DIR_ENV, task_roots

    where = out.resolve()
    sync = "`.venv/bin/python manage.py sync_tasks` (`make run` runs it at every start)"
    if where in {root.resolve() for root in task_roots()}:
        return f"then: the dashboard lists its tasks, and the suite under Suites, after {sync}"
    return (
        f"then: {where} is not where tasks are found. For the dashboard, set {TASKS_DIR_ENV}={where} for the "
        f"server and its workers (a suite folder is a task root: its tasks, and the suite under Suites); then {sync}"
    )


def cmd_task_import_gpumode(args: argparse.Namespace) -> int:
    """A gpu-mode problem folder (task.yml + reference.py) as a task folder, or a folder of them as a suite."""
    from .gpumode import SUITE, TASK_YML, import_gpumode

    if not _has_torch():
        print(f"error: {TORCH_MISSING.replace('import-kernelbench', 'import-gpumode')}", file=sys.stderr)
        return 2
    source = Path(args.path)
    if source.is_dir() and not (source / TASK_YML).is_file():
        return _import_suite(source, args, SUITE)
    if args.jobs is not None:
        raise ValueError("--jobs is for a folder of problems (a suite), not one problem")
    done = import_gpumode(source, name=args.name, parent=args.dir or ".", timeout_s=args.timeout)
    print(f"wrote {done.folder}/: task.toml, reference.py, problem/ (the problem's files)")
    _print_imported(done.folder, done.plan.notes)
    return 0


def cmd_task_import_flashinfer(args: argparse.Namespace) -> int:
    """A FlashInfer-Bench definition (with its workloads) as a task folder, or a folder of them as a suite."""
    from .flashinfer import SUITE, import_flashinfer

    if not _has_torch():
        print(f"error: {TORCH_MISSING.replace('import-kernelbench', 'import-flashinfer')}", file=sys.stderr)
        return 2
    source = Path(args.path)
    if source.is_dir():
        return _import_suite(source, args, SUITE)
    if args.jobs is not None:
        raise ValueError("--jobs is for a folder of definitions (a suite), not one definition")
    done = import_flashinfer(source, name=args.name, parent=args.dir or ".", timeout_s=args.timeout)
    print(f"wrote {done.folder}/: task.toml, reference.py, definition.json, workloads.jsonl")
    _print_imported(done.folder, done.notes)
    return 0


def _print_imported(folder: Path, notes: list[Any]) -> None:
    from .taskspec import load_spec

    spec = load_spec(folder)
    print(f"  abi        {spec.abi()}")
    print(f"  scenarios  {len(spec.scenarios)} ({len(spec.quick_ids)} quick)")
    for note in notes:
        print(f"  note       {note}")
    print(f"next: python -m gpu_harness task check {folder}")
    print(_how_the_dashboard_finds(folder))


def _task_folder(arg: str) -> str:
    """A task folder's path, or the folder of the task of that name where no such folder is here (as `eval` and
    `task cheats` take a name: `task check softmax_rows`); a task.toml's path stands for its folder. Neither a
    folder nor a task's name is a usage error naming the known tasks, not a missing `NAME/task.toml` (which would
    read as if the folder existed)."""
    from .tasks import task_folders

    if Path(arg).is_file() and Path(arg).name == "task.toml":
        return str(Path(arg).parent)
    if Path(arg, "task.toml").is_file():
        return arg
    named = task_folders().get(arg)
    if named is not None:
        return str(named)
    if Path(arg).is_dir():
        return arg  # a folder without task.toml: load_spec says so
    known = ", ".join(sorted(task_folders())) or "none"
    raise ValueError(f"{arg}: no such folder, and no task of that name; known tasks: {known}")  # main: exit 2


def cmd_task_check(args: argparse.Namespace) -> int:
    """Validate a task folder: the spec, then its reference and function baselines on the smallest scenario."""
    from .tasks import TaskError, folder_task
    from .taskspec import TaskSpecError, load_spec

    args.folder = _task_folder(args.folder)
    try:
        spec = load_spec(args.folder)
        torch_task = spec.target.arrays == "torch"
        task = folder_task(spec, device=_judge_device_here() if torch_task else None)
        runs_reference = not torch_task or _has_torch()
        if runs_reference and (missing := task.missing_functions()):
            raise TaskSpecError(missing)
        if runs_reference:  # torch's first import and a KernelBench model's first run take seconds: say so
            _progress(f"checking {spec.folder}: running the reference and the function baselines ...")
        facts = task.self_check() if runs_reference else None
    except TaskSpecError as e:
        print(f"{args.folder}: NOT a valid task ({len(e.problems)} problem(s))", file=sys.stderr)
        for p in e.problems:
            print(f"  {p}", file=sys.stderr)
        return 2
    except TaskError as e:
        print(f"{args.folder}: NOT a valid task: task error: {e}", file=sys.stderr)
        return 2
    spec = task.spec
    built = _check_kernels_build(task)
    if built is not None and built.startswith("error"):
        print(f"{args.folder}: NOT a valid task: {built}", file=sys.stderr)
        return 2
    print(f"{spec.folder}: OK, task {spec.name!r} ({spec.target.name}, {task.language})")
    if spec.description:
        print(f"  does       {spec.description}")
    print(f"  symbol     {task.abi}")
    print(f"  scenarios  {len(spec.scenarios)} ({len(spec.quick_ids)} quick)")
    described = (
        b.describe(spec.folder) if not b.description else f"{b.name} ({b.description})" for b in spec.baselines.values()
    )
    print(f"  baselines  {', '.join(described)}")
    print(f"             default: {', '.join(spec.default_baselines) or 'none'}")
    if spec.libraries:
        print(f"             libraries: {', '.join(spec.libraries)} (best_library: the fastest of them per scenario)")
    print(f"  tolerance  {spec.describe_tolerance()}")
    print(f"  goal       {spec.goal_speedup:g}x over {spec.goal_baseline}")
    print(f"  starting   {task.starting_kernel} ({built or 'not built'})")
    if spec.cheats:
        print(f"  cheats     {len(list(p for p in spec.cheats.iterdir() if p.is_file()))} in {spec.cheats}")
    if facts is None:
        print("  reference  NOT run: torch is not installed here (install it to check the reference)")
    else:
        print(f"  reference  ran on {facts['scenario']} ({facts['device']}): outputs of the right shape and dtype")
        for name, why in facts.get("refused", {}).items():  # may_refuse baselines that cannot run it here
            print(f"  refused    {name} on {facts['scenario']}: {why}")
    return 0


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _judge_device_here() -> str | None:
    """Where `task check` runs a cuda-sm90 task's reference: the GPU when there is one, else the CPU."""
    if not _has_torch():
        return None
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def cmd_task_cheats(args: argparse.Namespace) -> int:
    """Evaluate each kernel of the task's cheats folder: every one must be rejected for the reason its
    `expect: <reason>` line names (exit 0), else exit 1."""
    from .cheats import check_cheats

    outcomes = check_cheats(_task_name(args.task), scenarios=args.scenarios, timeout_s=args.timeout)
    for c in outcomes:
        print(f"{c.path.name}: {c.verdict}" + ("" if c.ok else f" (expected {c.expected!r}; got: {c.said[:300]})"))
    failed = sum(not c.ok for c in outcomes)
    print(f"{len(outcomes) - failed}/{len(outcomes)} cheats rejected for their reason")
    return 1 if failed else 0


def _check_kernels_build(task: DataTask) -> str | None:
    """Build the starting kernel and the kernel baselines as candidates are built (dependency checks
    included) and look for the task's symbol in each; None where the compiler is missing."""
    import ctypes
    import shutil

    from .build import build

    if shutil.which("g++" if task.language == "cpp" else "nvcc") is None:
        return None
    spec = task.spec
    # (a folder task has its starting kernel)
    kernels = [("the starting kernel", cast(Path, task.starting_kernel), "kernel.starting")]
    kernels += [(f"baseline {n}", b.kernel, f"baselines.{n}.kernel") for n, b in spec.baselines.items() if b.kernel]
    for label, path, where in kernels:
        line = spec.lines.get(where) if where != "kernel.starting" or spec.starting_kernel else None
        named = f", named at {spec.folder / 'task.toml'}:{line}: {where}" if line else ""
        _progress(f"building {label} ({Path(path).name}) ...")  # nvcc: up to half a minute, once (then cached)
        b = build(path, task.language)
        if not b.ok:
            return f"error: {label} ({path}{named}) does not build: {b.reason}"
        if not hasattr(ctypes.CDLL(b.lib_path, mode=ctypes.RTLD_LOCAL), task.symbol):
            return f"error: {label} ({path}{named}) does not export {task.symbol}"
    return f"builds and exports {task.symbol}" + (", as do the kernel baselines" if len(kernels) > 1 else "")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m gpu_harness", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("eval", help="judge a kernel: correctness on every scenario, then speed vs baselines")
    e.add_argument("task", help="a task's name, or a task folder")
    e.add_argument("kernel")
    e.add_argument("--scenarios", default="quick", help="quick | full | comma-separated scenario ids")
    e.add_argument(
        "--baselines",
        default=None,
        help="comma-separated; default: the task's defaults; best_library: every library of the task",
    )
    e.add_argument("--json", help="write EvalResult.to_dict() to this file")
    e.add_argument("--trace", help="append one JSON line for this evaluation to this file")
    e.add_argument("--note", help="a note stored with the trace line (needs --trace)")
    e.add_argument("--seed", type=int, default=None, help="default: fresh from os.urandom")
    e.add_argument("--timeout", type=_seconds, default=None, help="overall bound in seconds")
    e.add_argument("--arch", default=None, help="CUDA target, default sm_90a")
    e.add_argument("--no-timing", action="store_true", help="correctness only (no timing, no speedups)")
    e.set_defaults(func=cmd_eval)
    c = sub.add_parser("compile", help="build, report resources, run the dependency checks")
    c.add_argument("kernels", nargs="+")
    c.add_argument("--arch", default="sm_90a")
    c.add_argument("-v", "--verbose", action="store_true", help="print the compiler log on failure")
    c.set_defaults(func=cmd_compile)
    s = sub.add_parser("scenarios", help="list a task's scenarios")
    s.add_argument("task")
    s.add_argument("--quick", action="store_true")
    s.set_defaults(func=cmd_scenarios)
    t = sub.add_parser("tasks", help="list the tasks")
    t.set_defaults(func=cmd_tasks)
    k = sub.add_parser("task", help="write or check a task folder (docs/tasks.md)")
    ksub = k.add_subparsers(dest="task_cmd", required=True)
    n = ksub.add_parser("new", help="scaffold a commented task folder NAME (in --dir)")
    n.add_argument("name")
    n.add_argument("--dir", default=".", help="the folder to create it in (default: here)")
    n.add_argument("--target", default="cpu", help="cpu (a C++ kernel) or cuda-sm90 (a .cu kernel); default cpu")
    n.set_defaults(func=cmd_task_new)
    c = ksub.add_parser("check", help="validate a task folder (exit 0, or 2 with every problem found)")
    c.add_argument("folder", help="a task folder, or the name of a task found by name (`tasks` lists them)")
    c.set_defaults(func=cmd_task_check)
    kb = ksub.add_parser(
        "import-kernelbench",
        help="write a cuda-sm90 task folder from a KernelBench problem file, or a suite from a folder of them "
        "(docs/tasks.md)",
    )
    kb.add_argument(
        "file",
        help="the problem (class Model, get_inputs(), get_init_inputs()), or a folder of them (KernelBench/level1)",
    )
    kb.add_argument("--level", type=int, default=None, help="FILE is a KernelBench checkout: import its level N")
    kb.add_argument("--name", default=None, help="the task's name (default: from the file's name; one file only)")
    kb.add_argument(
        "--dir", default=None, help="the folder to create it in (default: here; a folder's: kernelbench_<folder>)"
    )
    kb.add_argument(
        "--timeout", type=_seconds, default=300.0, help="bound in seconds on running the problem (and its check)"
    )
    kb.add_argument("--jobs", type=_jobs, default=None, help="a folder's problems imported at a time (default: cores)")
    kb.set_defaults(func=cmd_task_import_kernelbench)
    for command, func, what in (
        ("import-gpumode", cmd_task_import_gpumode, "a gpu-mode problem folder (task.yml + reference.py)"),
        ("import-flashinfer", cmd_task_import_flashinfer, "a FlashInfer-Bench definition JSON (workloads beside it)"),
    ):
        im = ksub.add_parser(command, help=f"write a cuda-sm90 task folder from {what}, or a suite from a folder")
        im.add_argument("path", help=f"{what}, or a folder of them")
        im.add_argument("--name", default=None, help="the task's name (default: the problem's; one problem only)")
        im.add_argument(
            "--dir", default=None, help="the folder to create it in (default: here; a folder's: <format>_<folder>)"
        )
        im.add_argument(
            "--timeout", type=_seconds, default=300.0, help="bound in seconds on running the problem (and its check)"
        )
        im.add_argument(
            "--jobs", type=_jobs, default=None, help="a folder's problems imported at a time (default: cores)"
        )
        im.set_defaults(func=func)
    ch = ksub.add_parser("cheats", help="evaluate the task's cheats: each must be rejected for its reason")
    ch.add_argument("task", help="a task's name, or a task folder")
    ch.add_argument("--scenarios", default="quick", help="quick | full | comma-separated scenario ids")
    ch.add_argument("--timeout", type=_seconds, default=60.0, help="bound per cheat in seconds")
    ch.set_defaults(func=cmd_task_cheats)
    return ap


def main(argv: list[str] | None = None) -> int:
    # What this prints is often not the harness's own text (a kernel's compile errors, a task's or a problem's
    # files): a terminal is shown its control characters, never given them (gpu_harness/terminal.py).
    with shown_streams():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except ValueError as e:  # bad task name, scenario id, ...: a clear message, not a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
